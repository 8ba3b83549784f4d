/** Admission rules of SecurityPolicy, after its full schema. */
import type { SecurityPolicy } from '../schemas/generated/kinds.ts';
import { metaOf, specOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { accessRightRules, limitRules } from './access-rights.ts';
import { apisNamingPolicy, contextRefWarnings, deleteVerdict } from './references.ts';
import { schemaErrors } from './schema.ts';

const STATES = ['active', 'draft', 'deny'];

/** Validates a SecurityPolicy on create or update. */
export async function validateSecurityPolicy(
  obj: unknown,
  _old: unknown,
  lookups: Lookups,
): Promise<Verdict> {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const spec = specOf<SecurityPolicy>(obj);
  const { namespace } = metaOf(obj);

  const state = spec.state;
  if (typeof state === 'string' && !STATES.includes(state)) {
    errors.push(fe.notSupported('spec.state', `${quote(state)}: use active, draft or deny`));
  }
  limitRules(spec, 'spec', errors, warnings);

  await accessRightRules(spec.access_rights_array, 'spec.access_rights_array', 'policy', namespace, lookups, {
    errors,
    warnings,
  });

  warnings.push(...(await contextRefWarnings(obj, lookups)));
  return { errors: mergeErrors(schemaErrors('SecurityPolicy', obj), errors), warnings };
}

/** Refuses the DELETE of a policy that ApiDefinitions name in `jwt_default_policies`. */
export async function validateSecurityPolicyDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  const { namespace, name } = metaOf(old);
  return deleteVerdict(
    `SecurityPolicy ${namespace}/${name}`,
    await apisNamingPolicy(lookups, namespace, name),
    'remove it from the jwt_default_policies of these APIs (or delete them) first',
  );
}
