/**
 * The middleware contract, types only (Hono's `(c, next)` with Caddy's provision-then-serve and
 * cleanup). This is the floor of the request path: it imports nothing of the gateway above
 * `pipeline/`. What a middleware may use when it compiles (the store, counters, sessions,
 * metrics, streams) is the gateway's business, not the framework's: `Middleware` is generic over
 * it, as Hono's `Context` is over the app's `Env`, and `gateway/middleware/deps.ts` binds it.
 *
 * A middleware compiles into a step of one of three kinds, each made by its constructor in
 * steps.ts (`before`, `waits`, `around`): an author returns what the constructor gives, and the
 * runners (compose.ts) pick the cheapest way to run a chain from the kinds it holds.
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { HttpContext, RequestContext } from './context.ts';
import type { GatewayError } from './errors.ts';

/** Continues with the rest of the chain. */
export type Next = () => Promise<void>;

/** A refusal (or an answer of the gateway's own): the chain stops. Built by `reject` or `respond`. */
export interface Rejection {
  readonly rejected: GatewayError;
}

/** A step that works around the rest of the chain (`around`): runs per request, parses nothing. */
export type Handler = (ctx: RequestContext, next: Next) => Promise<Rejection | undefined>;

/**
 * A step that acts before the rest of the chain only and never waits (`before`): it refuses the
 * request (`return reject(...)`) or returns undefined to let it go on. It runs with no promise
 * and no microtask, so a chain of such steps costs what their work costs; a route whose steps
 * are all of this kind runs them in one synchronous loop (`runSteps`).
 */
export interface SyncStep {
  readonly before: (ctx: RequestContext) => Rejection | undefined;
}

/**
 * A step that acts before the rest of the chain only, and may wait on the store or counters
 * (`waits`): a refusal, undefined to go on, or a promise of either when it must wait. A step that
 * answers at once costs no promise; none costs the unwinding of an `await next()`. A route whose
 * steps are all of this kind or `SyncStep`s is served without a promise around its upstream call
 * (`runBefore`).
 */
export interface WaitStep {
  readonly wait: (ctx: RequestContext) => Rejection | undefined | Promise<Rejection | undefined>;
}

/** One step of a compiled chain, as the runners (compose.ts) see it. */
export type Step = Handler | SyncStep | WaitStep;

/** A step that acts before the rest of the chain only. */
export type BeforeStep = SyncStep | WaitStep;

/** What a step holds until its route table is retired. */
export interface Closes {
  /** Frees what `create` opened; called once, after the swap, when in-flight requests are done. */
  close?: () => void | Promise<void>;
}

/**
 * What `create` returns: one step, made by its constructor (steps.ts: `before`, `waits`,
 * `around`), and what it holds until its route table is retired.
 */
export type CompiledMiddleware = ({ handle: Handler } | SyncStep | WaitStep) & Closes;

/**
 * One middleware: `enabled` says whether an API needs it, `create` compiles everything once per
 * API at load time (CIDRs, regular expressions, keys) and returns its step. `Deps` is what the
 * gateway hands every middleware (gateway/middleware/deps.ts).
 */
export interface Middleware<Deps> {
  name: string;
  /** Whether `api` needs this middleware; `deps` for what the definition alone doesn't say. */
  enabled(api: GatewayApiDefinition, deps: Deps): boolean;
  /**
   * True when the step, for this API, reads the request body (`ctx.readBody`). The fast path
   * reads heads only, so it never serves a route with such a middleware.
   */
  readsBody?: (api: GatewayApiDefinition) => boolean;
  /**
   * The request paths (exact, as `ctx.path`) at which the step reads the body, when it reads it
   * there only (the OAuth token endpoint): requests for those paths are left to node:http, and
   * the fast path may still serve the API's other requests. Ignored with `readsBody`.
   */
  bodyPaths?: (api: GatewayApiDefinition) => readonly string[];
  /**
   * True when `create` reads more than the definition (stored certificates, plugin files): a
   * route with this middleware is compiled again at every reload, never reused.
   */
  readsOutside?: true;
  create(api: GatewayApiDefinition, deps: Deps): CompiledMiddleware | Promise<CompiledMiddleware>;
}

/** The final step of a chain on the node:http entrance: the upstream call. */
export type Terminal = (ctx: HttpContext) => Promise<void>;
