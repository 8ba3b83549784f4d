/**
 * The key's rate limit, with throttling (the seed's "Throttled request" table): `rate` requests
 * per `per` seconds in a sliding window, from the per-API `limit` when the key has one (counted
 * per API) or the key's own values after its policies. Over the limit with `throttle_interval`
 * and `throttle_retry_limit` both above 0, the request waits `throttle_interval` seconds (a
 * timer, released at once if the client goes away) and is tried again, up to
 * `throttle_retry_limit` times; each wait fires `RateLimitExceeded`. Then, or at once without
 * throttling: 429 `Rate Limit Exceeded`. `disable_rate_limit` on the API turns it off.
 *
 * When the quota step will count this key too, each check here also counts the quota when it
 * admits, in one atomic step (`rateThenQuota`: one Redis round trip for both), and leaves the
 * count in `ctx.state.quotaCounted` for the quota step, which decides on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { countsQuota, throttled, type Allowance } from '../../limits/allowance.ts';
import { counterName, type RateVerdict } from '../../limits/counters.ts';
import { UNAVAILABLE } from '../../limits/guard.ts';
import { countersDown, openKeyLimit } from '../../limits/key-limit.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { reject } from '../../pipeline/compose.ts';
import { waits } from '../../pipeline/steps.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** Sets the X-RateLimit-* headers from a rate verdict. */
function rateHeaders(ctx: RequestContext, limit: number, v: RateVerdict, now: number): void {
  ctx.responseHeaders['x-ratelimit-limit'] = String(limit);
  ctx.responseHeaders['x-ratelimit-remaining'] = String(v.remaining);
  ctx.responseHeaders['x-ratelimit-reset'] = String(Math.ceil((now + v.resetMs) / 1000));
}

/** See the module comment. */
export const rateLimit: GatewayMiddleware = {
  name: 'rate-limit',
  enabled: (api) => api.use_keyless !== true && api.disable_rate_limit !== true,
  create: (api, deps) => {
    const apiId = api.api_id ?? '';
    const headers = deps.config.rate_limit_headers === 'rate';
    const quotaStep = countsQuota(api);
    /** The verdict's headers, and the refusal it means, if any. */
    const decide = (
      ctx: RequestContext,
      a: Allowance,
      v: RateVerdict | typeof UNAVAILABLE,
    ): Rejection | undefined => {
      if (v === UNAVAILABLE) return countersDown(ctx, deps.limits.failOpen);
      if (headers) rateHeaders(ctx, a.rate, v, deps.now());
      if (v.allowed) return undefined;
      deps.metrics?.refused(throttled(a) ? 'throttle' : 'rate_limit');
      return reject(ctx, GatewayError.rateLimitExceeded());
    };
    return waits((ctx) => {
      const open = openKeyLimit(ctx, apiId, 'rate', deps.metrics);
      if ('answer' in open) return open.answer;
      const { keyId, a } = open;
      const name = counterName.rate(keyId, a.scope);
      const windowMs = a.per * 1000;
      const q = quotaStep && a.modes.quota === 'on' ? counterName.quota(keyId, a.scope) : undefined;
      const check = (): Promise<RateVerdict | typeof UNAVAILABLE> =>
        deps.limits.run(() =>
          q === undefined
            ? deps.counters.rate(name, a.rate, windowMs)
            : deps.counters
                .rateThenQuota(
                  { name, limit: a.rate, windowMs },
                  { name: q, group: keyId, periodMs: a.quotaRenewalRate * 1000 },
                )
                .then((both) => {
                  if (both.quota !== undefined) ctx.state.quotaCounted = { name: q, use: both.quota };
                  return both.rate;
                }),
        );
      const throttle = async (first: RateVerdict): Promise<Rejection | undefined> => {
        let v: RateVerdict | typeof UNAVAILABLE = first;
        for (let retry = 0; retry < a.throttleRetryLimit; retry++) {
          deps.metrics?.throttled();
          try {
            await sleep(a.throttleInterval * 1000, undefined, { signal: ctx.signal });
          } catch {
            return reject(ctx, GatewayError.rateLimitExceeded()); // the client went away
          }
          v = await check();
          if (v === UNAVAILABLE || v.allowed) break;
          ctx.emit('RateLimitExceeded', 'Key Rate Limit Exceeded');
        }
        return decide(ctx, a, v);
      };
      return check().then((v) => {
        if (v === UNAVAILABLE || v.allowed) return decide(ctx, a, v);
        ctx.emit('RateLimitExceeded', 'Key Rate Limit Exceeded');
        return throttled(a) ? throttle(v) : decide(ctx, a, v);
      });
    });
  },
};
