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
  compileEntryEndpoint,
  endpointMatches,
  endpointPath,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';

/** The timeouts of a version, compiled; undefined when it sets none. */
export function compileHardTimeouts(
  v: VersionInfo,
): { endpoint: CompiledEndpoint; ms: number }[] | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  const out = (v.extended_paths?.hard_timeouts ?? [])
    .filter((e) => e.disabled !== true && e.path !== undefined && e.path !== '' && (e.timeout ?? 0) > 0)
    .map((e) => ({
      endpoint: compileEntryEndpoint(e, ignoreCase),
      // Seconds, a fraction to the millisecond (an svc extension).
      ms: Math.max(1, Math.round((e.timeout ?? 0) * 1000)),
    }));
  return out.length === 0 ? undefined : out;
}

/** See the module comment. */
export const hardTimeouts: GatewayMiddleware = {
  name: 'hard-timeouts',
  enabled: (api) => perVersion(api, compileHardTimeouts) !== undefined,
  create: (api) => {
    const of = perVersion(api, compileHardTimeouts);
    if (of === undefined) throw new Error('hard-timeouts: compiled for an API without timeouts');
    return around(async (ctx, next) => {
      const list = of(ctx);
      if (list !== undefined) {
        const method = ctx.method.toUpperCase();
        const path = endpointPath(ctx);
        const hit = list.find((e) => endpointMatches(e.endpoint, method, path));
        if (hit !== undefined) ctx.upstream.timeoutMs = hit.ms;
      }
      await next();
      return undefined;
    });
  },
};
