/**
 * `middleware.global` of the extension: IP lists, the API-wide rate limit and switches, CORS and
 * the API cache, as the classic fields of the same settings.
 */
import { parseDuration } from '../../lib/duration.ts';
import { quote } from '../rules/field-problem.ts';
import { EXT, type Conversion, type Part } from './document.ts';

/** Where the API-wide middleware is configured. */
export const GLOBAL: readonly Part[] = [EXT, 'middleware', 'global'];

/** A duration as Go writes it (`1m30s`, every Go unit), in milliseconds; undefined when it is not one. */
export { parseDuration };

/** The API-wide switches of `middleware.global` and the classic fields the gateway enforces. */
const SKIPS = [
  ['skipRateLimit', 'disable_rate_limit'],
  ['skipQuota', 'disable_quota'],
  ['skipQuotaReset', 'dont_set_quota_on_create'],
] as const;

/** `middleware.global`: IP allow and block lists, the API-wide switches, the API rate limit. */
export function readGlobalMiddleware(c: Conversion): void {
  const lists = [
    ['ipAllowList', 'allow', 'enable_ip_whitelisting', 'allowed_ips'],
    ['ipBlockList', 'block', 'enable_ip_blacklisting', 'blacklisted_ips'],
  ] as const;
  for (const [name, entries, flag, field] of lists) {
    const at = [...GLOBAL, name];
    if (!c.enabled(at)) continue;
    c.set(flag, true, [...at, 'enabled']);
    c.copy(field, [...at, entries]);
  }
  c.copyAll(GLOBAL, SKIPS);
  const at = [...GLOBAL, 'rateLimit'];
  if (!c.enabled(at)) return;
  const rate = c.take([...at, 'rate']);
  if (rate === undefined) {
    c.problem(
      [...at, 'rate'],
      'Required',
      'set rate to the requests allowed per window, or set enabled to false',
    );
  }
  c.set('global_rate_limit.rate', rate, [...at, 'rate']);
  const per = c.take([...at, 'per']);
  // The classic field comes from here even when it can't be filled (its problems map back).
  c.set('global_rate_limit.per', undefined, [...at, 'per']);
  if (per === undefined) {
    c.problem([...at, 'per'], 'Required', 'set per to the window, such as 1s or 1m, or set enabled to false');
    return;
  }
  if (typeof per !== 'string') {
    c.set('global_rate_limit.per', per, [...at, 'per']);
    return;
  }
  const ms = parseDuration(per);
  if (ms === undefined || ms <= 0 || ms % 1000 !== 0) {
    c.problem(
      [...at, 'per'],
      'Invalid',
      `${quote(per)} is not a duration of whole seconds: write one such as 1s, 30s, 1m or 1h30m`,
    );
    return;
  }
  c.set('global_rate_limit.per', ms / 1000, [...at, 'per']);
}

const CORS_FIELDS = [
  ['allowedOrigins', 'CORS.allowed_origins'],
  ['allowedMethods', 'CORS.allowed_methods'],
  ['allowedHeaders', 'CORS.allowed_headers'],
  ['exposedHeaders', 'CORS.exposed_headers'],
  ['allowCredentials', 'CORS.allow_credentials'],
  ['maxAge', 'CORS.max_age'],
  ['optionsPassthrough', 'CORS.options_passthrough'],
  ['debug', 'CORS.debug'],
] as const;

const CACHE_FIELDS = [
  ['timeout', 'cache_options.cache_timeout'],
  ['cacheAllSafeRequests', 'cache_options.cache_all_safe_requests'],
  ['cacheResponseCodes', 'cache_options.cache_response_codes'],
  ['cacheByHeaders', 'cache_options.cache_by_headers'],
  ['enableUpstreamCacheControl', 'cache_options.enable_upstream_cache_control'],
  ['controlTTLHeaderName', 'cache_options.cache_control_ttl_header'],
] as const;

/** `middleware.global.cors` and `.cache`: the classic `CORS` and `cache_options`. */
export function readGlobalCorsAndCache(c: Conversion): void {
  const cors = [...GLOBAL, 'cors'];
  if (c.enabled(cors)) {
    c.set('CORS.enable', true, [...cors, 'enabled']);
    c.copyAll(cors, CORS_FIELDS);
  }
  const cache = [...GLOBAL, 'cache'];
  if (c.enabled(cache)) {
    c.set('cache_options.enable_cache', true, [...cache, 'enabled']);
    c.copyAll(cache, CACHE_FIELDS);
  }
}
