/**
 * Defaults of ApiKey: only the namespace of `contextRef`, as for the other kinds. `type`,
 * `secretRef.key` and `rotation.overlapSeconds` are defaulted by the CRD schema, so server-side
 * apply owns them consistently and a GitOps tool sees no diff.
 */
import { asObject } from './access.ts';
import { clone, defaultContextRef } from './defaults.ts';

/** A copy of `obj` with its contextRef defaulted. */
export function defaultApiKey(obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  defaultContextRef(out);
  return out;
}
