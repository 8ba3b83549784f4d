/**
 * What the gateway hands every middleware when it compiles: the framework (`pipeline/`) knows
 * the shape of a middleware but not the gateway's parts, so the gateway binds them here, above
 * the parts and below the middleware that use them (docs/design/gateway.md, "Middleware").
 */
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Counters } from '../limits/counters.ts';
import type { LimitsGuard } from '../limits/guard.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Middleware } from '../pipeline/middleware.ts';
import type { Sessions } from '../sessions/sessions.ts';
import type { Collection, Store } from '../store/store.ts';
import type { StreamsEngine } from '../streams/engine.ts';
import type { RouteLookup } from '../upstream/internal.ts';

/** What middleware may use when they compile. */
export interface MiddlewareDeps {
  /** Documents: APIs, policies, keys. */
  store: Store;
  /** Counters of limits and quotas. */
  counters: Counters;
  /** Runs counter operations; what to do while they are unreachable. */
  limits: LimitsGuard;
  /** The gateway's metrics, when kept (`metrics_enabled`). */
  metrics?: Metrics | undefined;
  /** Keys with their policies applied, cached per process. */
  sessions: Sessions;
  log: Logger;
  config: Readonly<GatewayConfig>;
  /** Milliseconds since the epoch (tests inject a clock). */
  now: () => number;
  /**
   * A key was written or deleted on the request path (an OAuth token revoked): every gateway
   * process forgets what it cached of it. Absent: only this process's caches are told.
   */
  changed?: ((collection: Collection, id: string) => Promise<void>) | undefined;
  /**
   * The gateway's streams on Bento (gateway/streams/), for the streams middleware: which APIs
   * have streams running (`hasStreams`, read when a route compiles) and where each endpoint goes.
   */
  streams?: StreamsEngine | undefined;
  /**
   * The APIs of the route table being built, by the host of an internal target (`svc://<api>`:
   * an API ID or name), looked up on the request path: the data graph's sources that are other
   * APIs of the gateway.
   */
  routes?: RouteLookup | undefined;
}

/** A middleware of this gateway. */
export type GatewayMiddleware = Middleware<MiddlewareDeps>;
