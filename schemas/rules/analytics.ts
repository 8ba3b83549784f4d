/**
 * Traffic analytics between gateways in mode pro and the dashboard (`POST /system/analytics`):
 * the record a gateway writes for each request (gateway/analytics/) and the dashboard reads and
 * counts (dashboard/analytics/), with the reasons a record names for a refusal. One model for
 * both ends, so a field added on one side is read on the other.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { readAnalyticsDetail, type AnalyticsDetail } from './analytics-detail.ts';

/**
 * Why the gateway refused a request: authentication (401, or 403 for an unknown or inactive
 * key), access rights or allowed URLs (403), the IP lists (403), a rate limit (429), a quota
 * (403), anything else the gateway refused itself (a body too large, a plugin, a version).
 */
export const REFUSAL_REASONS = ['auth', 'access', 'ip', 'rate_limit', 'quota', 'other'] as const;
/** One of REFUSAL_REASONS. */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/**
 * One request, as the gateway sends it to the dashboard: a small flat record built when the
 * request is over. The path is a template (gateway/analytics/records.ts `pathTemplate`), never
 * the raw path.
 */
export interface AnalyticsRecord {
  /** Milliseconds since the epoch, when the request was over. */
  time: number;
  org_id: string;
  api_id: string;
  /** The version chosen for the request (`''`: the API's default). */
  api_version: string;
  /** The stored ID of the key (a hash, never the raw key); `''` for keyless requests. */
  key: string;
  /** The key's alias, when it has one. */
  alias: string;
  method: string;
  /** The path template. */
  path: string;
  /** The status the client got; 0 when the connection was cut first. */
  status: number;
  /** Milliseconds from routing to the end of the response. */
  latency_ms: number;
  /** Milliseconds from the upstream call to its response's head; 0 when no upstream answered. */
  upstream_latency_ms: number;
  /** The request's Content-Length (0 when it declared none). */
  request_bytes: number;
  /** The response's Content-Length (0 when it declared none). */
  response_bytes: number;
  /** Why the gateway refused the request; `''` when it did not. */
  refusal: RefusalReason | '';
  /** The bodies, for an API with `enable_detailed_recording` (analytics-detail.ts). */
  detail?: AnalyticsDetail;
}

function str(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function isRefusalReason(v: string): v is RefusalReason {
  return (REFUSAL_REASONS as readonly string[]).includes(v);
}

/**
 * The rules of each field of a record, as `readAnalyticsRecord` applies them, for the readers
 * of other shapes of a batch (analytics-batch.ts reads columns with them, each string once).
 */
export const FIELD_RULES = {
  /** `org_id`, `api_id`: undefined (the record is skipped) when not a string of 256 at most. */
  id: (v: unknown): string | undefined => str(v, 256),
  /** `api_version`, `key`, `alias`: `''` when not a string of 256 at most. */
  name: (v: unknown): string => str(v, 256) ?? '',
  /** Upper-cased; `OTHER` when not a string of 16 at most. */
  method: (v: unknown): string => (str(v, 16) ?? 'OTHER').toUpperCase(),
  /** `/` when not a string of 512 at most. */
  path: (v: unknown): string => str(v, 512) ?? '/',
  /** `''` when not one of REFUSAL_REASONS. */
  refusal: (v: unknown): RefusalReason | '' => {
    const refusal = str(v, 32) ?? '';
    return isRefusalReason(refusal) ? refusal : '';
  },
  /** `time`, `status`: undefined (the record is skipped) when not a finite number of 0 or more; else 0. */
  number: num,
} as const;

/**
 * A record of a batch as received, or undefined when it is not one (no time, organisation, API
 * or status). Other fields too long or of the wrong type read as empty (or 0); the method is
 * upper-cased (`OTHER` when missing), the path `/` when missing, an unknown refusal `''`.
 */
export function readAnalyticsRecord(v: unknown): AnalyticsRecord | undefined {
  if (!isPlainObject(v)) return undefined;
  const time = num(v.time);
  const org_id = FIELD_RULES.id(v.org_id);
  const api_id = FIELD_RULES.id(v.api_id);
  const status = num(v.status);
  if (time === undefined || org_id === undefined || api_id === undefined || status === undefined)
    return undefined;
  return {
    time,
    org_id,
    api_id,
    api_version: FIELD_RULES.name(v.api_version),
    key: FIELD_RULES.name(v.key),
    alias: FIELD_RULES.name(v.alias),
    method: FIELD_RULES.method(v.method),
    path: FIELD_RULES.path(v.path),
    status,
    latency_ms: num(v.latency_ms) ?? 0,
    upstream_latency_ms: num(v.upstream_latency_ms) ?? 0,
    request_bytes: num(v.request_bytes) ?? 0,
    response_bytes: num(v.response_bytes) ?? 0,
    refusal: FIELD_RULES.refusal(v.refusal),
    ...(v.detail === undefined ? {} : { detail: readAnalyticsDetail(v.detail) }),
  };
}
