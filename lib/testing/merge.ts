/** Builds test objects from a base and a patch (fixtures that differ in one nested field). */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `patch` merged into `base`: objects key by key, anything else replaced (undefined removes). */
export function merge(base: Json, patch: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const b = out[k];
    if (v === undefined) Reflect.deleteProperty(out, k);
    else if (isObject(v) && isObject(b)) out[k] = merge(b, v);
    else out[k] = v;
  }
  return out;
}
