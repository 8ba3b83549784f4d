/** Admission rules of SecurityPolicy, after its full schema. */
import type { SecurityPolicy } from '../schemas/generated/kinds.ts';
import { asArray, asObject, asString, metaOf, specOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Verdict } from './field-error.ts';
import { API_KINDS } from './lookups.ts';
import type { ApiKind, Lookups } from './lookups.ts';
import { apisNamingPolicy, contextRefWarnings, deleteVerdict } from './references.ts';
import { schemaErrors } from './schema.ts';
import { limitVerdict } from '../schemas/rules/limits.ts';
import { regexProblem } from '../schemas/rules/values.ts';

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

  const seen = new Map<string, number>();
  const rights = asArray(spec.access_rights_array);
  for (const [i, r] of rights.entries()) {
    const right = asObject(r);
    if (right === undefined) continue;
    const base = `spec.access_rights_array[${i}]`;
    const limit = asObject(right.limit);
    if (limit !== undefined) limitRules(limit, `${base}.limit`, errors, warnings);
    for (const [j, u] of asArray(right.allowed_urls).entries()) {
      const url = asString(asObject(u)?.url);
      if (url === undefined) continue;
      const problem = regexProblem(url);
      if (problem !== undefined) errors.push(fe.invalid(`${base}.allowed_urls[${j}].url`, problem));
    }
    for (const [j, e] of asArray(right.endpoints).entries()) {
      const path = asString(asObject(e)?.path);
      const problem = path === undefined ? undefined : regexProblem(path);
      if (problem !== undefined) errors.push(fe.invalid(`${base}.endpoints[${j}].path`, problem));
    }

    const name = asString(right.name);
    const kind = asString(right.kind) ?? 'ApiDefinition';
    if (name === undefined || !isApiKind(kind)) continue; // the schema reports it
    const ns = asString(right.namespace) ?? namespace;
    const id = `${kind} ${ns}/${name}`;
    const first = seen.get(id);
    if (first !== undefined) {
      errors.push(
        fe.invalid(base, `duplicates access_rights_array[${first}] (${id}): merge the two entries`),
      );
      continue;
    }
    seen.set(id, i);
    if (kind !== 'ApiDefinition' && asArray(right.versions).includes('Default')) {
      warnings.push(
        `${base}.versions: ${kind} APIs name their default version "" (an empty string), not "Default"`,
      );
    }
    if ((await lookups.get(kind, ns, name)) === undefined) {
      warnings.push(`${base}: ${id} does not exist yet: the policy covers it once it is created`);
    }
  }

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

function isApiKind(kind: string): kind is ApiKind {
  return (API_KINDS as readonly string[]).includes(kind);
}

/** The limits rule (schemas/rules/limits.ts) at `base` (`spec`, `spec.access_rights_array[0].limit`). */
function limitRules(
  limits: Record<string, unknown>,
  base: string,
  errors: FieldError[],
  warnings: string[],
): void {
  const verdict = limitVerdict(limits, `${base}.`);
  errors.push(...verdict.problems);
  warnings.push(...verdict.warnings.map((w) => `${w.path}: ${w.message}`));
}
