/**
 * The reference gateway's variables in header values and URL rewrites, compiled once per value:
 * - `$tyk_context.<name>` (request context; with `enable_context_vars: true`, except the
 *   `trigger-*` values of URL-rewrite triggers, which are always there):
 *   `path` (the request path; handed over by an internal target, its path there, without the
 *   listen path the hand-over added: `RequestContext.requestPath`), `path_parts` (its segments joined by commas), `remote_addr` (the
 *   client address), `request_id`, `request_data` (query parameters, `name:v1,v2;name2:v`),
 *   `headers_<Name>` (a request header; `-` written `_`: `headers_X_Forwarded_For`),
 *   `cookies_<name>` (a cookie; `-` written `_`), `trigger-<n>-...` (URL-rewrite trigger matches);
 * - `$tyk_meta.<key>`: the session's `meta_data` key (keyless APIs and absent keys give '').
 * An unknown name gives '' (the reference's rule). Names other than these, and the reference's
 * secret stores (`$secret_env.` ...), are refused at write time (schemas/rules/endpoints.ts
 * `variableProblems`), so nothing here parses on the request path.
 */
import { CONTEXT_VARIABLE, META_VARIABLE } from '../../schemas/rules/endpoints.ts';
import type { RequestContext } from './context.ts';

/** A value with its variables compiled: a string, or a function of the request. */
export type Value = string | ((ctx: RequestContext) => string);

/** How variables are replaced. */
export interface VariableOptions {
  /**
   * `$tyk_context.` names other than `trigger-*` are replaced (`enable_context_vars`); when
   * false they are left as written in headers and replaced by '' in URL rewrites (the
   * reference's behaviour).
   */
  context: boolean;
  /**
   * `url`: values are query-escaped, unless they start with `http` (URL rewrites); `header`:
   * control characters are removed (a value never splits a header).
   */
  as: 'url' | 'header';
}

// eslint-disable-next-line no-control-regex -- control characters are what it removes
const CONTROL = /[\0-\x08\x0a-\x1f\x7f]/g;

function header(ctx: RequestContext, name: string): string {
  const v = ctx.headers[name.replaceAll('_', '-').toLowerCase()];
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

function cookie(ctx: RequestContext, name: string): string {
  const raw = ctx.headers.cookie;
  if (raw === undefined) return '';
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim().replaceAll('-', '_') === name) return part.slice(eq + 1).trim();
  }
  return '';
}

function requestData(ctx: RequestContext): string {
  const byName = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(ctx.query)) {
    const list = byName.get(k);
    if (list === undefined) byName.set(k, [v]);
    else list.push(v);
  }
  return [...byName].map(([k, vs]) => `${k}:${vs.join(',')}`).join(';');
}

/** The value of `$tyk_context.<name>` for a request ('' when it has none). */
export function contextValue(ctx: RequestContext, name: string, withRequest: boolean): string {
  if (name.startsWith('trigger-')) return ctx.state.vars?.[name] ?? '';
  if (!withRequest) return '';
  switch (name) {
    case 'path':
      return ctx.requestPath;
    case 'path_parts':
      return ctx.requestPath
        .split('/')
        .filter((p) => p !== '')
        .join(',');
    case 'remote_addr':
      return ctx.clientIp;
    case 'request_id':
      return ctx.requestId;
    case 'request_data':
      return requestData(ctx);
    default:
      if (name.startsWith('headers_')) return header(ctx, name.slice(8));
      if (name.startsWith('cookies_')) return cookie(ctx, name.slice(8));
      return '';
  }
}

/** The value of `$tyk_meta.<key>` for a request ('' without a session or the key). */
export function metaValue(ctx: RequestContext, key: string): string {
  const v: unknown = ctx.session?.meta_data?.[key];
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(String).join(',');
  return JSON.stringify(v);
}

/** Whether a value holds a variable. */
export function hasVariables(value: string): boolean {
  return value.includes('$tyk_context.') || value.includes('$tyk_meta.');
}

/** Compiles the variables of `value`; a value without any stays a string. */
export function compileValue(value: string, opts: VariableOptions): Value {
  if (!hasVariables(value)) return value;
  const re = new RegExp(`${CONTEXT_VARIABLE.source}|${META_VARIABLE.source}`, 'g');
  const parts: (string | ((ctx: RequestContext) => string))[] = [];
  let last = 0;
  for (const m of value.matchAll(re)) {
    parts.push(value.slice(last, m.index));
    last = m.index + m[0].length;
    const ctxName = m[1];
    const metaKey = m[2];
    if (ctxName !== undefined && !opts.context && opts.as === 'header') {
      // The reference sends a header's context variables as written unless they are enabled.
      parts.push(m[0]);
      continue;
    }
    const raw =
      ctxName !== undefined
        ? (ctx: RequestContext): string => contextValue(ctx, ctxName, opts.context)
        : (ctx: RequestContext): string => metaValue(ctx, metaKey ?? '');
    parts.push(
      opts.as === 'url'
        ? (ctx) => {
            const v = raw(ctx);
            return v.startsWith('http') ? v : encodeURIComponent(v);
          }
        : (ctx) => raw(ctx).replace(CONTROL, ''),
    );
  }
  parts.push(value.slice(last));
  return (ctx) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : p(ctx);
    return out;
  };
}

/** The value of a compiled value for a request. */
export function valueOf(v: Value, ctx: RequestContext): string {
  return typeof v === 'string' ? v : v(ctx);
}
