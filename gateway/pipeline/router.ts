/**
 * The route table: compiled APIs indexed per listener and domain. Matching picks the domain tier
 * first (exact host, then wildcards from the most specific, then APIs without a domain; a wildcard
 * covers any depth below it, or one label with `domain_wildcard_one_label`) and, in
 * each tier, the longest listen path that is a whole-segment prefix of the request path, compared
 * case-insensitively: exactly what the claim rule of schemas/rules (`routeKey`) calls one route
 * (an API with `listen_path_case_sensitive` also needs the case: `casedMatch`).
 * A tier with no matching path falls through to the next one.
 */
import { wildcardCovers } from '../../schemas/rules/api-definition.ts';
import { resolveInternalTarget } from '../../schemas/rules/internal-target.ts';
import type { Step, Terminal } from './middleware.ts';
import type { ListenerKey, RouteInfo } from './route.ts';

export type { ListenerKey, RouteInfo, Target } from './route.ts';

/** One compiled API: its settings (route.ts) and its chain. */
export interface Route extends RouteInfo {
  /** The compiled chain on the node:http entrance, ending with the upstream call. */
  handle: Terminal;
  /** The compiled middleware, in chain order (the fast path runs them itself). */
  handlers: readonly Step[];
}

interface Tier {
  /** The longest listen path first. */
  routes: Route[];
  /**
   * For a large tier: its routes by the first segment of their listen path (a hash of it, ASCII
   * lower case), each list in the tier's order, so that a match hashes the request path's first
   * segment and scans the few routes under it; then `root`, the routes whose listen path is `/`
   * (they come last in the tier's order). No allocation per request.
   */
  bySegment?: Map<number, Route[]>;
  root?: Route[];
  /**
   * When many routes share a first segment (`/api/a`, `/api/b`, ...): the first route of each
   * listen path (ASCII lower case), so that a match looks up each segment prefix of the request
   * path instead of scanning them; exact routes apart, looked up with the whole path only.
   */
  byPath?: Map<string, Route>;
  exactByPath?: Map<string, Route>;
}

/**
 * How many live tables (built and not yet retired) hold each route: a route is closed when the
 * last one is retired, after the requests running on it have finished.
 */
const holders = new WeakMap<Route, number>();

/** Tiers with more routes than this are matched through `bySegment` (and lists through `byPath`). */
const SCAN_LIMIT = 16;

interface ListenerRoutes {
  exact: Map<string, Tier>;
  /**
   * Wildcard tiers, the longest suffix first and, of one suffix, the one-label tier first (it is
   * the more specific); `domain` is the `*.suffix` key.
   */
  wildcard: { domain: string; suffix: string; oneLabel: boolean; tier: Tier }[];
  /**
   * When there are many wildcard tiers: each by its suffix (`.example.com`), so that a match looks
   * up the suffixes of the host (one per label) instead of trying every wildcard.
   */
  wildcardBySuffix?: Map<string, { oneLabel?: Tier; anyDepth?: Tier }>;
  any: Tier;
}

/**
 * The first route of the wildcard tiers covering `host` through `bySuffix`, in the order of the
 * sorted list: the longest suffix first (the host's first dot), and of one suffix the one-label
 * tier first (it covers the host only at its first dot).
 */
