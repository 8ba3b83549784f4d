/**
 * One request as analytics sees it: a small flat record (time, organisation, API and version,
 * key, method, path template, status, latencies, sizes, why it was refused), made from what
 * record-buffer.ts kept of the request when its batch is sent. The path is a template, never
 * the raw path: segments that look like IDs (numbers, UUIDs, long hex or mixed letters and
 * digits) become `{id}`, and an API's `track_endpoints` entry names the requests it matches, so
 * a month of traffic on `/users/12345` is one endpoint, and no client can create endpoints at
 * will.
 */
import type { RefusalReason } from '../../schemas/rules/analytics.ts';
import type { RequestContext } from '../pipeline/context.ts';

/** The refusal of each error code (pipeline/errors.ts); codes not named here are not refusals. */
const BY_CODE: Readonly<Record<string, RefusalReason>> = {
  GW_ERR_AUTH_FIELD_MISSING: 'auth',
  GW_ERR_AUTH_MALFORMED: 'auth',
  GW_ERR_USER_NOT_AUTHORISED: 'auth',
  GW_ERR_KEY_INACTIVE: 'auth',
  GW_ERR_KEY_EXPIRED: 'auth',
  GW_ERR_JWT_EXPIRED: 'auth',
  GW_ERR_JWT_INVALID: 'auth',
  GW_ERR_JWT_ISSUED_IN_FUTURE: 'auth',
  GW_ERR_JWT_NOT_YET_VALID: 'auth',
  GW_ERR_JWT_NO_IDENTITY: 'auth',
  GW_ERR_JWT_NO_POLICY: 'auth',
  GW_ERR_SIGNATURE_INVALID: 'auth',
  GW_ERR_HMAC_INVALID: 'auth',
  GW_ERR_RESOURCE_DISALLOWED: 'access',
  GW_ERR_ENDPOINT_FORBIDDEN: 'access',
  GW_ERR_IP_DISALLOWED: 'ip',
  GW_ERR_RATE_LIMIT_EXCEEDED: 'rate_limit',
  GW_ERR_API_RATE_LIMIT_EXCEEDED: 'rate_limit',
  GW_ERR_QUOTA_EXCEEDED: 'quota',
  GW_ERR_ORG_QUOTA_EXCEEDED: 'quota',
  GW_ERR_BODY_TOO_LARGE: 'other',
  GW_ERR_PLUGIN_REFUSED: 'other',
  GW_ERR_VERSION_EXPIRED: 'other',
  GW_ERR_VERSION_NOT_FOUND: 'other',
  GW_ERR_VERSION_UNKNOWN: 'other',
};

/** Why the request was refused, from its first refusal. */
export function refusalOf(ctx: RequestContext): RefusalReason | '' {
  const code = ctx.refusal?.rejected.code;
  if (code === undefined) return '';
  // An unknown key and a known key outside its access rights share one answer (403 `Access to
  // this API has been disallowed`): a session tells them apart.
  if (code === 'GW_ERR_ACCESS_DISALLOWED') return ctx.session === undefined ? 'auth' : 'access';
  return BY_CODE[code] ?? '';
}

const ID_SEGMENT =
  /^(?:\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|(?=[^/]*\d)[A-Za-z0-9_-]{12,})$/i;
/** Segments kept in a template; the rest become one `{...}`. */
const MAX_SEGMENTS = 8;
const MAX_SEGMENT_LENGTH = 64;

/** The template of a request path (see the module comment). */
export function pathTemplate(path: string): string {
  const parts = path.split('/');
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    if (i > MAX_SEGMENTS) {
      out.push('{...}');
      break;
    }
    const s = parts[i] ?? '';
    out.push(ID_SEGMENT.test(s) ? '{id}' : s.length > MAX_SEGMENT_LENGTH ? '{long}' : s);
  }
  return out.join('/') || '/';
}
