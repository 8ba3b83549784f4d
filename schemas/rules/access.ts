/**
 * Rules of keys (sessions) and policies beyond their schemas, written once for every part that
 * checks them (the gateway's management API now; the webhooks and the operator for
 * SecurityPolicy once policies are reconciled). Beside validity (allowed URLs must compile), the
 * gateway refuses what it stores but cannot enforce yet: rate limits, throttling, quotas,
 * per-endpoint limits, key lifetimes from policies, JWT, HMAC and certificate keys. A setting the
 * gateway stores, it enforces; one it can't is refused by name, never stored and ignored.
 */
import type { AccessDefinition, GatewayPolicy, GatewaySession } from '../generated/models.ts';
import { FieldProblemType, quote, type FieldProblem } from './field-problem.ts';
import { regexProblem } from './values.ts';

const notYet = (path: string, what: string, fix: string): FieldProblem => ({
  path,
  type: FieldProblemType.NotSupported,
  message: `${what} are not enforced by this gateway yet: ${fix}`,
});

type Limits = Partial<
  Record<'rate' | 'per' | 'throttle_interval' | 'throttle_retry_limit' | 'quota_max', number>
>;

/**
 * Limits that are on: a rate limit when `rate` and `per` are above 0, throttling when both
 * throttle values are, a quota when `quota_max` is (-1 is unlimited; 0, unset). The field that
 * turns each on is named.
 */
function limitProblems(obj: Limits, base: string): FieldProblem[] {
  const on = (v: number | undefined): boolean => v !== undefined && v > 0;
  const out: FieldProblem[] = [];
  if (on(obj.rate) && on(obj.per)) {
    out.push(notYet(`${base}rate`, 'rate limits', 'set rate to -1 (disabled) or remove it'));
  }
  if (on(obj.throttle_interval) && on(obj.throttle_retry_limit)) {
    out.push(
      notYet(
        `${base}throttle_interval`,
        'throttling settings',
        'set throttle_interval to -1 (disabled) or remove it',
      ),
    );
  }
  if (on(obj.quota_max)) {
    out.push(notYet(`${base}quota_max`, 'request quotas', 'set quota_max to -1 (unlimited) or remove it'));
  }
  return out;
}

function accessProblems(rights: Record<string, AccessDefinition> | undefined, base: string): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const [apiId, ar] of Object.entries(rights ?? {})) {
    const at = `${base}access_rights[${quote(apiId)}]`;
    if (ar.api_id !== apiId) {
      out.push({
        path: `${at}.api_id`,
        type: FieldProblemType.Invalid,
        message: `${quote(ar.api_id)} differs from the key it is listed under (${quote(apiId)}): list each API under its own ID`,
      });
    }
    (ar.allowed_urls ?? []).forEach((u, i) => {
      const problem = regexProblem(u.url);
      if (problem !== undefined) {
        out.push({ path: `${at}.allowed_urls[${i}].url`, type: FieldProblemType.Invalid, message: problem });
      }
    });
    if (ar.limit !== undefined) out.push(...limitProblems(ar.limit, `${at}.limit.`));
    if ((ar.endpoints ?? []).length > 0) {
      out.push(notYet(`${at}.endpoints`, 'per-endpoint rate limits', 'remove endpoints'));
    }
  }
  return out;
}

/** What is wrong with a policy, beyond its schema. */
export function checkPolicy(p: GatewayPolicy): FieldProblem[] {
  const out = [...limitProblems(p, ''), ...accessProblems(p.access_rights, '')];
  if (p.hmac_enabled === true)
    out.push(notYet('hmac_enabled', 'HMAC-signed requests', 'set hmac_enabled to false'));
  if ((p.max_query_depth ?? 0) > 0) {
    out.push(
      notYet('max_query_depth', 'GraphQL query depth limits', 'set max_query_depth to -1 or remove it'),
    );
  }
  if ((p.key_expires_in ?? 0) > 0) {
    out.push(notYet('key_expires_in', 'key lifetimes set by policies', 'set expires on the key instead'));
  }
  return out;
}

/** What is wrong with a key, beyond its schema. */
export function checkSession(s: GatewaySession): FieldProblem[] {
  const out = [...limitProblems(s, ''), ...accessProblems(s.access_rights, '')];
  if (s.basic_auth_data !== undefined && (s.basic_auth_data.password ?? '') === '') {
    out.push({
      path: 'basic_auth_data.password',
      type: FieldProblemType.Required,
      message: 'a basic-auth user needs a password',
    });
  }
  if (s.jwt_data !== undefined) out.push(notYet('jwt_data', 'per-key JWT secrets', 'remove jwt_data'));
  if (s.hmac_enabled === true)
    out.push(notYet('hmac_enabled', 'HMAC-signed requests', 'set hmac_enabled to false'));
  if ((s.certificate ?? '') !== '') {
    out.push(notYet('certificate', 'keys bound to client certificates', 'remove certificate'));
  }
  if (s.enable_detailed_recording === true) {
    out.push(
      notYet(
        'enable_detailed_recording',
        'detailed analytics records',
        'set enable_detailed_recording to false',
      ),
    );
  }
  return out;
}
