/**
 * The route table: compiled APIs indexed per listener and domain. Matching picks the domain tier
 * first (exact host, then wildcards from the most specific, then APIs without a domain) and, in
 * each tier, the longest listen path that is a whole-segment prefix of the request path. A tier
 * with no matching path falls through to the next one.
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { Terminal } from './compose.ts';

/** `main` is the gateway port; a number is an API's own `listen_port`. */
export type ListenerKey = 'main' | number;

/** The upstream of a route, parsed once. */
export interface Target {
  /** `http://host:port` or `https://host:port`. */
  origin: string;
  /** `host[:port]` as written, for the Host header. */
  host: string;
  /** Path of the target URL without its trailing slash (`''` for `/`). */
  basePath: string;
  /** Query of the target URL without `?`, merged before the client's. */
  baseQuery: string;
}

/** One compiled API. */
export interface Route {
  id: string;
  api: GatewayApiDefinition;
  listener: ListenerKey;
  /** Lower-case host, `*.suffix` for a wildcard, undefined for any host. */
  domain: string | undefined;
  /** Listen path without its trailing slash (`''` for `/`). */
  listenPath: string;
  /** Remove the listen path before proxying. */
  strip: boolean;
  target: Target | undefined;
  /** The compiled chain, ending with the upstream call. */
  handle: Terminal;
  /**
   * True when the compiled chain is the upstream call alone (no middleware enabled for the API):
   * such a route may be served by the connection-level fast path (server/fast-path.ts).
   */
  noMiddleware: boolean;
}

interface Tier {
  routes: Route[];
}

interface ListenerRoutes {
  exact: Map<string, Tier>;
  /** Wildcard tiers, the longest suffix first; `suffix` includes its leading dot. */
  wildcard: { suffix: string; tier: Tier }[];
  any: Tier;
}

/** Removes the trailing slashes of a listen path (`/a/` -> `/a`, `/` -> ``). */
export function normalizeListenPath(p: string): string {
  let end = p.length;
  while (end > 0 && p.charCodeAt(end - 1) === 47 /* / */) end--;
  return p.slice(0, end);
}

/** Lower-case host without port or trailing dot: `API.Example.com:8080` -> `api.example.com`. */
export function normalizeHost(host: string | undefined): string {
  if (host === undefined || host === '') return '';
  let h = host.toLowerCase();
  if (h.startsWith('[')) {
    const close = h.indexOf(']');
    return close === -1 ? h : h.slice(0, close + 1);
  }
  const colon = h.indexOf(':');
  if (colon !== -1) h = h.slice(0, colon);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** Whether `listenPath` (normalized) covers `path` on whole segments. */
export function coversPath(listenPath: string, path: string): boolean {
  if (listenPath === '') return true;
  if (!path.startsWith(listenPath)) return false;
  return path.length === listenPath.length || path.charCodeAt(listenPath.length) === 47;
}

function byLongestPath(a: Route, b: Route): number {
  return b.listenPath.length - a.listenPath.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function firstCovering(tier: Tier | undefined, path: string): Route | undefined {
  if (tier === undefined) return undefined;
  for (const r of tier.routes) if (coversPath(r.listenPath, path)) return r;
  return undefined;
}

/** An immutable table; a reload builds a new one and swaps the reference. */
export class RouteTable {
  /** Every route, sorted by ID. */
  readonly routes: readonly Route[];
  readonly #byListener = new Map<ListenerKey, ListenerRoutes>();

  constructor(routes: readonly Route[]) {
    this.routes = [...routes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const r of this.routes) {
      let lr = this.#byListener.get(r.listener);
      if (lr === undefined) {
        lr = { exact: new Map(), wildcard: [], any: { routes: [] } };
        this.#byListener.set(r.listener, lr);
      }
      let tier: Tier;
      if (r.domain === undefined) {
        tier = lr.any;
      } else if (r.domain.startsWith('*.')) {
        const suffix = r.domain.slice(1);
        let w = lr.wildcard.find((x) => x.suffix === suffix);
        if (w === undefined) {
          w = { suffix, tier: { routes: [] } };
          lr.wildcard.push(w);
        }
        tier = w.tier;
      } else {
        tier = lr.exact.get(r.domain) ?? { routes: [] };
        lr.exact.set(r.domain, tier);
      }
      tier.routes.push(r);
    }
    for (const lr of this.#byListener.values()) {
      lr.any.routes.sort(byLongestPath);
      for (const t of lr.exact.values()) t.routes.sort(byLongestPath);
      lr.wildcard.sort((a, b) => b.suffix.length - a.suffix.length);
      for (const w of lr.wildcard) w.tier.routes.sort(byLongestPath);
    }
  }

  /** Listeners the table needs. */
  get listeners(): ListenerKey[] {
    return [...this.#byListener.keys()];
  }

  /** The route serving `path` for `host` (normalized) on `listener`, if any. */
  match(listener: ListenerKey, host: string, path: string): Route | undefined {
    const lr = this.#byListener.get(listener);
    if (lr === undefined) return undefined;
    const exact = firstCovering(lr.exact.get(host), path);
    if (exact !== undefined) return exact;
    for (const w of lr.wildcard) {
      if (host.length > w.suffix.length && host.endsWith(w.suffix)) {
        const r = firstCovering(w.tier, path);
        if (r !== undefined) return r;
      }
    }
    return firstCovering(lr.any, path);
  }
}
