/** Builds test objects from a base and a patch (fixtures that differ in one nested field). */
import { isPlainObject } from '../plain-object.ts';

type Json = Record<string, unknown>;

/** `patch` merged into `base`: objects key by key, anything else replaced (undefined removes). */
export function merge(base: Json, patch: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const b = out[k];
    if (v === undefined) Reflect.deleteProperty(out, k);
    else if (isPlainObject(v) && isPlainObject(b)) out[k] = merge(b, v);
    else out[k] = v;
  }
  return out;
}
