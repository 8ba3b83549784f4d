/** Admission rules of OperatorContext, after its full schema. */
import { licenseKeyProblem } from '../schemas/rules/license.ts';
import type { OperatorContext } from '../schemas/generated/kinds.ts';
import { asObject, asString, metaOf, refOf, specOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Validator } from './field-error.ts';
import { contextUsers, refuseDeleteWhileUsed } from './references.ts';
import { schemaErrors } from './schema.ts';
import { EARLIER_SECRET, earlierNameProblems, effectiveSecretRef } from '../schemas/rules/earlier-names.ts';
import { urlProblem } from './values.ts';

/** Fields of `env` the operator needs, and the Secret key that may hold each instead. */
const NEEDED = [
  ['mode', 'SVC_MODE'],
  ['url', 'SVC_URL'],
  ['auth', 'SVC_AUTH'],
  ['org', 'SVC_ORG'],
] as const;

/** Validates an OperatorContext on create or update. */
export const validateOperatorContext: Validator = async (obj, _old, lookups) => {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const spec = specOf<OperatorContext>(obj);
  const env = asObject(spec.env);

  for (const p of earlierNameProblems(EARLIER_SECRET, spec, metaOf(obj).namespace))
    errors.push({ ...p, path: `spec.${p.path}` });
  if (env === undefined && effectiveSecretRef(spec) === undefined) {
    errors.push(
      fe.required('spec', 'set env (mode, url, auth, org), secretRef (a Secret with SVC_* keys), or both'),
    );
  }
  const mode = env?.mode;
  if (typeof mode === 'string' && mode !== 'ce' && mode !== 'pro') {
    errors.push(fe.notSupported('spec.env.mode', `${quote(mode)}: use ce (a gateway) or pro (a dashboard)`));
  }
  const licenseKey = env?.licenseKey;
  if (typeof licenseKey === 'string' && licenseKey !== '') {
    const problem = licenseKeyProblem(licenseKey);
    if (problem !== undefined) {
      errors.push(fe.invalid('spec.env.licenseKey', `${problem}: use the signed key you were given`));
    }
  }
  const url = env?.url;
  if (typeof url === 'string') {
    const problem = urlProblem(url, ['http:', 'https:'], 'http://svc-gateway.svc-system.svc:8080');
    if (problem !== undefined) errors.push(fe.invalid('spec.env.url', problem));
  }

  const ref = refOf(effectiveSecretRef(spec), metaOf(obj).namespace);
  let secretKeys: string[] | undefined;
  if (ref !== undefined) {
    secretKeys = await lookups.secretKeys(ref.namespace, ref.name);
    // Manifests are applied in any order: the context waits (Ready=False, SecretNotFound).
    if (secretKeys === undefined) {
      warnings.push(
        `spec.secretRef.name: Secret ${ref.namespace}/${ref.name} not found (yet): the context is not Ready until it exists (with keys such as SVC_AUTH and SVC_ORG)`,
      );
    }
  }

  if (asString(env?.auth) !== undefined) {
    warnings.push(
      'spec.env.auth: the API key is stored in the resource in plain text: move it to the Secret of secretRef as SVC_AUTH',
    );
  }
  if (errors.length === 0 && (ref === undefined || secretKeys !== undefined)) {
    const where = ref === undefined ? '' : ` nor as the key %s of Secret ${ref.namespace}/${ref.name}`;
    for (const [field, key] of NEEDED) {
      if (env?.[field] === undefined && !(secretKeys ?? []).includes(key)) {
        warnings.push(
          `spec.env.${field}: not set here${where.replace('%s', key)}: the context is incomplete`,
        );
      }
    }
    const effectiveMode = asString(env?.mode);
    if (
      effectiveMode === 'pro' &&
      env?.licenseKey === undefined &&
      !(secretKeys ?? []).includes('SVC_OPERATOR_LICENSEKEY')
    ) {
      warnings.push(
        `spec.env.licenseKey: mode pro needs a license key: set SVC_OPERATOR_LICENSEKEY in the Secret of secretRef`,
      );
    }
  }
  return { errors: mergeErrors(schemaErrors('OperatorContext', obj), errors), warnings };
};

/** Refuses the DELETE of an OperatorContext that resources still use. */
export const validateOperatorContextDelete = refuseDeleteWhileUsed(
  'OperatorContext',
  contextUsers,
  'point their contextRef at another context (or delete them) first',
);
