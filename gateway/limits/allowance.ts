/**
 * Which limits a session has on an API: the per-API `limit` of its access right when set (with
 * counters of their own, scoped to the API), else the session's root values (after policies).
 */
import type { GatewaySession } from '../../schemas/generated/models.ts';

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
}

/** Allowances worked out per (cached, immutable) session object and API. */
const memo = new WeakMap<GatewaySession, Map<string, Allowance>>();

/**
 * The allowance of `session` on `apiId`. Sessions come from the per-process cache and are not
 * changed once applied, so the result is kept per session object: a warm key costs a lookup.
 */
export function allowanceOf(session: GatewaySession, apiId: string): Allowance {
  let perApi = memo.get(session);
  if (perApi === undefined) {
    perApi = new Map();
    memo.set(session, perApi);
  }
  let a = perApi.get(apiId);
  if (a === undefined) {
    a = computeAllowance(session, apiId);
    perApi.set(apiId, a);
  }
  return a;
}

function computeAllowance(session: GatewaySession, apiId: string): Allowance {
  const limit = session.access_rights?.[apiId]?.limit;
  const src = limit ?? session;
  return {
    scope: limit === undefined ? undefined : apiId,
    rate: src.rate ?? 0,
    per: src.per ?? 0,
    throttleInterval: src.throttle_interval ?? -1,
    throttleRetryLimit: src.throttle_retry_limit ?? -1,
    quotaMax: src.quota_max ?? -1,
    quotaRenewalRate: src.quota_renewal_rate ?? 0,
  };
}

/** A rate limit is on when both values are above 0 (-1 or 0 disables it). */
export function rateLimited(a: Pick<Allowance, 'rate' | 'per'>): boolean {
  return a.rate > 0 && a.per > 0;
}

/** Throttling is on only when both values are above 0. */
export function throttled(a: Pick<Allowance, 'throttleInterval' | 'throttleRetryLimit'>): boolean {
  return a.throttleInterval > 0 && a.throttleRetryLimit > 0;
}

/** A quota is on when `quota_max` is above 0 (-1 is unlimited) and the period is set. */
export function quotaLimited(a: Pick<Allowance, 'quotaMax' | 'quotaRenewalRate'>): boolean {
  return a.quotaMax > 0 && a.quotaRenewalRate > 0;
}

/**
 * Whether the request that brought a quota's use to `used` crossed `percent` of `max` (the
 * `TriggerExceeded` monitor fires once per period, at the crossing).
 */
export function crossedTrigger(used: number, max: number, percent: number): boolean {
  const threshold = (max * percent) / 100;
  return used - 1 < threshold && used >= threshold;
}
