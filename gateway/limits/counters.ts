/**
 * Where limits count: rate limits as sliding windows, quotas as fixed periods. Kept apart from
 * the document store (APIs, policies, keys): counters are many, small and hot, and each check is
 * one atomic operation of the backing (a Lua script in Redis), so several gateway nodes on one
 * Redis enforce one limit exactly. Implementations: memory (one process), Redis (every node),
 * and, for `--workers > 1` on the files store, the primary's memory reached over IPC (relay.ts).
 */
import type { GatewaySession } from '../../schemas/generated/models.ts';

/** The outcome of a sliding-window check. */
export interface RateVerdict {
  /** True when the request fits; it is then counted. Refused requests are not counted. */
  allowed: boolean;
  /** Requests left in the window after this one (0 when refused). */
  remaining: number;
  /** Milliseconds until the oldest counted request leaves the window (a slot frees). */
  resetMs: number;
}

/** A quota counter after an increment, or as it stands. */
export interface QuotaUse {
  /** Requests counted in the current period (this one included). */
  used: number;
  /** Milliseconds until the period ends. */
  ttlMs: number;
}

/** A sliding-window check: `limit` requests per `windowMs` under `name`. */
export interface RateCheck {
  name: string;
  limit: number;
  windowMs: number;
}

/** A quota count: one request in the current period of `name` (see Counters.quota). */
export interface QuotaCount {
  name: string;
  group: string;
  periodMs: number;
}

/** The outcome of `rateThenQuota`: the quota is counted only when the rate check admits. */
export interface RateQuotaVerdict {
  rate: RateVerdict;
  quota: QuotaUse | undefined;
}

/** Where limits count. */
export interface Counters {
  /** `memory`, `redis`, or `relay` (the primary's memory, for cluster workers). */
  readonly kind: 'memory' | 'redis' | 'relay';
  /**
   * Sliding window: admits the request when fewer than `limit` were admitted in the last
   * `windowMs` milliseconds, and records it; check and record are one atomic step.
   */
  rate(name: string, limit: number, windowMs: number): Promise<RateVerdict>;
  /**
   * Quota: counts one request in the current period of `name`; a missing or expired counter
   * starts a period of `periodMs` at 1 (fixed, not sliding). `group` names the key it belongs to,
   * so `resetGroup` can reset all of that key's scopes.
   */
  quota(name: string, group: string, periodMs: number): Promise<QuotaUse>;
  /**
   * A key's rate check and, when it admits the request, its quota count, as one atomic step: on
   * Redis one round trip instead of two (the chain's rate-limit step counts the quota for the
   * quota step when both apply; see middleware/rate-limit).
   */
  rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict>;
  /**
   * What `rate` would answer now, without recording anything (`kubectl svc explain`'s dry run):
   * `remaining` is what would be left after this request.
   */
  peekRate(name: string, limit: number, windowMs: number): Promise<RateVerdict>;
  /** The quota counter as it stands, or undefined when no period runs. */
  peekQuota(name: string): Promise<QuotaUse | undefined>;
  /** Ends the current period of one quota counter: the next request starts a new one. */
  resetQuota(name: string): Promise<void>;
  /** Ends the current period of every quota counter of a group (a key). */
  resetGroup(group: string): Promise<void>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}

/**
 * The group an organisation's quota counter belongs to: the org-quota middleware counts in it,
 * `/svc/org/keys/{org_id}?reset_quota=1` resets it.
 */
export const orgGroup = (orgId: string): string => `org:${orgId}`;

/**
 * The ID a key's counters (rate, quota, per-endpoint, and the quota's reset group) are kept
 * under: its `counter_id` when set, so that keys sharing one count against one allowance (both
 * values of a rotated ApiKey), else the key's stored ID.
 */
export const counterIdOf = (keyId: string, session: Pick<GatewaySession, 'counter_id'>): string =>
  session.counter_id === undefined || session.counter_id === '' ? keyId : session.counter_id;

/** The names counters are kept under, in one place. */
export const counterName = {
  /** The API-wide rate limit of an API. */
  api: (apiId: string): string => `api:${apiId}`,
  /** A key's rate limit, per API when the allowance is per API. */
  rate: (keyId: string, apiId?: string): string =>
    apiId === undefined ? `rl:${keyId}` : `rl:${keyId}:${apiId}`,
  /** A key's quota, per API when the allowance is per API. */
  quota: (keyId: string, apiId?: string): string =>
    apiId === undefined ? `q:${keyId}` : `q:${keyId}:${apiId}`,
  /** A per-endpoint rate limit of a key. */
  endpoint: (keyId: string, apiId: string, method: string, path: string): string =>
    `ep:${keyId}:${apiId}:${method} ${path}`,
  /** An organisation's quota. */
  org: (orgId: string): string => `org:${orgId}`,
} as const;

/** A dry-run verdict from the requests in the window (`count`): as if one more came now. */
export function peekVerdict(count: number, limit: number, resetMs: number): RateVerdict {
  const allowed = count < limit;
  return { allowed, remaining: Math.max(0, limit - count - (allowed ? 1 : 0)), resetMs };
}
