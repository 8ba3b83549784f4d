/**
 * Internal targets (`svc://<api>/<path>?<query>`, schemas/rules/internal-target.ts): the
 * request goes on, in process, through the compiled chain of another API of the same route table
 * (its authentication, limits and middleware, then its own upstream), with `<path>` as its path,
 * as the reference gateway hands a looped request on (`handedPath`): a path under the API's
 * listen path is read as a client's; any other is matched as `<its listen path><path>` and sent
 * upstream as `<path>`, after the target's path, whether the API strips its listen path or not (a
 * URL rewrite that hands a request with nothing after its listen path on to `/`: nothing after
 * it, no slash added). No socket, no second parse: the same request and response objects
 * are handed over, with what the first API did to the request (headers, body, method, path).
 * `<api>` is `self` (the API the request is on), an API ID, or an API's name
 * (`resolveInternalTarget`). APIs with `internal: true`, and endpoints listed in `internal`
 * (middleware/internal-endpoints), are reachable this way only (`cameThroughInternalTarget`).
 *
 * A request that comes back to another API it already went through (A -> B -> A) is cut with 508
 * `Loop detected`, as is one that comes back to the API it is on (`svc://self/...`) with the
 * method and path it had there before, and one past MAX_INTERNAL_HOPS hops; a target API that is
 * not loaded gets 502, as does a name several APIs have.
 */
import type { IncomingMessage } from 'node:http';
import { respondError } from '../pipeline/compose.ts';
import { HttpContext, type RequestContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { coversPath, type Route, type Target } from '../pipeline/router.ts';
import { upstreamPathOf } from './proxy.ts';
import { ambiguousTargetMessage, SELF } from '../../schemas/rules/internal-target.ts';

/** The APIs each request went through so far, by the client request they share. */
const hops = new WeakMap<IncomingMessage, readonly string[]>();

/** Each API, method and path a request was on so far (`<id> <method> <path>`). */
const visited = new WeakMap<IncomingMessage, ReadonlySet<string>>();

/** The contexts of requests handed over by an internal target (never a client's own). */
const handedOver = new WeakSet<RequestContext>();

/**
 * Whether the request reached this API through an internal target of an API of the gateway
 * (`svc://`: a target URL, a URL rewrite), not from a client: internal endpoints serve only these.
 */
export function cameThroughInternalTarget(ctx: RequestContext): boolean {
  return handedOver.has(ctx);
}

/**
 * Marks a request another API of the gateway hands to this one in process (a data graph's
 * `svc://` source, gateway/graphql/internal-sources.ts), as an internal target does.
 */
export function markHandedOver(ctx: RequestContext, listenPathAdded: boolean): void {
  handedOver.add(ctx);
  // The hand-over put the API's listen path before the target's path (`handedPath`): the API
  // matches on it, and sends the target's path alone upstream.
  ctx.listenPathAdded = listenPathAdded;
}

/** The most APIs one request may go through (loops are cut before; this bounds long chains). */
export const MAX_INTERNAL_HOPS = 16;

/** 508: the request came back to an API it went through. */
export function loopDetected(path: readonly string[]): GatewayError {
  return new GatewayError(
    'GW_ERR_LOOP_DETECTED',
    508,
    `Loop detected: internal targets lead back to an API the request went through (${path.join(' -> ')})`,
  );
}

/** 502: the internal target names an API the gateway does not hold. */
export function internalTargetMissing(id: string): GatewayError {
  return new GatewayError(
    'GW_ERR_INTERNAL_TARGET_NOT_FOUND',
    502,
    `Internal target API ${id} is not loaded on this gateway`,
  );
}

/**
 * 502: the internal target names an API by a name several APIs of the gateway have. As a missing
 * target, a condition of the gateway's set of APIs, which changes after the definition was
 * written: the definition stays loaded, and its requests to that target get this until the names
 * differ (or the target is written with an API ID).
 */
export function internalTargetAmbiguous(host: string, ids: readonly string[]): GatewayError {
  return new GatewayError('GW_ERR_INTERNAL_TARGET_AMBIGUOUS', 502, ambiguousTargetMessage(host, ids));
}

/**
 * Finds a compiled API of the request's route table (served or internal) by the host of an
 * internal target other than `self`: an API ID, else an API's name (resolveInternalTarget);
 * `ambiguous` when several APIs have that name.
 */
export type RouteLookup = (host: string) => Route | { ambiguous: string[] } | undefined;

/** Where an internal target hands a request on: the next API, and what it sees. */
export interface InternalHop {
  next: Route;
  /**
   * The path the next API sees (`handedPath`: the target's path, after the API's listen path
   * unless it is under it), and the query.
   */
  path: string;
  /** The API's listen path was put before the target's path (`RequestContext.listenPathAdded`). */
  added: boolean;
  query: string;
  /** The method the first API sends on (`method_transforms`), which the next API sees. */
  method: string;
  /** The APIs the request went through, this one included, and the states it was in. */
  hops: readonly string[];
  visited: ReadonlySet<string>;
}

/** The calling API's path settings and, once compiled, the calling route itself (`self`). */
export interface CallingRoute {
  listenPath: string;
  strip: boolean;
  keepSlash: boolean;
  self: () => Route | undefined;
}

/**
 * Plans the hop of a request on `ctx` (whose route is the calling API) to the internal target
 * `target`: the next API and the path, query and method it sees; or the refusal (502 for a
 * target not loaded or ambiguous, 508 for a loop or past MAX_INTERNAL_HOPS). `before` and `seen`
 * are what the request went through so far (undefined: nothing yet, this is its first hop).
 * Both the real call (`internalCall`) and the dry run (server/explain.ts) follow a target this way.
 */
export function planInternalHop(
  ctx: RequestContext,
  target: Target,
  route: CallingRoute,
  lookup: RouteLookup,
  before: readonly string[] | undefined,
  seen: ReadonlySet<string> | undefined,
): InternalHop | { refused: GatewayError } {
  const next = target.host.toLowerCase() === SELF ? route.self() : lookup(target.host);
  if (next === undefined) return { refused: internalTargetMissing(target.host) };
  if ('ambiguous' in next) return { refused: internalTargetAmbiguous(target.host, next.ambiguous) };
  const id = next.id;
  const went = before ?? [ctx.route.id];
  const states = seen ?? new Set([`${ctx.route.id} ${ctx.method} ${ctx.path}`]);
  const full = upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstream.path, ctx.listenPathAdded);
  const q = full.indexOf('?');
  let rest = q === -1 ? full : full.slice(0, q);
  const query = q === -1 ? '' : full.slice(q);
  // A URL rewrite sees a request with nothing after the listen path as `/` (endpointPath); one
  // that hands that `/` on as it is (`^/?(.*)$` to `svc://<api>/$1`, or to
  // `svc://<api><its listen path>/$1`) gives the next API nothing after its listen path either:
  // the client sent no trailing slash, so none is added. The same for a target without a path
  // (`svc://<api>`) of an API that strips its listen path: nothing is handed on.
  if (
    next.listenPath !== '' &&
    ctx.path.length <= route.listenPath.length &&
    (ctx.upstream.path === undefined ? route.strip && rest === '/' : ctx.upstream.path === rest) &&
    (rest === '/' || rest.toLowerCase() === `${next.listenPath.toLowerCase()}/`)
  ) {
    rest = rest === '/' ? '' : rest.slice(0, -1);
  }
  const { path, added } = handedPath(next, rest);
  // The method the first API sends on (`method_transforms`) is the one the next API sees.
  const method = ctx.upstream.method ?? ctx.method;
  const here = `${id} ${method} ${path}`;
  const back = id === ctx.route.id ? states.has(here) : went.includes(id);
  if (back || went.length >= MAX_INTERNAL_HOPS) return { refused: loopDetected([...went, id]) };
  return { next, path, added, query, method, hops: [...went, id], visited: new Set([...states, here]) };
}

