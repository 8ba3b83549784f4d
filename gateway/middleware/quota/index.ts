/**
 * The key's quota (the seed's "Quota counter" table and quota rules): a fixed period of
 * `quota_renewal_rate` seconds starting at the first request and renewed only by the next
 * request after it ends; beyond `quota_max` requests: 403 `Quota exceeded` and `QuotaExceeded`
 * (never throttled). The per-API `limit` of the key, when set, has its own counter. `-1` is
 * unlimited; `disable_quota` on the API skips the check. The count is kept in the counters, so
 * raising `quota_max` mid-period keeps it and lowering it below the count refuses; a new renewal
 * rate applies from the next period. With trigger monitors on, crossing the key's own trigger
 * limits (`monitor.trigger_limits`), else the configured global percent,
 * fires `TriggerExceeded`. The X-RateLimit-* headers carry the quota unless the gateway is set
 * to rate headers.
 */
import type { GatewaySession } from '../../../schemas/generated/models.ts';
import { countsQuota, crossedTrigger, type Allowance } from '../../limits/allowance.ts';
import { counterName, type QuotaUse } from '../../limits/counters.ts';
import { UNAVAILABLE } from '../../limits/guard.ts';
import { countersDown, openKeyLimit, refuseLimit } from '../../limits/key-limit.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { waits } from '../../pipeline/steps.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import type { GatewayMiddleware } from '../deps.ts';

/** See the module comment. */
export const quota: GatewayMiddleware = {
  name: 'quota',
  enabled: countsQuota,
  create: (api, deps) => {
    const apiId = api.api_id ?? '';
    const headers = deps.config.rate_limit_headers === 'quota';
    // Trigger monitors: the key's own `monitor.trigger_limits`, else the gateway's global limit.
    const monitored = deps.config.monitor_enable_trigger_monitors && deps.config.monitor_user_keys;
    const global =
      deps.config.monitor_global_trigger_limit > 0 ? [deps.config.monitor_global_trigger_limit] : [];
    /** The refusal the quota's use means, if any, and its headers and trigger events. */
    const decide = (
      ctx: RequestContext,
      session: GatewaySession,
      a: Allowance,
      u: QuotaUse | typeof UNAVAILABLE,
    ): Rejection | undefined => {
      if (u === UNAVAILABLE) return countersDown(ctx, deps.limits.failOpen);
      if (headers) {
        ctx.responseHeaders['x-ratelimit-limit'] = String(a.quotaMax);
        ctx.responseHeaders['x-ratelimit-remaining'] = String(Math.max(0, a.quotaMax - u.used));
        ctx.responseHeaders['x-ratelimit-reset'] = String(Math.ceil((deps.now() + u.ttlMs) / 1000));
      }
      if (monitored) {
        const own = session.monitor?.trigger_limits ?? [];
        for (const percent of own.length > 0 ? own : global) {
          if (crossedTrigger(u.used, a.quotaMax, percent)) {
            ctx.emit('TriggerExceeded', `Quota trigger reached: ${percent}% of ${a.quotaMax} used`);
          }
        }
      }
      if (u.used > a.quotaMax) return refuseLimit(ctx, 'quota', deps.metrics);
      return undefined;
    };
    return waits((ctx) => {
      const open = openKeyLimit(ctx, apiId, 'quota', deps.metrics);
      if ('answer' in open) return open.answer;
      const { session, keyId, a } = open;
      const name = counterName.quota(keyId, a.scope);
      // Counted with the rate limit, in the same step (rate-limit's `rateThenQuota`), or here.
      const counted = ctx.state.quotaCounted;
      if (counted?.name === name) return decide(ctx, session, a, counted.use);
      return deps.limits
        .run(() => deps.counters.quota(name, keyId, a.quotaRenewalRate * 1000))
        .then((u) => decide(ctx, session, a, u));
    });
  },
};
