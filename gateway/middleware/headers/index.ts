/**
 * Header changes of the request's version, as the reference gateway makes them:
 * - to the upstream request: `global_headers_remove` then `global_headers` (every endpoint;
 *   `global_headers_disabled` turns both off), then the first `extended_paths.transform_headers`
 *   entry matching the method and path: its `delete_headers`, then its `add_headers`;
 * - to the client response: `global_response_headers_remove` then `global_response_headers`
 *   (`global_response_headers_disabled` turns both off), then the first matching
 *   `transform_response_headers` entry, the same way; then, for every version, each
 *   `header_injector` of the API's `response_processors` (in list order): its
 *   `options.remove_headers`, then its `options.add_headers`. The API-wide changes come last, so
 *   they win, as the reference's header injector applies them after the version's.
 * Names match without case; an added header replaces the client's (request) or the upstream's
 * (response); an appended one (`global_headers_append`, `global_response_headers_append`, svc
 * extensions) joins the client's value after a comma (request) or goes out after the upstream's
 * lines of that header (response: `appendedResponseHeaders`; with no upstream it is set). Values may hold the reference's variables (gateway/pipeline/variables.ts):
 * `$tyk_meta.<key>` always, `$tyk_context.<name>` with `enable_context_vars: true` (without it
 * they are sent as written, as the reference sends them); each value is compiled once.
 */
import type {
  GatewayApiDefinition,
  HeaderInjectionMeta,
  VersionInfo,
} from '../../../schemas/generated/models.ts';
import { compileValue, valueOf, type Value } from '../../pipeline/variables.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { before } from '../../pipeline/steps.ts';
import { removeRequestHeader, type RequestContext } from '../../pipeline/context.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';

/** One set of changes: names removed (lower case), then headers set, then appended (lower-case names). */
export interface HeaderChange {
  remove: string[];
  add: [string, Value][];
  append: [string, Value][];
}

interface VersionHeaders {
  request: HeaderChange | undefined;
  response: HeaderChange | undefined;
  requestEndpoints: { endpoint: CompiledEndpoint; change: HeaderChange }[];
  responseEndpoints: { endpoint: CompiledEndpoint; change: HeaderChange }[];
}

const compiledHeaders = (
  map: Readonly<Record<string, string>> | undefined,
  contextVars: boolean,
): [string, Value][] =>
  Object.entries(map ?? {})
    .filter(([n]) => n.trim() !== '')
    .map(([n, v]) => [n.trim().toLowerCase(), compileValue(v, { context: contextVars, as: 'header' })]);

function change(
  remove: readonly string[] | undefined,
  add: Readonly<Record<string, string>> | undefined,
  contextVars: boolean,
  append?: Readonly<Record<string, string>>,
): HeaderChange | undefined {
  const c: HeaderChange = {
    remove: (remove ?? []).filter((n) => n.trim() !== '').map((n) => n.trim().toLowerCase()),
    add: compiledHeaders(add, contextVars),
    append: compiledHeaders(append, contextVars),
  };
  return c.remove.length === 0 && c.add.length === 0 && c.append.length === 0 ? undefined : c;
}

function endpoints(
  v: VersionInfo,
  list: readonly HeaderInjectionMeta[] | undefined,
  contextVars: boolean,
): VersionHeaders['requestEndpoints'] {
  const out = compileEndpointEntries(v, list, (e) => {
    const c = change(e.delete_headers, e.add_headers, contextVars);
    return c === undefined ? undefined : { change: c };
  });
  return out ?? [];
}

