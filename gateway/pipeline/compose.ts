/**
 * The middleware shape and how a chain runs (Hono's `(c, next)`): each handler may refuse the
 * request by returning `reject(ctx, error)`, call `next()` to continue, or both do work around
 * `next()`. The last step is the upstream call.
 */
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Store } from '../store/store.ts';
import type { RequestContext } from './context.ts';
import type { GatewayError } from './errors.ts';

/** Continues with the rest of the chain. */
export type Next = () => Promise<void>;

/** A refusal: the chain stops and the client gets the error. Built only by `reject`. */
export interface Rejection {
  readonly rejected: GatewayError;
}

/** A compiled middleware: runs per request, parses nothing. */
export type Handler = (ctx: RequestContext, next: Next) => Promise<Rejection | undefined>;

/** What middleware may use when they compile. */
export interface MiddlewareDeps {
  store: Store;
  log: Logger;
  config: Readonly<GatewayConfig>;
  /** Milliseconds since the epoch (tests inject a clock). */
  now: () => number;
}

/**
 * One middleware: `enabled` says whether an API needs it, `create` compiles everything once per
 * API at load time (CIDRs, regular expressions, keys) and returns the request handler.
 */
export interface Middleware {
  name: string;
  enabled(api: GatewayApiDefinition): boolean;
  create(api: GatewayApiDefinition, deps: MiddlewareDeps): Handler;
}

/** The final step of a chain: the upstream call. */
export type Terminal = (ctx: RequestContext) => Promise<void>;

/** Refuses the request with `error`. */
export function reject(_ctx: RequestContext, error: GatewayError): Rejection {
  return { rejected: error };
}

/** Writes a refusal or failure as `{"error": message}` unless the response has begun. */
export function respondError(
  ctx: Pick<RequestContext, 'res' | 'responseHeaders'>,
  error: GatewayError,
): void {
  const { res } = ctx;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: error.message });
  res.writeHead(error.status, {
    ...ctx.responseHeaders,
    ...error.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Runs `handlers` in order, then `terminal`. With no handler, the terminal is the chain. */
export function compose(handlers: readonly Handler[], terminal: Terminal): Terminal {
  if (handlers.length === 0) return terminal;
  return (ctx) => {
    let index = -1;
    const dispatch = async (i: number): Promise<void> => {
      if (i <= index) throw new Error('next() called more than once');
      index = i;
      const handler = handlers[i];
      if (handler === undefined) return terminal(ctx);
      const outcome = await handler(ctx, () => dispatch(i + 1));
      if (outcome !== undefined) respondError(ctx, outcome.rejected);
    };
    return dispatch(0);
  };
}

/** Builds the handler list of one API from the chain, in chain order. */
export function handlersFor(
  chain: readonly Middleware[],
  api: GatewayApiDefinition,
  deps: MiddlewareDeps,
): Handler[] {
  return chain.filter((m) => m.enabled(api)).map((m) => m.create(api, deps));
}
