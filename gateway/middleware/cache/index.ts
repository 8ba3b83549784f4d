/**
 * Response caching (`cache_options`, and the version's `extended_paths.cache` and
 * `advance_cache_config`). With `enable_cache`, a request is cached when it is a GET, HEAD or
 * OPTIONS (the safe methods, as the reference) and either `cache_all_safe_requests` is set, its path is in the `cache` list, or an
 * `advance_cache_config` entry matches its method and path (the entry's `timeout` and
 * `cache_response_codes` then replace the API's; an entry for another method is refused when
 * written, schemas/rules/endpoints.ts). The first answer is the upstream's, stored for
 * `cache_timeout` seconds (default 60) when its status is in `cache_response_codes` (any status
 * when the list is empty, as the reference); the next identical requests get it from the cache
 * with `X-Svc-Cached-Response: 1`, without an upstream call.
 *
 * - The cache key: method, path, query, the request's version and the values of the request
 *   headers named in `cache_by_headers`; entries are kept per API and, on a keyed API, per key
 *   (the key's hash): a response is never served to another key. A request with a session but no
 *   key hash (nothing to scope it by) is not cached.
 * - `enable_upstream_cache_control`: the upstream decides; a response is stored only when it
 *   carries `x-tyk-cache-action-set` (the reference's header, so migrated upstreams keep working),
 *   for the seconds in the header `cache_control_ttl_header` (default
 *   `x-tyk-cache-action-set-ttl`), else `cache_timeout`.
 * - HEAD: its own entries (the method is in the key), as the reference: the upstream's status and
 *   headers, and its Content-Length, which a hit sends again without a body (a HEAD answer whose
 *   Content-Length is past `MAX_BODY` is not stored, as the GET answer would not be).
 * - Not stored: responses with `Set-Cookie`, bodies that are not UTF-8 text or larger than
 *   `MAX_BODY`.
 * - Where: Redis when the gateway's store is Redis (shared by every node), else the memory of
 *   each gateway process (store.ts).
 *
 * It runs after authentication and limits (a hit is authenticated and counted like any request),
 * after the header changes (the hit carries the gateway's response headers), before the upstream
 * call and what wraps it (hard timeouts, circuit breakers).
 */
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { respond } from '../../pipeline/compose.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { teeTap, type RequestContext, type ResponseTap } from '../../pipeline/context.ts';
import {
  compileEndpoint,
  compileEndpointEntries,
  matchingEntry,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { CACHED_METHODS } from '../../../schemas/rules/endpoints.ts';
import { addedResponseHeaders } from '../../upstream/headers.ts';
import { acquireResponses, type CachedResponse, type ResponseStore } from './store.ts';

/** The header a cache hit carries. */
export const CACHED_HEADER = 'x-svc-cached-response';
/** The upstream header that asks for its response to be cached (`enable_upstream_cache_control`). */
export const UPSTREAM_CACHE_HEADER = 'x-tyk-cache-action-set';
/** The default of `cache_control_ttl_header`. */
export const UPSTREAM_TTL_HEADER = 'x-tyk-cache-action-set-ttl';
/** The largest body cached. */
export const MAX_BODY = 1024 * 1024;
const DEFAULT_TIMEOUT_S = 60;
/** Response headers never stored: hop-by-hop, framing, and what each answer sets itself. */
const NOT_STORED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'date',
  UPSTREAM_CACHE_HEADER,
]);

/** What decides, per request, whether and how long it is cached. */
interface Rule {
  endpoint: CompiledEndpoint;
  /** Replaces the API's `cache_timeout` (seconds). */
  timeout?: number | undefined;
  /** Replaces the API's `cache_response_codes`. */
  codes?: ReadonlySet<number> | undefined;
}

/** The cached endpoints of one version. */
interface VersionRules {
  rules: Rule[];
}

/** The cache lists of a version, compiled; undefined when it has none. */
export function compileRules(v: VersionInfo): VersionRules | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  // advance_cache_config first: its settings win over the plain list's.
  const rules: Rule[] =
    compileEndpointEntries(v, v.extended_paths?.advance_cache_config, (e) => {
      const codes = e.cache_response_codes ?? [];
      return {
        timeout: e.timeout !== undefined && e.timeout > 0 ? e.timeout : undefined,
        codes: codes.length === 0 ? undefined : new Set(codes),
      };
    }) ?? [];
  for (const path of v.extended_paths?.cache ?? []) {
    if (path === '') continue;
    rules.push({ endpoint: compileEndpoint(path, [], ignoreCase) });
  }
  return rules.length === 0 ? undefined : { rules };
}