/** The header changes of a version, compiled; undefined when it makes none. */
export function compileVersionHeaders(v: VersionInfo, contextVars = false): VersionHeaders | undefined {
  const h: VersionHeaders = {
    request:
      v.global_headers_disabled === true
        ? undefined
        : change(v.global_headers_remove, v.global_headers, contextVars, v.global_headers_append),
    response:
      v.global_response_headers_disabled === true
        ? undefined
        : change(
            v.global_response_headers_remove,
            v.global_response_headers,
            contextVars,
            v.global_response_headers_append,
          ),
    requestEndpoints: endpoints(v, v.extended_paths?.transform_headers, contextVars),
    responseEndpoints: endpoints(v, v.extended_paths?.transform_response_headers, contextVars),
  };
  const none =
    h.request === undefined &&
    h.response === undefined &&
    h.requestEndpoints.length === 0 &&
    h.responseEndpoints.length === 0;
  return none ? undefined : h;
}

/** The response header changes of the API's `header_injector` processors, in list order; undefined when none. */
export function compileApiHeaders(api: GatewayApiDefinition): HeaderChange[] | undefined {
  const contextVars = api.enable_context_vars === true;
  const changes = (api.response_processors ?? [])
    .filter((p) => p.name === 'header_injector')
    .map((p) => change(p.options?.remove_headers, p.options?.add_headers, contextVars))
    .filter((c) => c !== undefined);
  return changes.length === 0 ? undefined : changes;
}

function onRequest(ctx: RequestContext, c: HeaderChange): void {
  for (const n of c.remove) removeRequestHeader(ctx.headers, n);
  for (const [n, v] of c.add) ctx.headers[n] = valueOf(v, ctx);
  for (const [n, v] of c.append) {
    const had = ctx.headers[n];
    const value = valueOf(v, ctx);
    ctx.headers[n] =
      had === undefined || had === '' ? value : `${Array.isArray(had) ? had.join(',') : had},${value}`;
  }
}

function onResponse(ctx: RequestContext, c: HeaderChange): void {
  const plan = ctx.upstream;
  for (const n of c.remove) {
    (plan.removedResponseHeaders ??= new Set()).add(n);
    plan.appendedResponseHeaders?.delete(n);
    Reflect.deleteProperty(ctx.responseHeaders, n);
  }
  for (const [n, v] of c.add) {
    plan.removedResponseHeaders?.delete(n);
    plan.appendedResponseHeaders?.delete(n);
    ctx.responseHeaders[n] = valueOf(v, ctx);
  }
  for (const [n, v] of c.append) {
    const value = valueOf(v, ctx);
    const had = ctx.responseHeaders[n];
    if (had !== undefined) {
      // The gateway's own value already (set, or appended before): this one joins it.
      ctx.responseHeaders[n] = `${had},${value}`;
    } else if (plan.removedResponseHeaders?.has(n) === true) {
      // The upstream's header is removed: nothing to append to.
      plan.removedResponseHeaders.delete(n);
      ctx.responseHeaders[n] = value;
    } else {
      // Sent after the upstream's own lines of this header (upstream/headers.ts).
      (plan.appendedResponseHeaders ??= new Set()).add(n);
      ctx.responseHeaders[n] = value;
    }
  }
}

/** See the module comment. */
export const headers: GatewayMiddleware = {
  name: 'headers',
  enabled: (api) =>
    perVersion(api, compileVersionHeaders) !== undefined || compileApiHeaders(api) !== undefined,
  create: (api) => {
    const contextVars = api.enable_context_vars === true;
    const of = perVersion(api, (v) => compileVersionHeaders(v, contextVars));
    const apiWide = compileApiHeaders(api);
    if (of === undefined && apiWide === undefined) {
      throw new Error('headers: compiled for an API without header changes');
    }
    return before((ctx) => {
      const h = of?.(ctx);
      if (h !== undefined) {
        if (h.request !== undefined) onRequest(ctx, h.request);
        if (h.response !== undefined) onResponse(ctx, h.response);
        const req = matchingEntry(h.requestEndpoints, ctx);
        if (req !== undefined) onRequest(ctx, req.change);
        const res = matchingEntry(h.responseEndpoints, ctx);
        if (res !== undefined) onResponse(ctx, res.change);
      }
      for (const c of apiWide ?? []) onResponse(ctx, c);
      return undefined;
    });
  },
};
