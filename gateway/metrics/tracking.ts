/**
 * Which requests the request metrics count, and under which `endpoint` label: `do_not_track`
 * leaves a whole API out, `extended_paths.do_not_track_endpoints` the requests of its entries
 * (it wins over `track_endpoints`), and `extended_paths.track_endpoints` counts the requests of
 * its entries under the entry's `path` (other requests have no endpoint label). Entries are
 * endpoints like every other list (method and path after the listen path, `{name}` parameters)
 * of the request's version, compiled once per route.
 */
import type { TrackEndpointMeta, VersionInfo } from '../../schemas/generated/models.ts';
import type { RequestContext } from '../pipeline/context.ts';
import {
  compileEntryEndpoint,
  endpointMatches,
  endpointPath,
  perVersion,
  type CompiledEndpoint,
} from '../pipeline/endpoints.ts';
import type { RouteInfo } from '../pipeline/route.ts';

/**
 * The `endpoint` label of a request (`''`: none), or undefined when the request is left out of
 * the request metrics.
 */
export type Tracking = (ctx: RequestContext) => string | undefined;

const leftOut: Tracking = () => undefined;

interface VersionTracking {
  track: { endpoint: CompiledEndpoint; label: string }[];
  skip: CompiledEndpoint[];
}

function entries(
  list: readonly TrackEndpointMeta[] | undefined,
  ignoreCase: boolean,
): { endpoint: CompiledEndpoint; label: string }[] {
  return (list ?? [])
    .filter((e) => e.disabled !== true && e.path !== undefined && e.path !== '')
    .map((e) => ({
      endpoint: compileEntryEndpoint(e, ignoreCase),
      label: e.path ?? '',
    }));
}

/** The tracking lists of a version, compiled; undefined when it has none. */
export function compileTracking(v: VersionInfo): VersionTracking | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  const track = entries(v.extended_paths?.track_endpoints, ignoreCase);
  const skip = entries(v.extended_paths?.do_not_track_endpoints, ignoreCase).map((e) => e.endpoint);
  return track.length === 0 && skip.length === 0 ? undefined : { track, skip };
}

/** How the requests of `route` are tracked; null when every request counts without an endpoint. */
export function trackingOf(route: RouteInfo): Tracking | null {
  if (route.api.do_not_track === true) return leftOut;
  const of = perVersion(route.api, compileTracking);
  if (of === undefined) return null;
  return (ctx) => {
    const lists = of(ctx);
    if (lists === undefined) return '';
    const method = ctx.method.toUpperCase();
    const path = endpointPath(ctx);
    if (lists.skip.some((e) => endpointMatches(e, method, path))) return undefined;
    return lists.track.find((e) => endpointMatches(e.endpoint, method, path))?.label ?? '';
  };
}

/** `trackingOf`, compiled once per route (a route object lives as long as its definition). */
export class TrackingCache {
  readonly #byRoute = new WeakMap<RouteInfo, Tracking | null>();

  get(route: RouteInfo): Tracking | null {
    let t = this.#byRoute.get(route);
    if (t === undefined) {
      try {
        t = trackingOf(route);
      } catch {
        // An endpoint path that does not compile is refused when the API is written
        // (schemas/rules/endpoints.ts); should one get here, the requests count untracked.
        t = null;
      }
      this.#byRoute.set(route, t);
    }
    return t;
  }
}
