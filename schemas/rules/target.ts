/**
 * The upstream address of an API (`proxy.target_url`, a load-balanced `target_list` entry, an
 * endpoint's `override_target`, an absolute `rewrite_to`), parsed once, and the per-host lookup
 * of upstream TLS settings. A leaf of the rules: the API definition's rules, the endpoints' rules
 * and the internal targets all read it, and it reads none of them.
 */
import { quote, type FieldProblemType } from './field-problem.ts';

/** Removes the trailing slashes of a listen path (`/a/` -> `/a`, `/` -> ``). */
export function normalizeListenPath(p: string): string {
  let end = p.length;
  while (end > 0 && p.charCodeAt(end - 1) === 47 /* / */) end--;
  return p.slice(0, end);
}

/** The upstream of an API, parsed once. */
export interface Target {
  /** `http://host:port` or `https://host:port`. */
  origin: string;
  /** `host[:port]` as written, for the Host header. */
  host: string;
  /** Path of the target URL without its trailing slash (`''` for `/`). */
  basePath: string;
  /** Query of the target URL without `?`, merged before the client's. */
  baseQuery: string;
  /**
   * The target URL's path, other than `/` alone, ends with `/` (`basePath` drops it): kept for a
   * request with nothing after the listen path when the API sets `proxy.disable_strip_slash`.
   */
  trailingSlash?: boolean;
}

/** Why a `target_url` can't be used. */
export interface TargetProblem {
  type: FieldProblemType;
  message: string;
}

const TARGET_EXAMPLE = 'http://orders.default.svc:8080';

/**
 * Parses `target_url`. A bare `host:port` (such as `orders.shop.svc:8080`, or `httpbin.org`)
 * means http; the gateway proxies to http and https only.
 */
export function parseTarget(raw: string): Target | TargetProblem {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  const u = URL.parse(withScheme);
  if (u === null) {
    return {
      type: 'Invalid',
      message: `${quote(raw)} is not a URL: write the upstream address, such as ${TARGET_EXAMPLE}`,
    };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return {
      type: 'NotSupported',
      message: `${quote(raw)}: the scheme ${quote(u.protocol.slice(0, -1))} is not supported yet by this gateway: proxy to an http:// or https:// address, such as ${TARGET_EXAMPLE}`,
    };
  }
  if (u.hostname === '') {
    return { type: 'Invalid', message: `${quote(raw)} has no host: write one, such as ${TARGET_EXAMPLE}` };
  }
  if (u.username !== '' || u.password !== '') {
    return {
      type: 'Invalid',
      message: `${quote(raw)} carries credentials: remove the user and password from the URL (they are not sent upstream)`,
    };
  }
  return {
    origin: `${u.protocol}//${u.host}`,
    host: u.host,
    basePath: normalizeListenPath(u.pathname),
    baseQuery: u.search.slice(1),
    ...(u.pathname.length > 1 && u.pathname.endsWith('/') ? { trailingSlash: true } : {}),
  };
}

/** Whether `parseTarget` failed. */
export function isTargetProblem(t: Target | TargetProblem): t is TargetProblem {
  return 'message' in t;
}

/**
 * The value an upstream host gets from `upstream_certificates` or `pinned_public_keys`: the
 * exact host (case-insensitive), else the longest `*.suffix` covering it, else `*`.
 */
export function upstreamEntry(
  map: Readonly<Record<string, string>> | undefined,
  host: string,
): string | undefined {
  if (map === undefined) return undefined;
  const h = host.toLowerCase();
  let wildcard: [string, string] | undefined;
  let any: string | undefined;
  for (const [k, v] of Object.entries(map)) {
    const key = k.trim().toLowerCase();
    if (key === h) return v;
    if (key === '*') any = v;
    else if (key.startsWith('*.') && h.endsWith(key.slice(1)) && key.length > (wildcard?.[0].length ?? 0))
      wildcard = [key, v];
  }
  return wildcard?.[1] ?? any;
}
