/**
 * Upstream timeouts per endpoint (`extended_paths.hard_timeouts`): the first entry matching the
 * method and path gives the request `timeout` seconds for the upstream to start its response;
 * past it the client gets 504 `Upstream service reached hard timeout.` (both entrances: the
 * upstream call reads `ctx.upstream.timeoutMs`). A timeout of 0 or a disabled entry sets none.
 */
import type { VersionInfo } from '../../../schemas/generated/models.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { around } from '../../pipeline/steps.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersionMiddleware,
  type EndpointTable,
} from '../../pipeline/endpoints.ts';

/** The timeouts of a version, compiled; undefined when it sets none. */
export function compileHardTimeouts(v: VersionInfo): EndpointTable<{ ms: number }> | undefined {
  return compileEndpointEntries(v, v.extended_paths?.hard_timeouts, (e) => {
    const seconds = e.timeout ?? 0;
    // Seconds, a fraction to the millisecond (an svc extension).
    return seconds > 0 ? { ms: Math.max(1, Math.round(seconds * 1000)) } : undefined;
  });
}

/** See the module comment. */
export const hardTimeouts: GatewayMiddleware = perVersionMiddleware(
  'hard-timeouts',
  'timeouts',
  compileHardTimeouts,
  (of) =>
    around(async (ctx, next) => {
      const hit = matchingEntry(of(ctx), ctx);
      if (hit !== undefined) ctx.upstream.timeoutMs = hit.ms;
      await next();
      return undefined;
    }),
);