/** The API's cache settings, compiled once. */
interface Settings {
  all: boolean;
  timeoutS: number;
  codes: ReadonlySet<number> | undefined;
  byHeaders: string[];
  upstreamControl: boolean;
  ttlHeader: string;
  keyed: boolean;
}

function settingsOf(api: GatewayApiDefinition): Settings {
  const o = api.cache_options ?? {};
  const codes = o.cache_response_codes ?? [];
  return {
    all: o.cache_all_safe_requests === true,
    timeoutS: o.cache_timeout !== undefined && o.cache_timeout > 0 ? o.cache_timeout : DEFAULT_TIMEOUT_S,
    codes: codes.length === 0 ? undefined : new Set(codes),
    byHeaders: (o.cache_by_headers ?? []).map((h) => h.trim().toLowerCase()).filter((h) => h !== ''),
    upstreamControl: o.enable_upstream_cache_control === true,
    ttlHeader: (o.cache_control_ttl_header ?? '').trim().toLowerCase() || UPSTREAM_TTL_HEADER,
    keyed: api.use_keyless !== true,
  };
}

/** Whether `api` caches anything. */
export function cacheEnabled(api: GatewayApiDefinition): boolean {
  if (api.cache_options?.enable_cache !== true) return false;
  return api.cache_options.cache_all_safe_requests === true || perVersion(api, compileRules) !== undefined;
}

/** The store key of a request: API, key scope, then a hash of what identifies the answer. */
export function cacheKey(ctx: RequestContext, s: Settings, scope: string): string {
  const h = createHash('sha256');
  h.update(`${ctx.method}\n${ctx.path}\n${ctx.query}\n${ctx.state.version ?? ''}`);
  for (const name of s.byHeaders) {
    const v = ctx.headers[name];
    h.update(`\n${name}:${Array.isArray(v) ? v.join(', ') : (v ?? '')}`);
  }
  return `${ctx.route.id}/${scope}/${h.digest('base64url')}`;
}

/** Collects the upstream response of a cached request (see ResponseTap). */
class Recorder implements ResponseTap {
  status = 0;
  headers: IncomingHttpHeaders = {};
  chunked = false;
  readonly chunks: Buffer[] = [];
  size = 0;
  tooLarge = false;
  ended = false;

  start(status: number, headers: IncomingHttpHeaders, chunked: boolean): void {
    this.status = status;
    this.headers = headers;
    this.chunked = chunked;
  }

  data(chunk: Buffer): void {
    if (this.tooLarge) return;
    // Chunked framing costs a few bytes per chunk: allowed for, then checked after decoding.
    this.size += chunk.length;
    if (this.size > MAX_BODY * 2) {
      this.tooLarge = true;
      this.chunks.length = 0;
      return;
    }
    this.chunks.push(chunk);
  }

  end(): void {
    this.ended = true;
  }
}

/** The body of a chunked message (framing, extensions and trailers removed); undefined if malformed. */
export function dechunk(framed: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let i = 0;
  for (;;) {
    const lf = framed.indexOf('\r\n', i);
    if (lf === -1) return undefined;
    const size = Number.parseInt(framed.toString('latin1', i, lf).split(';', 1)[0]?.trim() ?? '', 16);
    if (!Number.isFinite(size) || size < 0) return undefined;
    if (size === 0) return Buffer.concat(parts);
    const start = lf + 2;
    if (start + size + 2 > framed.length) return undefined;
    parts.push(framed.subarray(start, start + size));
    i = start + size + 2;
  }
}

