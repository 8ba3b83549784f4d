/**
 * How a chain runs (Hono's compose): each step may refuse the request by returning
 * `reject(ctx, error)`, call `next()` to continue, or both do work around `next()`. The last step
 * is the upstream call. Middleware (their shape: middleware.ts) compile once per API when routes
 * load (Caddy's provision), may hold resources, and are closed when the route table that holds
 * them has been replaced and its requests have finished (Caddy's cleanup).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../../lib/errors.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { RequestContext } from './context.ts';
import { GatewayError } from './errors.ts';
import type { BeforeStep, Middleware, Rejection, Step, SyncStep, Terminal } from './middleware.ts';

/**
 * Refuses the request with `error` (the request's first refusal is the one answered). `reject`
 * notes it on the context (`RequestContext.refusal`), so `runChain` reads it once at the end
 * instead of awaiting every handler's outcome (one promise and one microtask fewer per handler,
 * on every request); a field rather than a WeakMap, whose entries cost the garbage collector.
 */
export function reject(ctx: RequestContext, error: GatewayError): Rejection {
  const refusal = { rejected: error };
  ctx.refusal ??= refusal;
  return refusal;
}

/** A header name an answer may carry (an RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A control character in a header value (HTAB is allowed). */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const BAD_HEADER_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;

/**
 * Whether an answer (`respond`) may carry the header `name: value` that a definition or a plugin
 * gave: the name a token, the value without control characters. Others are left out.
 */
export function sendableHeader(name: string, value: string): boolean {
  return HEADER_NAME.test(name) && !BAD_HEADER_VALUE.test(value);
}

/**
 * Answers the request with what the gateway makes itself instead of the upstream's (a cache hit,
 * a mock, a CORS preflight, a GraphQL result, a publish Bento took): `status`, `headers`
 * (lower-case names, with its own `content-type` if it has one; the gateway's response headers
 * join them) and `body` as they are (text, or bytes such as a gzipped file). An answer to HEAD
 * may carry the body the answer to GET carries (neither entrance sends it, both send its
 * length), or '' with `contentLength`, the length the answer to GET carries. The chain stops as
 * on a refusal, and both entrances write it the way they write one (`respondError`, the fast
 * path's writer).
 */
export function respond(
  ctx: RequestContext,
  status: number,
  body: string | Buffer,
  headers: Record<string, string> = {},
  contentLength?: number,
): Rejection {
  return reject(ctx, GatewayError.answer(status, body, headers, contentLength));
}

/** The JSON body of a refusal: `{"error": message}`, or the body of an answer (`respond`). */
export function errorBody(error: GatewayError): string | Buffer {
  return error.replyBody ?? JSON.stringify({ error: error.message });
}

/** Statuses whose answer has no body and no Content-Length (RFC 9110 §8.6). */
export function withoutBody(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}

/**
 * Writes a refusal or failure as `{"error": message}` unless the response has begun. When the
 * request body has not been read to its end, the connection closes after the answer: what is
 * left of the body must not be read as the next request, nor block it.
 */
export function respondError(
  ctx: { res: ServerResponse; req?: IncomingMessage; responseHeaders: Record<string, string> },
  error: GatewayError,
): void {
  const { res } = ctx;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorBody(error);
  const unread = ctx.req !== undefined && !ctx.req.complete;
  if (unread) res.shouldKeepAlive = false;
  // An answer (`respond`) brings its own content type, if any.
  const type = error.replyBody === undefined ? { 'content-type': 'application/json' } : {};
  const empty = withoutBody(error.status);
  res.writeHead(error.status, {
    ...ctx.responseHeaders,
    ...error.headers,
    ...type,
    ...(empty ? {} : { 'content-length': error.replyLength ?? Buffer.byteLength(body) }),
    ...(unread ? { connection: 'close' } : {}),
  });
  res.end(empty ? undefined : body);
}

/**
 * An error a request's chain threw (a bug, never a refusal): logged with a new error ID, and
 * answered 500 `Internal error (ID ...)` so the client can quote it. Both entrances use it.
 */
export function internalFailure(ctx: RequestContext, err: unknown): GatewayError {
  const errorId = randomUUID();
  ctx.log.error('request failed', { error_id: errorId, error: errorMessage(err) });
  return GatewayError.internal(errorId);
}

/** Whether every step of a chain is a `SyncStep` (then `runSteps` runs it). */
export function allSync(steps: readonly Step[]): steps is readonly SyncStep[] {
  return steps.every((s) => typeof s !== 'function' && 'before' in s);
}

/** Whether every step of a chain acts before the rest only (then `runBefore` runs it). */
export function allBefore(steps: readonly Step[]): steps is readonly BeforeStep[] {
  return steps.every((s) => typeof s !== 'function');
}

/** How a chain runs: which of `runSteps`, `runBefore` or `runChain` an entrance calls. */
export type ChainKind = 'sync' | 'before' | 'around';

const chainKinds = new WeakMap<readonly Step[], ChainKind>();

