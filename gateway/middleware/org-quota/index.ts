/**
 * Organisation quotas (`enforce_org_quotas` on an API): every request to the API counts against
 * the quota of the API's organisation (`/svc/org/keys/{org_id}`: `quota_max` per
 * `quota_renewal_rate`), whatever the keys' own quotas, keyless requests included; beyond it: 403
 * with the reference's message. An organisation without a stored session, or without a quota,
 * is not limited. With trigger monitors on and `monitor.monitor_org_keys`, crossing the
 * organisation's own trigger limits (`monitor.trigger_limits`), else the configured global
 * percent, fires `TriggerExceeded`, as a key's quota does.
 */
import { crossedTrigger } from '../../limits/allowance.ts';
import { counterName, orgGroup } from '../../limits/counters.ts';
import { UNAVAILABLE } from '../../limits/guard.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { limitModes } from '../../../schemas/rules/limits.ts';

/** See the module comment. */
export const orgQuota: GatewayMiddleware = {
  name: 'org-quota',
  enabled: (api) => api.enforce_org_quotas === true && (api.org_id ?? '') !== '',
  create: (api, deps) => {
    const orgId = api.org_id ?? '';
    const name = counterName.org(orgId);
    // Trigger monitors: the organisation's own `monitor.trigger_limits`, else the global limit.
    const monitored = deps.config.monitor_enable_trigger_monitors && deps.config.monitor_org_keys;
    const global =
      deps.config.monitor_global_trigger_limit > 0 ? [deps.config.monitor_global_trigger_limit] : [];
    return around(async (ctx, next) => {
      const org = await deps.sessions.org(orgId);
      const max = org?.quota_max ?? -1;
      const renewal = org?.quota_renewal_rate ?? 0;
      const mode = limitModes(org ?? {}).quota;
      if (mode === 'closed') {
        // Stored values the limits rule refuses (quota_max 0, no period): no requests.
        ctx.emit('QuotaExceeded', 'Organisation quota exceeded');
        deps.metrics?.refused('quota');
        return reject(ctx, GatewayError.orgQuotaExceeded());
      }
      if (mode === 'on') {
        const u = await deps.limits.run(() => deps.counters.quota(name, orgGroup(orgId), renewal * 1000));
        if (u === UNAVAILABLE) {
          if (!deps.limits.failOpen) return reject(ctx, GatewayError.limitsUnavailable());
        } else {
          if (monitored) {
            const own = org?.monitor?.trigger_limits ?? [];
            for (const percent of own.length > 0 ? own : global) {
              if (crossedTrigger(u.used, max, percent)) {
                ctx.emit('TriggerExceeded', `Organisation quota trigger reached: ${percent}% of ${max} used`);
              }
            }
          }
          if (u.used > max) {
            ctx.emit('QuotaExceeded', 'Organisation quota exceeded');
            deps.metrics?.refused('quota');
            return reject(ctx, GatewayError.orgQuotaExceeded());
          }
        }
      }
      await next();
      return undefined;
    });
  },
};
