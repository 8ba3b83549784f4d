/** Defaults of ApiDefinition: the namespaces of its references. */
import { defaultRefNamespace, eachObject, withContextDefaults } from './defaults.ts';

/** A copy of `obj` with `contextRef.namespace` and `jwt_default_policies[].namespace` filled in. */
export function defaultApiDefinition(obj: unknown): unknown {
  return withContextDefaults(obj, (spec, namespace) => {
    eachObject(spec.jwt_default_policies, (ref) => {
      defaultRefNamespace(ref, namespace);
    });
  });
}
