/**
 * Internal targets (`svc://<api_id>/<path>?<query>`, schemas/rules/internal-target.ts): the
 * request goes on, in process, through the compiled chain of another API of the same route table
 * (its authentication, limits and middleware, then its own upstream), as if a client had called
 * `<its listen path><path>`. No socket, no second parse: the same request and response objects
 * are handed over, with what the first API did to the request (headers, body, method, path).
 * APIs with `internal: true` are reachable this way only.
 *
 * A request that comes back to an API it already went through (A -> B -> A, or A -> A) is cut
 * with 508 `Loop detected`; a target API that is not loaded gets 502.
 */
import type { IncomingMessage } from 'node:http';
import { respondError } from '../pipeline/compose.ts';
import { HttpContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { Route, Target } from '../pipeline/router.ts';
import { upstreamPathOf } from './proxy.ts';

/** The APIs each request went through so far, by the client request they share. */
const hops = new WeakMap<IncomingMessage, readonly string[]>();

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

/** Finds a compiled API of the request's route table by ID (served or internal). */
export type RouteLookup = (id: string) => Route | undefined;

/**
 * The terminal step towards an internal target: runs the target API's chain on the request.
 * `route` is the calling API's path settings (its listen path and strip).
 */
export function internalCall(
  route: { listenPath: string; strip: boolean },
  lookup: RouteLookup,
): (ctx: HttpContext, target: Target) => Promise<void> {
  return async (ctx, target) => {
    const id = target.host;
    const before = hops.get(ctx.req) ?? [ctx.route.id];
    if (before.includes(id) || before.length >= MAX_INTERNAL_HOPS) {
      respondError(ctx, loopDetected([...before, id]));
      return;
    }
    const next = lookup(id);
    if (next === undefined) {
      respondError(ctx, internalTargetMissing(id));
      return;
    }
    const full = upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstreamPath);
    const q = full.indexOf('?');
    const rest = q === -1 ? full : full.slice(0, q);
    const query = q === -1 ? '' : full.slice(q);
    hops.set(ctx.req, [...before, id]);
    // The method the first API sends on (`method_transforms`) is the one the next API sees.
    ctx.req.method = ctx.upstreamMethod ?? ctx.method;
    const inner = new HttpContext({
      req: ctx.req,
      res: ctx.res,
      route: next,
      listener: ctx.listener,
      path: next.listenPath + (rest === '/' && next.listenPath !== '' ? '/' : rest),
      query,
      log: ctx.log,
    });
    // What the first API did to the request and to its answer carries over.
    inner.body = ctx.body;
    inner.bodyLimit = ctx.bodyLimit;
    Object.assign(inner.responseHeaders, ctx.responseHeaders);
    inner.removedResponseHeaders = ctx.removedResponseHeaders;
    inner.transformResponse = ctx.transformResponse;
    inner.responseTap = ctx.responseTap;
    await next.handle(inner);
    ctx.upstreamStatus = inner.upstreamStatus ?? (ctx.res.headersSent ? ctx.res.statusCode : undefined);
  };
}
