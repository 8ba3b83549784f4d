/** Admission rules of SecurityPolicy, after its full schema. */
import { asArray, asNumber, asObject, asString, at, metaOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Verdict } from './field-error.ts';
import { API_KINDS } from './lookups.ts';
import type { ApiKind, Lookups } from './lookups.ts';
import { apisNamingPolicy, contextRefWarnings, deleteVerdict } from './references.ts';
import { schemaErrors } from './schema.ts';
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
  const spec = asObject(at(obj, 'spec')) ?? {};
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

/**
 * Rate, throttle and quota rules of a policy or of one API's limit. An absent value counts as
 * -1 (disabled), like the CRD defaults of the policy root.
 */
function limitRules(
  limits: Record<string, unknown>,
  base: string,
  errors: FieldError[],
  warnings: string[],
): void {
  const value = (k: string): number => asNumber(limits[k]) ?? -1;
  const rate = value('rate');
  const per = value('per');
  if (rate === 0) {
    errors.push(
      fe.invalid(
        `${base}.rate`,
        'rate 0 allows no requests: set the requests allowed per `per` seconds, or -1 to disable rate limiting',
      ),
    );
  } else if (per === 0) {
    errors.push(
      fe.invalid(
        `${base}.per`,
        'per 0 is an empty window: set the window in seconds (such as 60), or -1 to disable rate limiting',
      ),
    );
  } else if (rate > 0 && per < 0) {
    errors.push(
      fe.invalid(
        `${base}.per`,
        `rate is ${rate} but per is ${per}: rate and per go together: set per to the window in seconds (such as 60), or set both to -1 to disable rate limiting`,
      ),
    );
  } else if (per > 0 && rate < 0) {
    errors.push(
      fe.invalid(
        `${base}.rate`,
        `per is ${per} but rate is ${rate}: rate and per go together: set rate to the requests allowed per window, or set both to -1 to disable rate limiting`,
      ),
    );
  }

  const interval = value('throttle_interval');
  const retries = value('throttle_retry_limit');
  if (interval > 0 && retries < 0) {
    errors.push(
      fe.invalid(
        `${base}.throttle_retry_limit`,
        `throttle_interval is ${interval} but throttle_retry_limit is ${retries}: throttling needs both above 0: set throttle_retry_limit (such as 3), or set both to -1 to disable throttling`,
      ),
    );
  } else if (retries > 0 && interval < 0) {
    errors.push(
      fe.invalid(
        `${base}.throttle_interval`,
        `throttle_retry_limit is ${retries} but throttle_interval is ${interval}: throttling needs both above 0: set throttle_interval in seconds (such as 1), or set both to -1 to disable throttling`,
      ),
    );
  }
  if (interval === 0) {
    warnings.push(
      `${base}.throttle_interval: 0 retries without waiting (busy waiting): set a positive interval in seconds, or -1 to disable throttling`,
    );
  }
  if (retries === 0) {
    warnings.push(
      `${base}.throttle_retry_limit: 0 turns throttling off: set a positive retry limit, or -1 to say so explicitly`,
    );
  }
  if (interval > 0 && retries > 0 && (rate < 0 || per < 0)) {
    warnings.push(
      `${base}: throttling applies only to requests over the rate limit, and the rate limit is disabled: set rate and per, or set the throttle values to -1`,
    );
  }

  const quotaMax = value('quota_max');
  const renewal = value('quota_renewal_rate');
  if (quotaMax === 0) {
    errors.push(
      fe.invalid(
        `${base}.quota_max`,
        'quota_max 0 allows no requests: set the requests allowed per period, or -1 for no quota',
      ),
    );
  } else if (quotaMax > 0 && renewal <= 0) {
    errors.push(
      fe.required(
        `${base}.quota_renewal_rate`,
        `quota_max is ${quotaMax} but quota_renewal_rate is ${renewal}: set the quota period in seconds (3600 hourly, 86400 daily, 2592000 for 30 days)`,
      ),
    );
  }
}
