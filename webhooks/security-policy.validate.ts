/** Admission rules of SecurityPolicy, after its full schema. */
import type { SecurityPolicy } from '../schemas/generated/kinds.ts';
import { metaOf, specOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Validator } from './field-error.ts';
import { accessRightRules, limitRules } from './access-rights.ts';
import { apisNamingPolicy, contextRefWarnings, refuseDeleteWhileUsed } from './references.ts';
import { schemaErrors } from './schema.ts';
import { EARLIER_CONTEXT, earlierNameProblems } from '../schemas/rules/earlier-names.ts';

const STATES = ['active', 'draft', 'deny'];

/** Validates a SecurityPolicy on create or update. */
export const validateSecurityPolicy: Validator = async (obj, _old, lookups) => {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const spec = specOf<SecurityPolicy>(obj);
  const { namespace } = metaOf(obj);

  const state = spec.state;
  if (typeof state === 'string' && !STATES.includes(state)) {
    errors.push(fe.notSupported('spec.state', `${quote(state)}: use active, draft or deny`));
  }
  limitRules(spec, 'spec', errors, warnings);
  for (const p of earlierNameProblems(EARLIER_CONTEXT, spec, namespace))
    errors.push({ ...p, path: `spec.${p.path}` });

  await accessRightRules(spec.access_rights_array, 'spec.access_rights_array', 'policy', namespace, lookups, {
    errors,
    warnings,
  });

  warnings.push(...(await contextRefWarnings(obj, lookups)));
  return { errors: mergeErrors(schemaErrors('SecurityPolicy', obj), errors), warnings };
};

/** Refuses the DELETE of a policy that ApiDefinitions name in `jwt_default_policies`. */
export const validateSecurityPolicyDelete = refuseDeleteWhileUsed(
  'SecurityPolicy',
  apisNamingPolicy,
  'remove it from the jwt_default_policies of these APIs (or delete them) first',
);
