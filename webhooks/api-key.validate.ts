/** Admission rules of ApiKey, after its full schema (schemas/rules/api-key.ts). */
import type { ApiKey, ApiKeySpec } from '../schemas/generated/kinds.ts';
import { apiKeyProblems } from '../schemas/rules/api-key.ts';
import { resolveRef } from '../schemas/rules/references.ts';
import { asArray, metaOf, specOf } from './access.ts';
import { mergeErrors, type FieldError, type Validator } from './field-error.ts';
import { contextRefWarnings } from './references.ts';
import { schemaErrors } from './schema.ts';
import { accessRightRules } from './access-rights.ts';

/**
 * Validates an ApiKey on create or update; its `accessRights` as a SecurityPolicy's
 * (access-rights.ts). A policy, API or Secret that does not exist yet is a warning, never a
 * refusal: objects may come in any order.
 */
export const validateApiKey: Validator = async (obj, _old, lookups) => {
  const schema = schemaErrors('ApiKey', obj);
  const warnings: string[] = [];
  const errors: FieldError[] = [];
  if (schema.length === 0) {
    const spec = specOf<ApiKey>(obj) as ApiKeySpec;
    errors.push(...apiKeyProblems(spec).map((p) => ({ ...p, path: `spec.${p.path}` })));
    const { namespace } = metaOf(obj);
    for (const [i, r] of asArray(spec.policies).entries()) {
      const ref = resolveRef(r, namespace);
      if (ref === undefined) continue;
      if ((await lookups.get('SecurityPolicy', ref.namespace, ref.name)) === undefined) {
        warnings.push(
          `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: the key is created once it does`,
        );
      }
    }
    await accessRightRules(spec.accessRights, 'spec.accessRights', 'key', namespace, lookups, {
      errors,
      warnings,
    });
    warnings.push(...(await contextRefWarnings(obj, lookups)));
  }
  return { errors: mergeErrors(schema, errors), warnings };
};