function firstWildcard(
  bySuffix: Map<string, { oneLabel?: Tier; anyDepth?: Tier }>,
  host: string,
  path: string,
): Route | undefined {
  const first = host.indexOf('.');
  // A suffix shorter than the host: from a dot after its first character.
  for (let i = first === 0 ? host.indexOf('.', 1) : first; i > 0; i = host.indexOf('.', i + 1)) {
    const tiers = bySuffix.get(host.slice(i));
    if (tiers === undefined) continue;
    if (i === first && tiers.oneLabel !== undefined) {
      const r = firstCovering(tiers.oneLabel, path);
      if (r !== undefined) return r;
    }
    const r = firstCovering(tiers.anyDepth, path);
    if (r !== undefined) return r;
  }
  return undefined;
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

/** A character code with ASCII `A`-`Z` folded to lower case. */
function folded(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

/**
 * Whether `listenPath` (normalized) covers `path` on whole segments, ASCII letters compared
 * without case (listen paths are ASCII: see `listenPathProblem`). No allocation per call.
 */
export function coversPath(listenPath: string, path: string): boolean {
  const n = listenPath.length;
  if (n === 0) return true;
  if (path.length < n || (path.length > n && path.charCodeAt(n) !== 47)) return false;
  for (let i = 0; i < n; i++) {
    const a = listenPath.charCodeAt(i);
    const b = path.charCodeAt(i);
    if (a !== b && folded(a) !== folded(b)) return false;
  }
  return true;
}

/** The longest listen path first; of one length, exact routes before prefix ones; then by ID. */
function byLongestPath(a: Route, b: Route): number {
  return (
    b.listenPath.length - a.listenPath.length ||
    Number(b.exactPath !== undefined) - Number(a.exactPath !== undefined) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/** ASCII `A`-`Z` folded to lower case, nothing else changed (listen paths are ASCII). */
export function asciiLower(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
  }
  return s;
}

/**
 * A hash of the first segment of `path` (from index 1 to the next `/`), ASCII letters folded to
 * lower case; -1 when `path` does not start with `/`. Collisions only make a list longer: every
 * route found is checked against the path.
 */
function firstSegmentHash(path: string): number {
  if (path.charCodeAt(0) !== 47) return -1;
  // Small integers throughout (no heap numbers): about twice as fast as FNV-1a here.
  let h = 0;
  const n = path.length;
  for (let i = 1; i < n; i++) {
    let c = path.charCodeAt(i);
    if (c === 47) break;
    if (c >= 65 && c <= 90) c += 32;
    h = (Math.imul(h, 31) + c) | 0;
  }
  return h & 0x3fffffff;
}

/**
 * Whether a route found without case also matches `path` with case: always, unless its listen
 * path is case-sensitive (`casedPath`), when the request must write it as the API does.
 */
function casedMatch(r: Route, path: string): boolean {
  const cased = r.casedPath;
  if (cased === undefined) return true;
  return r.exactPath === undefined ? path.startsWith(cased) : path === cased;
}

function scanCovering(routes: readonly Route[], path: string): Route | undefined {
  // The path in lower case only when an exact route asks for it: nothing allocated per request
  // in the common case.
  let lower: string | undefined;
  for (const r of routes) {
    if (r.exactPath === undefined) {
      if (coversPath(r.listenPath, path) && casedMatch(r, path)) return r;
    } else if ((lower ??= asciiLower(path)) === r.exactPath && casedMatch(r, path)) {
      return r;
    }
  }
  return undefined;
}

function indexPaths(tier: Tier): void {
  if (tier.routes.length <= SCAN_LIMIT) return;
  const bySegment = new Map<number, Route[]>();
  const root: Route[] = [];
  let crowded = false;
  for (const r of tier.routes) {
    // A listen path `/` (exact or not) sorts after every other: it comes last, after the list.
    // One not starting with `/` covers no path starting with `/`: only the scan finds it.
    const path = r.listenPath === '' ? undefined : (r.exactPath ?? r.listenPath);
    if (path === undefined) {
      root.push(r);
      continue;
    }
    const h = firstSegmentHash(path);
    if (h === -1) continue;
    const list = bySegment.get(h);
    if (list === undefined) bySegment.set(h, [r]);
    else if (list.push(r) > SCAN_LIMIT) crowded = true;
  }
  tier.bySegment = bySegment;
  tier.root = root;
  if (!crowded) return;
  const byPath = new Map<string, Route>();
  const exactByPath = new Map<string, Route>();
  for (const r of tier.routes) {
    const [map, key] =
      r.exactPath === undefined ? [byPath, asciiLower(r.listenPath)] : [exactByPath, r.exactPath];
    if (!map.has(key)) map.set(key, r);
  }
  tier.byPath = byPath;
  // Most tiers have no exact route: no lookup of the whole path for them.
  if (exactByPath.size > 0) tier.exactByPath = exactByPath;
}

/** Each prefix of `path` ending before a `/` (and the whole path), the longest first. */
function byPrefixes(tier: Tier, byPath: Map<string, Route>, path: string): Route | undefined {
  const folded = asciiLower(path);
  const exact = tier.exactByPath?.get(folded);
  if (exact !== undefined && casedMatch(exact, path)) return exact;
  const whole = byPath.get(folded);
  if (whole !== undefined && casedMatch(whole, path)) return whole;
  for (let i = folded.lastIndexOf('/'); i >= 0; i = i === 0 ? -1 : folded.lastIndexOf('/', i - 1)) {
    const r = byPath.get(folded.slice(0, i));
    if (r !== undefined && casedMatch(r, path)) return r;
  }
  return undefined;
}

function firstCovering(tier: Tier | undefined, path: string): Route | undefined {
  if (tier === undefined) return undefined;
  const bySegment = tier.bySegment;
  if (bySegment === undefined) return scanCovering(tier.routes, path);
  const h = firstSegmentHash(path);
  // Not a path starting with `/`: whatever covers it, a scan finds.
  if (h === -1) return scanCovering(tier.routes, path);
  const list = bySegment.get(h);
  if (list !== undefined) {
    // The routes of one first segment, in the tier's order: the scan of the whole tier would
    // find the same first one (no other route can cover the path but those of `root`, after).
    const r =
      list.length > SCAN_LIMIT && tier.byPath !== undefined
        ? byPrefixes(tier, tier.byPath, path)
        : scanCovering(list, path);
    if (r !== undefined) return r;
  }
  return tier.root === undefined ? undefined : scanCovering(tier.root, path);
}

/** An immutable table; a reload builds a new one and swaps the reference. */
export class RouteTable {
  /** Every route, sorted by ID. */
  readonly routes: readonly Route[];
  readonly #byListener = new Map<ListenerKey, ListenerRoutes>();
  /**
   * APIs served to no client (`internal: true`): reachable only through an internal target
   * (`svc://`) of another API, looked up by `byId`.
   */
  readonly internal: readonly Route[];
  #byId: Map<string, Route> | undefined;

  #retired = false;

  constructor(routes: readonly Route[], internal: readonly Route[] = []) {
    this.routes = [...routes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.internal = internal;
    for (const r of internal) holders.set(r, (holders.get(r) ?? 0) + 1);
    for (const r of this.routes) {
      holders.set(r, (holders.get(r) ?? 0) + 1);
      let lr = this.#byListener.get(r.listener);
      if (lr === undefined) {
        lr = { exact: new Map(), wildcard: [], any: { routes: [] } };
        this.#byListener.set(r.listener, lr);
      }
      let tier: Tier;
      if (r.domain === undefined) {
        tier = lr.any;
      } else if (r.domain.startsWith('*.')) {
        const oneLabel = r.domainOneLabel === true;
        const domain = r.domain;
        let w = lr.wildcard.find((x) => x.domain === domain && x.oneLabel === oneLabel);
        if (w === undefined) {
          w = { domain, suffix: domain.slice(1), oneLabel, tier: { routes: [] } };
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
      indexPaths(lr.any);
      for (const t of lr.exact.values()) {
        t.routes.sort(byLongestPath);
        indexPaths(t);
      }
      lr.wildcard.sort(
        (a, b) => b.suffix.length - a.suffix.length || Number(b.oneLabel) - Number(a.oneLabel),
      );
      for (const w of lr.wildcard) {
        w.tier.routes.sort(byLongestPath);
        indexPaths(w.tier);
      }
      if (lr.wildcard.length > SCAN_LIMIT) {
        const bySuffix = new Map<string, { oneLabel?: Tier; anyDepth?: Tier }>();
        for (const w of lr.wildcard) {
          const tiers = bySuffix.get(w.suffix) ?? {};
          if (w.oneLabel) tiers.oneLabel = w.tier;
          else tiers.anyDepth = w.tier;
          bySuffix.set(w.suffix, tiers);
        }
        lr.wildcardBySuffix = bySuffix;
      }
    }
  }

  /** Requests running on this table now (both entrances count them). */
  #active = 0;
  #idle: (() => void) | undefined;

  /** A request starts on this table. */
  enter(): void {
    this.#active++;
  }

  /** A request on this table has finished. */
  leave(): void {
    this.#active--;
    if (this.#active === 0 && this.#idle !== undefined) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle();
    }
  }

  /**
   * Retires a table that has been swapped out: once no request runs on it, each of its routes
   * that no other live table holds (a reload reuses unchanged routes) frees what its middleware
   * hold.
   */
  async retire(): Promise<void> {
    if (this.#retired) return;
    this.#retired = true;
    if (this.#active > 0) {
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
      });
    }
    for (const r of [...this.routes, ...this.internal]) {
      const left = (holders.get(r) ?? 1) - 1;
      if (left > 0) {
        holders.set(r, left);
        continue;
      }
      holders.delete(r);
      await r.close();
    }
  }

  /** The route of an API of this table by ID, served or internal (internal targets). */
  byId(id: string): Route | undefined {
    if (this.#byId === undefined) {
      this.#byId = new Map();
      for (const r of [...this.routes, ...this.internal]) this.#byId.set(r.id, r);
    }
    return this.#byId.get(id);
  }

  /**
   * The route an internal target's host (other than `self`) names: an API ID, else the one API
   * with that name (schemas/rules/internal-target.ts `resolveInternalTarget`); `ambiguous` (their
   * IDs) when several APIs have that name; undefined when none does.
   */
  byTarget(host: string): Route | { ambiguous: string[] } | undefined {
    const exact = this.byId(host);
    if (exact !== undefined) return exact;
    let byName = this.#byTarget.get(host);
    if (byName === undefined) {
      const found = resolveInternalTarget(
        host,
        '',
        [...this.routes, ...this.internal].map((r) => ({ id: r.id, name: r.api.name })),
      );
      byName = 'id' in found ? (this.byId(found.id) ?? null) : 'ambiguous' in found ? found : null;
      if (this.#byTarget.size < 1024) this.#byTarget.set(host, byName);
    }
    return byName ?? undefined;
  }

  /** Hosts of internal targets resolved by name so far (null: none). */
  readonly #byTarget = new Map<string, Route | { ambiguous: string[] } | null>();

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
    if (lr.wildcardBySuffix !== undefined) {
      const r = firstWildcard(lr.wildcardBySuffix, host, path);
      if (r !== undefined) return r;
    } else {
      for (const w of lr.wildcard) {
        if (wildcardCovers(w.domain, w.oneLabel, host)) {
          const r = firstCovering(w.tier, path);
          if (r !== undefined) return r;
        }
      }
    }
    return firstCovering(lr.any, path);
  }
}