/**
 * The path an API is handed a request on for the target's path `rest` (`svc://<api><rest>`), as
 * the reference gateway hands a looped request on with that path alone: `rest` itself when it is
 * under the API's listen path (the API then reads it as a client's request for that path), else
 * the listen path followed by `rest`, `added`: the API routes and matches its endpoints on
 * `rest`, and sends `rest` upstream after its target's path (`RequestContext.listenPathAdded`),
 * whether it strips its listen path or not.
 */
export function handedPath(next: { listenPath: string }, rest: string): { path: string; added: boolean } {
  if (next.listenPath === '' || (rest !== '' && coversPath(next.listenPath, rest))) {
    return { path: rest, added: false };
  }
  return { path: next.listenPath + rest, added: true };
}

/**
 * The terminal step towards an internal target: runs the target API's chain on the request.
 * `route` is the calling API's path settings (its listen path and strip) and, once compiled, the
 * calling route itself (`self`, the target `svc://self`).
 */
export function internalCall(
  route: CallingRoute,
  lookup: RouteLookup,
): (ctx: HttpContext, target: Target) => Promise<void> {
  return async (ctx, target) => {
    const hop = planInternalHop(ctx, target, route, lookup, hops.get(ctx.req), visited.get(ctx.req));
    if ('refused' in hop) {
      respondError(ctx, hop.refused);
      return;
    }
    const { next, path, query, method } = hop;
    hops.set(ctx.req, hop.hops);
    visited.set(ctx.req, hop.visited);
    ctx.req.method = method;
    const inner = new HttpContext({
      req: ctx.req,
      res: ctx.res,
      route: next,
      listener: ctx.listener,
      path,
      query,
      log: ctx.log,
      hopOf: ctx,
    });
    markHandedOver(inner, hop.added);
    // What the first API did to the request and to its answer carries over.
    inner.upstream.body = ctx.upstream.body;
    inner.upstream.bodyLimit = ctx.upstream.bodyLimit;
    Object.assign(inner.responseHeaders, ctx.responseHeaders);
    inner.upstream.removedResponseHeaders = ctx.upstream.removedResponseHeaders;
    inner.upstream.appendedResponseHeaders = ctx.upstream.appendedResponseHeaders;
    inner.upstream.transformResponse = ctx.upstream.transformResponse;
    inner.upstream.responseHook = ctx.upstream.responseHook;
    inner.upstream.tap = ctx.upstream.tap;
    await next.handle(inner);
    ctx.upstreamStatus = inner.upstreamStatus ?? (ctx.res.headersSent ? ctx.res.statusCode : undefined);
  };
}
