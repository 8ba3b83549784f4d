/**
 * Defaults of SecurityPolicy access rights: `kind` is ApiDefinition, `namespace` the policy's,
 * and `versions` the default version of the kind (`Default` classic and HTTPRoute, `""` OAS and
 * streams).
 */
import { asString } from './access.ts';
import { eachObject, withContextDefaults } from './defaults.ts';
import { defaultApiVersion } from '../schemas/kinds/security-policy.ts';

// An HTTPRoute's rights apply to the classic ApiDefinitions generated for it: `Default`.
const defaultVersion: Readonly<Record<string, string>> = { ...defaultApiVersion, HTTPRoute: 'Default' };

/** A copy of `obj` with its access rights and contextRef defaulted. */
export function defaultSecurityPolicy(obj: unknown): unknown {
  return withContextDefaults(obj, (spec, namespace) => {
    eachObject(spec.access_rights_array, (right) => {
      right.kind ??= 'ApiDefinition';
      right.namespace ??= namespace;
      const version = defaultVersion[asString(right.kind) ?? ''];
      if (right.versions === undefined && version !== undefined) right.versions = [version];
    });
  });
}
