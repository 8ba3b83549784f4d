/** Defaults of ApiDefinition: the namespaces of its references. */
import { asObject, metaOf } from './access.ts';
import { clone, defaultContextRef, moveEarlierName, defaultRefNamespace, eachObject } from './defaults.ts';

/** A copy of `obj` with `contextRef.namespace` and `jwt_default_policies[].namespace` filled in. */
export function defaultApiDefinition(obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  moveEarlierName(out);
  defaultContextRef(out);
  const { namespace } = metaOf(out);
  eachObject(asObject(out.spec)?.jwt_default_policies, (ref) => {
    defaultRefNamespace(ref, namespace);
  });
  return out;
}
