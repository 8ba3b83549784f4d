/** Defaults of OperatorContext: the namespace of its Secret. */
import { asObject, metaOf } from './access.ts';
import { clone, defaultRefNamespace } from './defaults.ts';

/** A copy of `obj` with `secretRef.namespace` filled in. */
export function defaultOperatorContext(obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  defaultRefNamespace(asObject(out.spec)?.secretRef, metaOf(out).namespace);
  return out;
}
