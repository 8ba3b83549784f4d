/**
 * What a rule's filters and timeouts become on the API that serves it: header changes
 * (`global_headers`, `global_response_headers`; `add` as `global_headers_append`,
 * `global_response_headers_append`), URL rewrites (`url_rewrites`; a hostname: the
 * `host` header with `preserve_host_header`), mirrors (`mirror_targets`), redirects (a
 * mock answer), timeouts (`hard_timeouts`). What the gateway cannot do the way the spec says is a
 * problem naming the field (the route is then refused with UnsupportedValue), never dropped.
 */
import type { VersionInfo } from '../../../schemas/generated/kinds.ts';
import type { BackendRef, HeaderModifier, RouteFilter, RouteRule } from './types.ts';

/** A field of the route that svc cannot serve as the spec says. */
export interface Unsupported {
  message: string;
}

/** What a rule's filters set on its API, besides its backends. */
export interface RuleBehaviour {
  version: VersionInfo;
  /** A redirect answers every request of the rule: no backend is called. */
  redirects: boolean;
  /** The backends of the rule's `RequestMirror` filters, each with its field path. */
  mirrors: { ref: BackendRef; at: string }[];
  /** The share of requests mirrored, in percent (every mirror of a rule has the same). */
  mirrorPercent: number;
  /** Header values hold request variables (`$tyk_context.path`): the API sets `enable_context_vars`. */
  contextVars: boolean;
}

/** The listener and match a rule's filters are applied under. */
export interface FilterScope {
  scheme: 'http' | 'https';
  port: number;
  /** The request host when the API serves one host only (no wildcard); else undefined. */
  host: string | undefined;
  /** The path match of the API: an exact path, or a prefix (`/` for every path). */
  path: { exact: boolean; value: string };
}

/** `1h2m3s500ms` (the spec's Duration) in milliseconds; undefined when it does not parse. */
export function durationMs(text: string): number | undefined {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)(ms|h|m|s)/g)) {
    const v = Number(n);
    ms += unit === 'h' ? v * 3_600_000 : unit === 'm' ? v * 60_000 : unit === 's' ? v * 1000 : v;
  }
  return ms;
}

/** The escaped form of text inside a regular expression. */
export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function headers(mod: HeaderModifier | undefined): {
  set: Record<string, string>;
  add: Record<string, string>;
  remove: string[];
} {
  const set: Record<string, string> = {};
  for (const h of mod?.set ?? []) set[h.name.toLowerCase()] = h.value;
  const add: Record<string, string> = {};
  for (const h of mod?.add ?? []) add[h.name.toLowerCase()] = h.value;
  return { set, add, remove: (mod?.remove ?? []).map((h) => h.toLowerCase()) };
}

/** The path a prefix rewrite or redirect leads to: the prefix replaced, the rest kept. */
function prefixTarget(replacement: string): string {
  return replacement === '/' ? '' : replacement.replace(/\/+$/, '');
}

/**
 * The API settings of a rule's filters and timeouts under `scope`, with the problems of what
 * cannot be served. Filters of backendRefs are refused (svc applies filters per rule).
 */
