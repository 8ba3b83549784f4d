/**
 * Quota usage per key, from traffic analytics: for each key of the organisation with a quota, its
 * maximum and the requests analytics counted for it since its quota period began (the key's
 * `quota_renews` less its `quota_renewal_rate`; a key not yet renewed: the last
 * `quota_renewal_rate` seconds), read from the rollups (per minute within their retention, per
 * hour beyond). The gateways count quotas in their own store; this is what their analytics
 * records say, so it lags their counters by a batch (seconds) and counts the key's refused
 * requests too (an over-quota request is counted once, as the gateway refused it).
 */
import { callerOf, json, type Ctx, type Reply } from '../api/http.ts';
import type { Doc } from '../store/store.ts';
import { PERIODS } from './rollup.ts';

/** Keys read at most (the first ones of the organisation). */
const MAX_KEYS = 500;
/** Keys answered at most: the most used against their maximum first. */
const TOP = 20;

const num = (v: unknown, fallback: number): number =>
  typeof v === 'number' && Number.isFinite(v) ? v : fallback;

/**
 * The quota of a key as the gateway applies it: its policies' (the highest wins, -1 beating all,
 * gateway/sessions/apply-policies.ts) when it applies policies that set one, else its own.
 */
function quotaOf(key: Doc, policies: ReadonlyMap<string, Doc>): { max: number; renewal: number } {
  const own = { max: num(key.body.quota_max, -1), renewal: num(key.body.quota_renewal_rate, 0) };
  let best: { max: number; renewal: number } | undefined;
  const applied = Array.isArray(key.body.apply_policies) ? (key.body.apply_policies as unknown[]) : [];
  for (const id of applied) {
    const p = typeof id === 'string' ? policies.get(id) : undefined;
    if (p === undefined) continue;
    const parts = p.body.partitions as Record<string, unknown> | undefined;
    const partitioned =
      parts !== undefined && (parts.acl === true || parts.rate_limit === true || parts.quota === true);
    if (partitioned && parts.quota !== true) continue;
    const max = num(p.body.quota_max, -1);
    if (best === undefined || (best.max !== -1 && (max === -1 || max > best.max)))
      best = { max, renewal: num(p.body.quota_renewal_rate, 0) };
  }
  return best ?? own;
}

/**
 * `GET /api/analytics/quotas`: the caller's organisation's keys with a quota (`quota_max` above
 * 0), each `{key, alias, quota_max, used, period_start}`, the most used against its maximum first
 * (at most 20).
 */
export async function quotas(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const now = c.deps.now();
  const store = c.deps.store;
  const [keys, policies] = await Promise.all([
    store.list(org, 'keys', { limit: MAX_KEYS }),
    store.list(org, 'policies', { limit: MAX_KEYS }),
  ]);
  const byId = new Map(policies.items.map((p) => [p.id, p]));
  const out = [];
  for (const k of keys.items) {
    const q = quotaOf(k, byId);
    if (q.max <= 0) continue;
    const renews = num(k.body.quota_renews, 0) * 1000;
    const start =
      renews > 0 && renews - q.renewal * 1000 <= now ? renews - q.renewal * 1000 : now - q.renewal * 1000;
    const from = Math.max(start, now - 400 * 24 * 3_600_000);
    const period = now - from <= 48 * 3_600_000 ? 'minute' : 'hour';
    const step = PERIODS[period];
    const [g] = await store.analytics.sum(
      { org, period, from: Math.floor(from / step) * step, to: now + 1, name: k.id },
      'key',
      'name',
    );
    out.push({
      key: k.id,
      alias: typeof k.body.alias === 'string' ? k.body.alias : '',
      quota_max: q.max,
      used: Math.round(g?.requests ?? 0),
      period_start: from,
    });
  }
  out.sort((a, b) => b.used / b.quota_max - a.used / a.quota_max || (a.key < b.key ? -1 : 1));
  return json({ org_id: org, keys: out.slice(0, TOP) });
}
