/**
 * Cross-origin resource sharing (`CORS`), as the reference gateway answers it (its CORS library's
 * rules), first in the chain so that a browser's preflight needs no credentials:
 * - `allowed_origins`: exact origins, `*` (any; also when the list is empty), or one `*` wildcard
 *   inside an origin (`https://*.example.com`); compared without case.
 * - `allowed_methods` (default GET, POST, HEAD; OPTIONS is always allowed) and `allowed_headers`
 *   (default Origin, Accept, Content-Type, X-Requested-With; `*` allows any; `Origin` always).
 * - A preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) is answered by the
 *   gateway with 204 and no body, unless `options_passthrough`: then its headers are added and
 *   the request goes on to the upstream like any other. Allowed, the answer carries
 *   `Access-Control-Allow-Origin`, `-Allow-Methods` (the method asked), `-Allow-Headers` (the
 *   headers asked), `-Allow-Credentials` and `-Max-Age` (when `max_age` > 0); refused, none of
 *   them. `Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers` either way.
 * - Any other request with an allowed `Origin` and method gets `Access-Control-Allow-Origin`,
 *   `-Expose-Headers` (`exposed_headers`) and `-Allow-Credentials` on its answer (the upstream's,
 *   or the gateway's refusal); every request gets `Vary: Origin`.
 * - `Access-Control-Allow-Origin` is `*` when any origin is allowed and credentials are not;
 *   otherwise the request's origin (browsers refuse `*` with credentials).
 * - `debug` logs each decision at debug level.
 */
import type { CorsConfig, GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { respond } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import type { RequestContext } from '../../pipeline/context.ts';

const DEFAULT_METHODS = ['GET', 'POST', 'HEAD'];
const DEFAULT_HEADERS = ['origin', 'accept', 'content-type', 'x-requested-with'];
const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';

/** A CORS configuration, compiled. */
export interface CompiledCors {
  anyOrigin: boolean;
  origins: ReadonlySet<string>;
  /** Origins with one `*`: what comes before and after it. */
  wildcards: readonly { prefix: string; suffix: string }[];
  methods: ReadonlySet<string>;
  anyHeader: boolean;
  headers: ReadonlySet<string>;
  exposed: string;
  credentials: boolean;
  maxAge: number;
  passthrough: boolean;
  debug: boolean;
}

const isOn = (c: CorsConfig | undefined): c is CorsConfig => c?.enable === true;

/** Compiles `CORS`; undefined when it is off. */
export function compileCors(c: CorsConfig | undefined): CompiledCors | undefined {
  if (!isOn(c)) return undefined;
  const given = (c.allowed_origins ?? []).map((o) => o.trim().toLowerCase()).filter((o) => o !== '');
  const anyOrigin = given.length === 0 || given.includes('*');
  const origins = new Set<string>();
  const wildcards: { prefix: string; suffix: string }[] = [];
  for (const o of given) {
    const star = o.indexOf('*');
    if (star < 0) origins.add(o);
    else wildcards.push({ prefix: o.slice(0, star), suffix: o.slice(star + 1) });
  }
  const methods = (c.allowed_methods ?? []).map((m) => m.trim().toUpperCase()).filter((m) => m !== '');
  const headers = (c.allowed_headers ?? []).map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  return {
    anyOrigin,
    origins,
    wildcards,
    methods: new Set([...(methods.length === 0 ? DEFAULT_METHODS : methods), 'OPTIONS']),
    anyHeader: headers.includes('*'),
    headers: new Set([...(headers.length === 0 ? DEFAULT_HEADERS : headers), 'origin']),
    exposed: (c.exposed_headers ?? [])
      .map((h) => h.trim())
      .filter((h) => h !== '')
      .join(', '),
    credentials: c.allow_credentials === true,
    maxAge: c.max_age ?? 0,
    passthrough: c.options_passthrough === true,
    debug: c.debug === true,
  };
}

/** Whether `origin` may make cross-origin requests. */
export function originAllowed(cors: CompiledCors, origin: string): boolean {
  if (cors.anyOrigin) return true;
  const o = origin.toLowerCase();
  if (cors.origins.has(o)) return true;
  return cors.wildcards.some(
    (w) => o.length >= w.prefix.length + w.suffix.length && o.startsWith(w.prefix) && o.endsWith(w.suffix),
  );
}

/** Whether every header a preflight asks for is allowed. */
function headersAllowed(cors: CompiledCors, asked: string[]): boolean {
  return cors.anyHeader || asked.every((h) => cors.headers.has(h));
}

function allowOrigin(cors: CompiledCors, origin: string): string {
  return cors.anyOrigin && !cors.credentials ? '*' : origin;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The headers of a preflight's answer; undefined when it is refused (`why` says why). */
function preflightHeaders(
  cors: CompiledCors,
  ctx: RequestContext,
  origin: string,
  method: string,
): { headers: Record<string, string> } | { why: string } {
  if (!originAllowed(cors, origin)) return { why: 'origin not allowed' };
  const m = method.trim().toUpperCase();
  if (!cors.methods.has(m)) return { why: 'method not allowed' };
  const askedRaw = one(ctx.headers['access-control-request-headers']) ?? '';
  const asked = askedRaw
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  if (!headersAllowed(cors, asked)) return { why: 'headers not allowed' };
  const out: Record<string, string> = {
    'access-control-allow-origin': allowOrigin(cors, origin),
    'access-control-allow-methods': m,
  };
  if (asked.length > 0) out['access-control-allow-headers'] = asked.join(', ');
  if (cors.credentials) out['access-control-allow-credentials'] = 'true';
  if (cors.maxAge > 0) out['access-control-max-age'] = String(cors.maxAge);
  return { headers: out };
}

/** See the module comment. */
export const cors: GatewayMiddleware = {
  name: 'cors',
  enabled: (api: GatewayApiDefinition) => isOn(api.CORS),
  create: (api) => {
    const c = compileCors(api.CORS);
    if (c === undefined) throw new Error('cors: compiled for an API without CORS');
    return around(async (ctx, next) => {
      const origin = one(ctx.headers.origin);
      const asked = one(ctx.headers['access-control-request-method']);
      if (ctx.method === 'OPTIONS' && origin !== undefined && asked !== undefined) {
        const r = preflightHeaders(c, ctx, origin, asked);
        if (c.debug) {
          ctx.log.debug('cors preflight', {
            origin,
            method: asked,
            allowed: 'headers' in r,
            ...('why' in r ? { reason: r.why } : {}),
          });
        }
        const headers = { vary: PREFLIGHT_VARY, ...('headers' in r ? r.headers : {}) };
        if (!c.passthrough) return respond(ctx, 204, '', headers);
        Object.assign(ctx.responseHeaders, headers);
        await next();
        return undefined;
      }
      ctx.responseHeaders.vary = 'Origin';
      if (origin !== undefined) {
        const allowed = originAllowed(c, origin) && c.methods.has(ctx.method.toUpperCase());
        if (c.debug) ctx.log.debug('cors request', { origin, method: ctx.method, allowed });
        if (allowed) {
          ctx.responseHeaders['access-control-allow-origin'] = allowOrigin(c, origin);
          if (c.exposed !== '') ctx.responseHeaders['access-control-expose-headers'] = c.exposed;
          if (c.credentials) ctx.responseHeaders['access-control-allow-credentials'] = 'true';
        }
      }
      await next();
      return undefined;
    });
  },
};