export function ruleBehaviour(
  rule: RouteRule,
  at: string,
  scope: FilterScope,
  problems: Unsupported[],
): RuleBehaviour {
  const version: VersionInfo = { name: 'Default' };
  const extended: NonNullable<VersionInfo['extended_paths']> = {};
  let redirects = false;
  const mirrors: RuleBehaviour['mirrors'] = [];
  let mirrorPercent = 100;
  let contextVars = false;
  (rule.filters ?? []).forEach((f: RouteFilter, i) => {
    const where = `${at}.filters[${i}]`;
    switch (f.type) {
      case 'RequestHeaderModifier': {
        const h = headers(f.requestHeaderModifier);
        if (Object.keys(h.set).length > 0) version.global_headers = { ...version.global_headers, ...h.set };
        if (Object.keys(h.add).length > 0)
          version.global_headers_append = { ...version.global_headers_append, ...h.add };
        if (h.remove.length > 0)
          version.global_headers_remove = [...(version.global_headers_remove ?? []), ...h.remove];
        break;
      }
      case 'ResponseHeaderModifier': {
        const h = headers(f.responseHeaderModifier);
        if (Object.keys(h.set).length > 0)
          version.global_response_headers = { ...version.global_response_headers, ...h.set };
        if (Object.keys(h.add).length > 0)
          version.global_response_headers_append = { ...version.global_response_headers_append, ...h.add };
        if (h.remove.length > 0)
          version.global_response_headers_remove = [
            ...(version.global_response_headers_remove ?? []),
            ...h.remove,
          ];
        break;
      }
      case 'URLRewrite': {
        const r = f.urlRewrite ?? {};
        if (r.hostname !== undefined) {
          // The Host the backend gets: set on the request, and sent as it is (every generated API
          // has preserve_host_header, apis.ts).
          version.global_headers = { ...version.global_headers, host: r.hostname };
        }
        const p = r.path;
        if (p?.type === 'ReplaceFullPath') {
          // The whole path replaced, the query kept.
          extended.url_rewrites = [
            { path: '/', match_pattern: '^[^?]*(\\?.*)?$', rewrite_to: `${p.replaceFullPath ?? '/'}$1` },
          ];
        } else if (p?.type === 'ReplacePrefixMatch') {
          if (scope.path.exact) {
            problems.push({
              message: `${where}.urlRewrite.path.replacePrefixMatch: Invalid value: needs a PathPrefix match`,
            });
          } else {
            extended.url_rewrites = [
              {
                path: '/',
                match_pattern: '^/?(.*)$',
                rewrite_to: `${prefixTarget(p.replacePrefixMatch ?? '/')}/$1`,
              },
            ];
          }
        }
        break;
      }
      case 'RequestRedirect': {
        const r = f.requestRedirect ?? {};
        const scheme = r.scheme ?? scope.scheme;
        const sameSchemeAndPort =
          (r.scheme === undefined || r.scheme === scope.scheme) && r.port === undefined;
        // The host: the one asked for, the one the API serves, else the request's own Host
        // header (with the port the client wrote: the listener's), when neither the scheme nor
        // the port changes.
        const host =
          r.hostname ?? scope.host ?? (sameSchemeAndPort ? '$tyk_context.headers_Host' : undefined);
        // The path: the one asked for, an Exact match's own, else the request's.
        let path: string | undefined;
        if (r.path?.type === 'ReplaceFullPath') path = r.path.replaceFullPath ?? '/';
        else if (r.path === undefined) path = scope.path.exact ? scope.path.value : '$tyk_context.path';
        if (host === undefined || path === undefined) {
          problems.push({
            message: `${where}.requestRedirect: Unsupported value: svc cannot build this Location: ${
              host === undefined
                ? 'set hostname (or serve one host) when the scheme or port changes'
                : 'a path.replacePrefixMatch redirect is not served yet (use replaceFullPath)'
            }`,
          });
          break;
        }
        // The port: the one asked for, else the listener's, left out when it is the scheme's own
        // (and when the host is the request's, which carries it).
        const port = r.port ?? (r.scheme !== undefined && r.scheme !== scope.scheme ? undefined : scope.port);
        const defaultPort = scheme === 'https' ? 443 : 80;
        const dynamicHost = host.startsWith('$tyk_context.');
        const location = `${scheme}://${host}${dynamicHost || port === undefined || port === defaultPort ? '' : `:${port}`}${path}`;
        if (location.includes('$tyk_context.')) {
          // Made per request: a response header the mock answer carries (its own headers would win).
          version.global_response_headers = { ...version.global_response_headers, location };
          extended.mock_response = [{ path: '/', code: r.statusCode ?? 302 }];
          contextVars = true;
        } else {
          extended.mock_response = [{ path: '/', code: r.statusCode ?? 302, headers: { location } }];
        }
        redirects = true;
        break;
      }
      case 'RequestMirror': {
        const m = f.requestMirror;
        if (m === undefined) break;
        const fraction = m.fraction;
        const percent =
          m.percent ??
          (fraction === undefined
            ? 100
            : Math.min(100, (fraction.numerator / (fraction.denominator ?? 100)) * 100));
        if (mirrors.length > 0 && percent !== mirrorPercent) {
          problems.push({
            message: `${where}.requestMirror: Unsupported value: svc mirrors the same share of requests to every mirror of a rule (${String(mirrorPercent)}% before this one)`,
          });
          break;
        }
        mirrorPercent = percent;
        mirrors.push({ ref: m.backendRef, at: `${where}.requestMirror.backendRef` });
        break;
      }
      default:
        problems.push({
          message: `${where}.type: Unsupported value: "${f.type}": supported values: "RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite", "RequestMirror"`,
        });
    }
  });
  if (mirrors.length > 0 && (rule.filters ?? []).some((f) => f.type === 'RequestRedirect')) {
    problems.push({
      message: `${at}.filters: Unsupported value: a RequestMirror beside a RequestRedirect: svc answers the redirect itself and mirrors only requests it sends to a backend`,
    });
  }
  (rule.backendRefs ?? []).forEach((b, i) => {
    if ((b.filters ?? []).length > 0) {
      problems.push({
        message: `${at}.backendRefs[${i}].filters: Unsupported value: svc applies filters per rule: move them to the rule's filters`,
      });
    }
  });
  const timeouts = rule.timeouts ?? {};
  const limits: number[] = [];
  for (const field of ['request', 'backendRequest'] as const) {
    const text = timeouts[field];
    if (text === undefined) continue;
    const ms = durationMs(text);
    if (ms === undefined) {
      problems.push({
        message: `${at}.timeouts.${field}: Invalid value: "${text}": a duration such as "5s" or "500ms"`,
      });
    } else if (ms > 0) limits.push(ms / 1000);
  }
  if (limits.length > 0) extended.hard_timeouts = [{ path: '/', timeout: Math.min(...limits) }];
  if (Object.keys(extended).length > 0) {
    version.use_extended_paths = true;
    version.extended_paths = extended;
  }
  return { version, redirects, mirrors, mirrorPercent, contextVars };
}
