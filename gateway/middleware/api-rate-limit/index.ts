/**
 * The API-wide rate limit (`global_rate_limit`): `rate` requests per `per` seconds for all
 * clients of the API together, keyless APIs included; over it: 429 `API Rate Limit Exceeded`.
 */
import { counterName } from '../../limits/counters.ts';
import { UNAVAILABLE } from '../../limits/guard.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** See the module comment. */
export const apiRateLimit: GatewayMiddleware = {
  name: 'api-rate-limit',
  enabled: (api) => {
    const g = api.global_rate_limit;
    return g !== undefined && g.disabled !== true && (g.rate ?? 0) > 0 && (g.per ?? 0) > 0;
  },
  create: (api, deps) => {
    const rate = api.global_rate_limit?.rate ?? 0;
    const windowMs = (api.global_rate_limit?.per ?? 0) * 1000;
    const name = counterName.api(api.api_id ?? '');
    return around(async (ctx, next) => {
      const v = await deps.limits.run(() => deps.counters.rate(name, rate, windowMs));
      if (v === UNAVAILABLE) {
        if (!deps.limits.failOpen) return reject(ctx, GatewayError.limitsUnavailable());
      } else if (!v.allowed) {
        ctx.emit('RateLimitExceeded', 'API Rate Limit Exceeded');
        deps.metrics?.refused('api_rate_limit');
        return reject(ctx, GatewayError.apiRateLimitExceeded());
      }
      await next();
      return undefined;
    });
  },
};