/**
 * How `handlers` run: `sync`, all steps synchronous (`runSteps`); `before`, all act before the
 * upstream call only but some may wait (`runBefore`); `around`, some work around it (`runChain`).
 * Worked out once per compiled chain and remembered.
 */
export function chainKind(handlers: readonly Step[]): ChainKind {
  let kind = chainKinds.get(handlers);
  if (kind === undefined) {
    kind = allSync(handlers) ? 'sync' : allBefore(handlers) ? 'before' : 'around';
    chainKinds.set(handlers, kind);
  }
  return kind;
}

/**
 * Runs before-only steps in order from `from`: the first refusal or undefined, at once while no
 * step waits, else a promise of it. Throws (or rejects with) what a step throws.
 */
export function runBefore(
  steps: readonly BeforeStep[],
  ctx: RequestContext,
  from = 0,
): Rejection | undefined | Promise<Rejection | undefined> {
  for (let i = from; i < steps.length; i++) {
    const s = steps[i];
    if (s === undefined) break;
    const r = 'before' in s ? s.before(ctx) : s.wait(ctx);
    if (r === undefined) continue;
    if (r instanceof Promise) {
      return r.then((refused) => refused ?? runBefore(steps, ctx, i + 1));
    }
    return r;
  }
  return undefined;
}

/** Runs synchronous steps in order: the first refusal, or undefined. Throws what a step throws. */
export function runSteps(steps: readonly SyncStep[], ctx: RequestContext): Rejection | undefined {
  for (const s of steps) {
    const refused = s.before(ctx);
    if (refused !== undefined) return refused;
  }
  return undefined;
}

/** Runs `handlers` in order, then `last`; resolves with the first refusal, if any. */
export function runChain(
  handlers: readonly Step[],
  ctx: RequestContext,
  last: () => Promise<void>,
): Promise<Rejection | undefined> {
  let index = -1;
  // Not an async function, and a handler's outcome is not awaited (`reject` notes refusals):
  // each handler costs its own promise only, and a synchronous step none.
  const dispatch = (from: number): Promise<unknown> => {
    if (from <= index) return Promise.reject(new Error('next() called more than once'));
    let i = from;
    try {
      let step = handlers[i];
      while (step !== undefined && typeof step !== 'function') {
        const r = 'before' in step ? step.before(ctx) : step.wait(ctx);
        if (r instanceof Promise) {
          const at = i;
          return r.then((refused) => (refused !== undefined ? undefined : dispatch(at + 1)));
        }
        if (r !== undefined) return Promise.resolve();
        step = handlers[++i];
      }
      index = i;
      if (step === undefined) return last();
      return step(ctx, () => dispatch(i + 1) as Promise<void>);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  };
  return dispatch(0).then(() => ctx.refusal);
}

/** The node:http chain: `handlers`, then `terminal`; a refusal is written to the response. */
export function compose(handlers: readonly Step[], terminal: Terminal): Terminal {
  if (handlers.length === 0) return terminal;
  return async (ctx) => {
    // A step may make the call itself, the rest of the chain skipped (a stream endpoint).
    ctx.upstreamCall = () => terminal(ctx);
    const refused = await runChain(handlers, ctx, () => terminal(ctx));
    if (refused !== undefined) respondError(ctx, refused.rejected);
  };
}

/** The middleware of one API, compiled in chain order. */
export interface CompiledChain {
  handlers: Step[];
  /** Whether a middleware reads the body (the fast path can't serve the route). */
  readsBody: boolean;
  /** The paths at which a middleware reads the body (`Middleware.bodyPaths`): node:http serves them. */
  bodyPaths: ReadonlySet<string>;
  /** Whether every middleware was compiled from the definition alone (see `readsOutside`). */
  fromDefinition: boolean;
  /** Closes every compiled middleware that holds resources (a function of its own: no `this`). */
  close: () => Promise<void>;
}

/** Compiles the middleware `api` needs, in chain order. */
export async function compileChain<Deps>(
  chain: readonly Middleware<Deps>[],
  api: GatewayApiDefinition,
  deps: Deps,
): Promise<CompiledChain> {
  const handlers: Step[] = [];
  const closers: (() => void | Promise<void>)[] = [];
  let readsBody = false;
  const bodyPaths = new Set<string>();
  let fromDefinition = true;
  try {
    for (const m of chain) {
      if (!m.enabled(api, deps)) continue;
      if (m.readsOutside === true) fromDefinition = false;
      const made = await m.create(api, deps);
      handlers.push(
        'before' in made ? { before: made.before } : 'wait' in made ? { wait: made.wait } : made.handle,
      );
      if (made.close !== undefined) closers.push(made.close);
      if (m.readsBody?.(api) === true) readsBody = true;
      for (const p of m.bodyPaths?.(api) ?? []) bodyPaths.add(p);
    }
  } catch (err) {
    await closeAll(closers);
    throw err;
  }
  return { handlers, readsBody, bodyPaths, fromDefinition, close: () => closeAll(closers) };
}

async function closeAll(closers: readonly (() => void | Promise<void>)[]): Promise<void> {
  for (const c of closers) {
    try {
      await c();
    } catch {
      // A close that fails leaves nothing to do for the others.
    }
  }
}
