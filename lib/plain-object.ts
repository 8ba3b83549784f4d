/**
 * Whether `v` is a JSON object: an object that is neither null nor a list (what JSON.parse and a
 * YAML parser return for `{...}`). The one such check of the project: a model, a body or a
 * document is read through it before its fields are.
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `v` when it is a JSON object (`isPlainObject`), else undefined: for reading nested fields. */
export function asPlainObject(v: unknown): Record<string, unknown> | undefined {
  return isPlainObject(v) ? v : undefined;
}
