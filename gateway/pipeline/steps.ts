/**
 * The three kinds of step a middleware compiles into, each behind its constructor, so that
 * `create` always returns what one of them made (and the runners in compose.ts pick the cheapest
 * way to run a chain from the kinds it holds: `chainKind`):
 * - `before(ctx => ...)`: acts before the rest of the chain and never waits;
 * - `waits(ctx => ...)`: acts before the rest of the chain, may wait (store, counters);
 * - `around(async (ctx, next) => ...)`: works around `next()` (sees the upstream's answer).
 * Each returns a refusal (`reject`), an answer (`respond`), or undefined to let the request go on.
 * `close` frees what `create` opened, once the route table holding the step is retired.
 */
import type { RequestContext } from './context.ts';
import type { Closes, CompiledMiddleware, Handler, Rejection, SyncStep, WaitStep } from './middleware.ts';

/** A step that acts before the rest of the chain only and never waits (see `SyncStep`). */
export function before(
  fn: (ctx: RequestContext) => Rejection | undefined,
  opts: Closes = {},
): SyncStep & Closes {
  return { before: fn, ...opts };
}

/** A step that acts before the rest of the chain only and may wait (see `WaitStep`). */
export function waits(
  fn: (ctx: RequestContext) => Rejection | undefined | Promise<Rejection | undefined>,
  opts: Closes = {},
): WaitStep & Closes {
  return { wait: fn, ...opts };
}

/** A step that works around the rest of the chain: `next()` runs it (see `Handler`). */
export function around(fn: Handler, opts: Closes = {}): CompiledMiddleware {
  return { handle: fn, ...opts };
}
