/**
 * Which limits a session has on an API: the per-API `limit` of its access right when set (with
 * counters of their own, scoped to the API), else the session's root values (after policies).
 * What the values mean is schemas/rules/limits.ts, the rule every write path applies: -1 (or
 * absent) is off, and values the rule refuses (0, a rate without its window, a quota without its
 * period), found in a store anyway, allow no requests rather than no limit.
 */
import type { GatewayApiDefinition, GatewaySession } from '../../schemas/generated/models.ts';
import { limitModes, limitValue, type LimitModes } from '../../schemas/rules/limits.ts';
import { keptFor } from '../pipeline/keep.ts';

/**
 * Whether an API counts its keys' quotas: not keyless, `disable_quota` off. The quota middleware
 * runs on such APIs, and the rate-limit middleware counts the quota with its rate check there (one
 * round trip for both).
 */
export function countsQuota(api: GatewayApiDefinition): boolean {
  return api.use_keyless !== true && api.disable_quota !== true;
}

/** The limits of one session on one API. */
export interface Allowance {
  /** The API ID when the allowance is per API (its counters are scoped to it), else undefined. */
  scope: string | undefined;
  rate: number;
  per: number;
  throttleInterval: number;
  throttleRetryLimit: number;
  quotaMax: number;
  quotaRenewalRate: number;
  /** Whether each limit counts, is off, or refuses every request (schemas/rules/limits.ts). */
  modes: LimitModes;
}

/** Allowances worked out per (cached, immutable) session object and API. */
const memo = new WeakMap<GatewaySession, Map<string, Allowance>>();

/**
 * The allowance of `session` on `apiId`. Sessions come from the per-process cache and are not
 * changed once applied, so the result is kept per session object: a warm key costs a lookup.
 */
export function allowanceOf(session: GatewaySession, apiId: string): Allowance {
  const perApi = keptFor(memo, session, () => new Map<string, Allowance>());
  return keptFor(perApi, apiId, () => computeAllowance(session, apiId));
}

function computeAllowance(session: GatewaySession, apiId: string): Allowance {
  const limit = session.access_rights?.[apiId]?.limit;
  const src = limit ?? session;
  return {
    scope: limit === undefined ? undefined : apiId,
    rate: limitValue(src, 'rate'),
    per: limitValue(src, 'per'),
    throttleInterval: limitValue(src, 'throttle_interval'),
    throttleRetryLimit: limitValue(src, 'throttle_retry_limit'),
    quotaMax: limitValue(src, 'quota_max'),
    quotaRenewalRate: limitValue(src, 'quota_renewal_rate'),
    modes: limitModes(src),
  };
}

/** Whether the rate limit counts (`closed`: it refuses every request; see the module comment). */
export function rateLimited(a: Pick<Allowance, 'modes'>): boolean {
  return a.modes.rate !== 'off';
}

/** Throttling is on only when both values are above 0 and the rate limit counts. */
export function throttled(a: Pick<Allowance, 'modes'>): boolean {
  return a.modes.throttle;
}

/** Whether the quota counts (`closed`: it refuses every request; see the module comment). */
export function quotaLimited(a: Pick<Allowance, 'modes'>): boolean {
  return a.modes.quota !== 'off';
}

/**
 * Whether the request that brought a quota's use to `used` crossed `percent` of `max` (the
 * `TriggerExceeded` monitor fires once per period, at the crossing).
 */
export function crossedTrigger(used: number, max: number, percent: number): boolean {
  const threshold = (max * percent) / 100;
  return used - 1 < threshold && used >= threshold;
}
