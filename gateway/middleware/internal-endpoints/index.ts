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
  compileEndpointEntries,
  matchingEntry,
  perVersionMiddleware,
  type EndpointTable,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { cameThroughInternalTarget } from '../../upstream/internal.ts';

/** The internal endpoints of a version, compiled; undefined when it has none. */
export function compileInternalEndpoints(v: VersionInfo): EndpointTable<object> | undefined {
  return compileEndpointEntries(v, v.extended_paths?.internal, () => ({}));
}

/** See the module comment. */
export const internalEndpoints: GatewayMiddleware = perVersionMiddleware(
  'internal-endpoints',
  'them',
  compileInternalEndpoints,
  (of) =>
    before((ctx) => {
      const list = of(ctx);
      if (list === undefined || cameThroughInternalTarget(ctx)) return undefined;
      return matchingEntry(list, ctx) === undefined
        ? undefined
        : reject(ctx, GatewayError.endpointForbidden());
    }),
);
