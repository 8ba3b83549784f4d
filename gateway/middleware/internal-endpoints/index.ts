/**
 * `extended_paths.internal` of the request's version: endpoints (a path, and the entry's method;
 * none: every method) reachable only through an internal target of an API of the gateway
 * (`svc://<api>/<path>`: a `target_url`, a URL rewrite to `svc://self/...` or from another API;
 * gateway/upstream/internal.ts). A client calling one directly gets what the reference gateway
 * answers: 403 `Requested endpoint is forbidden`, before authentication. Compiled once per API;
 * a synchronous step, so a route with internal endpoints stays on the fast path (whose requests
 * all come from clients: internal targets are served by the node:http entrance).
 */
import type { VersionInfo } from '../../../schemas/generated/models.ts';
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import {
  compileEntryEndpoint,
  endpointMatches,
  endpointPath,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { cameThroughInternalTarget } from '../../upstream/internal.ts';

/** The internal endpoints of a version, compiled; undefined when it has none. */
export function compileInternalEndpoints(v: VersionInfo): CompiledEndpoint[] | undefined {
  const versionCase = v.ignore_endpoint_case === true;
  const out = (v.extended_paths?.internal ?? [])
    .filter((e) => e.disabled !== true && e.path !== undefined && e.path !== '')
    .map((e) => compileEntryEndpoint(e, versionCase));
  return out.length === 0 ? undefined : out;
}

/** See the module comment. */
export const internalEndpoints: GatewayMiddleware = {
  name: 'internal-endpoints',
  enabled: (api) => perVersion(api, compileInternalEndpoints) !== undefined,
  create: (api) => {
    const of = perVersion(api, compileInternalEndpoints);
    if (of === undefined) throw new Error('internal-endpoints: compiled for an API without them');
    return before((ctx) => {
      const list = of(ctx);
      if (list === undefined || cameThroughInternalTarget(ctx)) return undefined;
      const method = ctx.method.toUpperCase();
      const path = endpointPath(ctx);
      for (const e of list) {
        if (endpointMatches(e, method, path)) return reject(ctx, GatewayError.endpointForbidden());
      }
      return undefined;
    });
  },
};