/** What of a recorded response is stored, with its time to live; undefined when it is not. */
function storable(
  rec: Recorder,
  s: Settings,
  rule: Rule | undefined,
  head: boolean,
): { value: CachedResponse; ttlMs: number } | undefined {
  if (!rec.ended || rec.tooLarge || rec.status === 0) return undefined;
  const codes = rule?.codes ?? s.codes;
  if (codes !== undefined && !codes.has(rec.status)) return undefined;
  if (rec.headers['set-cookie'] !== undefined) return undefined;
  let ttlS = rule?.timeout ?? s.timeoutS;
  if (s.upstreamControl) {
    const asked = rec.headers[UPSTREAM_CACHE_HEADER];
    if (asked === undefined || asked === '') return undefined;
    const ttl = Number(rec.headers[s.ttlHeader]);
    if (Number.isInteger(ttl) && ttl > 0) ttlS = ttl;
  }
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(rec.headers)) {
    if (v === undefined || NOT_STORED.has(name)) continue;
    headers[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  if (head) {
    // No body: the Content-Length the upstream gave is what a hit sends again.
    const length = headLength(rec.headers['content-length']);
    if (length === undefined || length > MAX_BODY) return undefined;
    headers['content-length'] = String(length);
    return { value: { status: rec.status, headers, body: '' }, ttlMs: ttlS * 1000 };
  }
  const raw = Buffer.concat(rec.chunks);
  const body = rec.chunked ? dechunk(raw) : raw;
  if (body === undefined || body.length > MAX_BODY || !isUtf8(body)) return undefined;
  return { value: { status: rec.status, headers, body: body.toString('utf8') }, ttlMs: ttlS * 1000 };
}

/**
 * The Content-Length of an answer to HEAD; undefined when it has none (a chunked answer, whose
 * framing a hit could not repeat: not stored) or a malformed one.
 */
function headLength(v: string | undefined): number | undefined {
  return v !== undefined && /^[0-9]{1,16}$/.test(v) ? Number(v) : undefined;
}

/** The answer of a hit: the stored response, the gateway's own headers winning, as upstream. */
function answerHit(ctx: RequestContext, hit: CachedResponse, head: boolean): Rejection {
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(hit.headers)) {
    // A HEAD entry's Content-Length is sent as the answer's own (below).
    if (name === 'content-length') continue;
    if (ctx.upstream.removedResponseHeaders?.has(name) === true) continue;
    if (Object.hasOwn(ctx.responseHeaders, name)) {
      // An appended header follows the stored one, as it follows the upstream's.
      if (ctx.upstream.appendedResponseHeaders?.has(name) === true)
        headers[name] = `${v},${ctx.responseHeaders[name] ?? ''}`;
      continue;
    }
    headers[name] = v;
  }
  // The stored Vary joins the gateway's (CORS), as on the upstream's answer.
  const vary = addedResponseHeaders(
    ctx.responseHeaders,
    hit.headers.vary,
    ctx.upstream.removedResponseHeaders,
  ).vary;
  if (vary !== undefined) headers.vary = vary;
  headers[CACHED_HEADER] = '1';
  if (head) return respond(ctx, hit.status, '', headers, headLength(hit.headers['content-length']) ?? 0);
  return respond(ctx, hit.status, hit.body, headers);
}

/** See the module comment. */
export const responseCache: GatewayMiddleware = {
  name: 'cache',
  enabled: cacheEnabled,
  create: async (api, deps) => {
    const s = settingsOf(api);
    const of = perVersion(api, compileRules);
    const held = await acquireResponses(deps.store, deps.config, deps.log, deps.now);
    const store: ResponseStore = held.store;
    const handle = async (ctx: RequestContext, next: () => Promise<void>) => {
      const method = ctx.method.toUpperCase();
      let rule: Rule | undefined;
      let cached = false;
      if (CACHED_METHODS.has(method)) {
        rule = matchingEntry(of?.(ctx)?.rules, ctx);
        cached = rule !== undefined || s.all;
      }
      let scope = '-';
      if (cached && s.keyed && ctx.session !== undefined) {
        if (ctx.state.keyId === undefined) cached = false;
        else scope = ctx.state.keyId;
      }
      if (!cached) {
        await next();
        return undefined;
      }
      const key = cacheKey(ctx, s, scope);
      const hit = await store.get(key);
      const head = method === 'HEAD';
      if (hit !== undefined) return answerHit(ctx, hit, head);
      const rec = new Recorder();
      // Another tap (detailed recording) keeps hearing the response too.
      const other = ctx.upstream.tap;
      ctx.upstream.tap = other === undefined ? rec : teeTap(other, rec);
      await next();
      ctx.upstream.tap = other;
      const out = storable(rec, s, rule, head);
      // Not awaited: the client has its answer; a write that fails is a later miss.
      if (out !== undefined) void store.set(key, out.value, out.ttlMs);
      return undefined;
    };
    return around(handle, { close: held.release });
  },
};
