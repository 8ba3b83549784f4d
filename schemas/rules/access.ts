/**
 * Rules of keys (sessions) and policies beyond their schemas, written once for every part that
 * checks them (the gateway's management API now; the webhooks and the operator for
 * SecurityPolicy once policies are reconciled). Beside validity (allowed URLs and endpoint paths
 * must compile, the limits follow rules/limits.ts, an HMAC key needs its secret), the
 * gateway refuses what it stores but cannot enforce yet: per-key JWT secrets. A setting the gateway stores, it enforces; one it can't is refused by
 * name, never stored and ignored.
 */
import type { AccessDefinition, GatewayPolicy, GatewaySession } from '../generated/models.ts';
import { FieldProblemType, quote, type FieldProblem } from './field-problem.ts';
import { limitVerdict } from './limits.ts';
import { regexProblem } from './values.ts';

/** A certificate ID: an organisation ID (may be empty) followed by a SHA-256 hex fingerprint. */
export const CERTIFICATE_ID = /^[A-Za-z0-9._~-]*[0-9a-fA-F]{64}$/;

const notYet = (path: string, what: string, fix: string): FieldProblem => ({
  path,
  type: FieldProblemType.NotSupported,
  message: `${what} are not enforced by this gateway yet: ${fix}`,
});

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
    if (ar.limit !== undefined) out.push(...limitVerdict(ar.limit, `${at}.limit.`).problems);
    (ar.endpoints ?? []).forEach((e, i) => {
      const problem = regexProblem(e.path);
      if (problem !== undefined) {
        out.push({ path: `${at}.endpoints[${i}].path`, type: FieldProblemType.Invalid, message: problem });
      }
    });
  }
  return out;
}

/** What is wrong with a policy, beyond its schema. */
export function checkPolicy(p: GatewayPolicy): FieldProblem[] {
  return [...limitVerdict(p).problems, ...accessProblems(p.access_rights, '')];
}

/** What is wrong with a key, beyond its schema. */
export function checkSession(s: GatewaySession): FieldProblem[] {
  const out = [...limitVerdict(s).problems, ...accessProblems(s.access_rights, '')];
  if (s.basic_auth_data !== undefined && (s.basic_auth_data.password ?? '') === '') {
    out.push({
      path: 'basic_auth_data.password',
      type: FieldProblemType.Required,
      message: 'a basic-auth user needs a password',
    });
  }
  if (s.jwt_data !== undefined) out.push(notYet('jwt_data', 'per-key JWT secrets', 'remove jwt_data'));
  if (s.hmac_enabled === true && (s.hmac_string ?? '') === '') {
    out.push({
      path: 'hmac_string',
      type: FieldProblemType.Required,
      message: 'an HMAC key needs its shared secret: set hmac_string (stored encrypted, never returned)',
    });
  }
  if ((s.certificate ?? '') !== '' && !CERTIFICATE_ID.test(s.certificate ?? '')) {
    out.push({
      path: 'certificate',
      type: FieldProblemType.Invalid,
      message: `${quote(s.certificate ?? '')} is not a certificate ID: give the ID POST /svc/certs answered (organisation ID followed by the certificate's SHA-256 hex)`,
    });
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
