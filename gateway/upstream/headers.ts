/**
 * Header rules of the proxy: hop-by-hop headers (RFC 9110 §7.6.1, plus those the Connection
 * header names) are not forwarded in either direction; `X-Forwarded-For`, `-Proto` and `-Host`
 * are set, appended to or replaced depending on whether client headers are trusted.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { RequestContext } from '../pipeline/context.ts';

/** Headers that describe one connection, never the message. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Request headers the proxy sets itself. */
export const SET_BY_PROXY = new Set([
  'host',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'expect',
]);

/** Header names listed in a Connection header (other than keep-alive/close), lower case. */
export function connectionTokens(value: string | readonly string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value : value.join(',');
  let tokens: Set<string> | undefined;
  for (const raw of text.split(',')) {
    const t = raw.trim().toLowerCase();
    if (t === '' || t === 'keep-alive' || t === 'close') continue;
    (tokens ??= new Set()).add(t);
  }
  return tokens;
}

/** The headers of the upstream request. */
export function upstreamRequestHeaders(
  ctx: RequestContext,
  targetHost: string,
  preserveHost: boolean,
): Record<string, string | string[]> {
  const given = ctx.headers;
  const extra = connectionTokens(given.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in given) {
    if (HOP_BY_HOP.has(name) || SET_BY_PROXY.has(name) || extra?.has(name) === true) continue;
    const v = given[name];
    if (v !== undefined) out[name] = v;
  }
  const host = given.host;
  out.host = preserveHost && host !== undefined ? host : targetHost;
  const peer = ctx.socketAddress;
  const trusted = ctx.listener.trustForwarded;
  const xff = given['x-forwarded-for'];
  out['x-forwarded-for'] = trusted && typeof xff === 'string' && xff !== '' ? `${xff}, ${peer}` : peer;
  const proto = given['x-forwarded-proto'];
  out['x-forwarded-proto'] =
    trusted && typeof proto === 'string' && proto !== '' ? proto : ctx.listener.protocol;
  const fwdHost = given['x-forwarded-host'];
  const clientHost = trusted && typeof fwdHost === 'string' && fwdHost !== '' ? fwdHost : host;
  if (clientHost !== undefined) out['x-forwarded-host'] = clientHost;
  return out;
}

/**
 * Whether an upstream response header (lower-case `name`) reaches the client: not hop-by-hop, not
 * named by the response's Connection header (`connectionNamed`), and not one the gateway adds
 * itself (`added`, the context's response headers, replaces the upstream's). Both entrances
 * relay by this rule, then append `added`.
 */
export function relaysResponseHeader(
  name: string,
  connectionNamed: ReadonlySet<string> | undefined,
  added: Readonly<Record<string, string>>,
  /** Headers a middleware removes from responses (`RequestContext.upstream.removedResponseHeaders`). */
  removed?: ReadonlySet<string>,
  /** Names of `added` sent after the upstream's lines, not instead (`appendedResponseHeaders`). */
  appended?: ReadonlySet<string>,
): boolean {
  return (
    !HOP_BY_HOP.has(name) &&
    connectionNamed?.has(name) !== true &&
    (!Object.hasOwn(added, name) || appended?.has(name) === true) &&
    removed?.has(name) !== true
  );
}

/**
 * `Vary` values joined into one list (RFC 9110 §12.5.5), each field name once (compared without
 * case, the first spelling kept); `*` stands for every field and replaces the rest.
 */
export function mergeVary(...values: (string | readonly string[] | undefined)[]): string {
  const seen = new Map<string, string>();
  for (const v of values) {
    if (v === undefined) continue;
    for (const raw of (typeof v === 'string' ? v : v.join(',')).split(',')) {
      const name = raw.trim();
      if (name !== '' && !seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
    }
  }
  return seen.has('*') ? '*' : [...seen.values()].join(', ');
}

/**
 * The gateway's response headers (`added`) as they go out over an upstream response whose
 * `Vary` values are `upstreamVary`: `Vary` is a list a cache reads whole, so the gateway's values
 * (CORS adds `Origin`) join the upstream's instead of replacing them. Both entrances write these.
 */
export function addedResponseHeaders(
  added: Readonly<Record<string, string>>,
  upstreamVary: string | readonly string[] | undefined,
  removed?: ReadonlySet<string>,
): Readonly<Record<string, string>> {
  const own = added.vary;
  if (own === undefined || upstreamVary === undefined || removed?.has('vary') === true) return added;
  return { ...added, vary: mergeVary(upstreamVary, own) };
}

/** The headers of the client response: the upstream's minus hop-by-hop, plus the gateway's. */
export function clientResponseHeaders(
  upstream: IncomingHttpHeaders,
  added: Readonly<Record<string, string>>,
  removed?: ReadonlySet<string>,
  appended?: ReadonlySet<string>,
): OutgoingHttpHeaders {
  const extra = connectionTokens(upstream.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (!relaysResponseHeader(name, extra, added, removed, appended)) continue;
    const v = upstream[name];
    if (v !== undefined) out[name] = v;
  }
  const vary = extra?.has('vary') === true ? undefined : upstream.vary;
  const own = addedResponseHeaders(added, vary, removed);
  for (const name in own) {
    const had = out[name];
    const v = own[name];
    // An appended header goes out after the upstream's lines (a list of lines: one header).
    out[name] =
      appended?.has(name) === true && had !== undefined && v !== undefined && name !== 'vary'
        ? [...(Array.isArray(had) ? had : [String(had)]), v]
        : v;
  }
  return out;
}
