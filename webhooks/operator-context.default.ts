/** Defaults of OperatorContext: the namespace of its Secret. */
import { asObject, metaOf } from './access.ts';
import { clone, defaultRefNamespace, EARLIER_SECRET, moveEarlierName } from './defaults.ts';

/** A copy of `obj` with `secretRef.namespace` filled in (the earlier `fromSecret` moved to it). */
export function defaultOperatorContext(obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  moveEarlierName(out, EARLIER_SECRET);
  defaultRefNamespace(asObject(out.spec)?.secretRef, metaOf(out).namespace);
  return out;
}
