/**
 * The gateway's Prometheus metrics (`/metrics`), kept in a prom-client registry of their own
 * (nothing goes to prom-client's global registry). One `Metrics` per process: it observes every
 * routed request on both entrances (a `RequestObserver`), middleware record refusals, throttling
 * and upstream errors in it, and event handlers their deliveries. With `--workers` > 1 the
 * cluster primary merges every worker's registry (`aggregateMetrics`), so a scrape reaching any
 * worker reports the whole node.
 *
 * Which requests count, and under which `endpoint` label, the API says (`do_not_track`,
 * `track_endpoints`, `do_not_track_endpoints`: tracking.ts).
 *
 * Request counts and latencies are on every request's path, so they are not recorded through
 * prom-client's labelled `inc`/`observe` (about 180 ns each, measured: label validation and
 * hashing per call) but in plain arrays per API (a few nanoseconds), turned into samples when
 * scraped. Everything else is rare enough for prom-client's own metrics.
 */
import { performance } from 'node:perf_hooks';
import {
  AggregatorRegistry,
  collectDefaultMetrics,
  Counter,
  Gauge,
  Registry,
  type LabelValues,
} from 'prom-client';
import type { EventName } from '../../schemas/rules/event-handlers.ts';
import { EVENT_NAMES } from '../../schemas/rules/event-handlers.ts';
import type { RequestContext, RequestObserver } from '../pipeline/context.ts';
import { TrackingCache } from './tracking.ts';

/** Why a limit refused a request (`svc_gateway_refused_total{reason}`). */
export const REFUSAL_REASONS = [
  'rate_limit',
  'api_rate_limit',
  'endpoint_rate_limit',
  'throttle',
  'quota',
] as const;
/** One of REFUSAL_REASONS. */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** What became of an event handed to a handler (`svc_gateway_events_total{outcome}`). */
export const EVENT_OUTCOMES = ['delivered', 'failed', 'suppressed', 'dropped'] as const;
/** One of EVENT_OUTCOMES. */
export type EventOutcome = (typeof EVENT_OUTCOMES)[number];

/** One process's metrics as prom-client's `getMetricsAsJSON` gives them (what workers send). */
export type MetricsSnapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** Prometheus text format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** Seconds `svc_gateway_throttled_requests_per_second` averages over. */
export const THROTTLE_WINDOW_SECONDS = 10;

/** Latency buckets in seconds (prom-client's defaults). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
/** Method labels; anything else is `OTHER`, so clients can't create series at will. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'] as const;
/** Status classes by hundreds; `none` when no status was sent (connection cut) or outside 1xx-5xx. */
const CLASSES = ['none', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'PUT':
      return 3;
    case 'PATCH':
      return 4;
    case 'DELETE':
      return 5;
    case 'OPTIONS':
      return 6;
    default:
      return 7;
  }
}

/**
 * The requests of one API (or of one tracked endpoint of it): counts by method and status class,
 * and latencies.
 */
class ApiStats {
  /** `[method * CLASSES.length + class]`. */
  readonly requests = new Float64Array(METHODS.length * CLASSES.length);
  /** Latencies per bucket (not cumulative); the last one is above every bound. */
  readonly buckets = new Float64Array(BUCKETS.length + 1);
  sum = 0;
  count = 0;
  /** The requests of `track_endpoints` entries, by the entry's path (the `endpoint` label). */
  endpoints: Map<string, ApiStats> | undefined = undefined;

  resetRequests(): void {
    this.requests.fill(0);
    if (this.endpoints !== undefined) for (const e of this.endpoints.values()) e.resetRequests();
  }

  resetLatency(): void {
    this.buckets.fill(0);
    this.sum = 0;
    this.count = 0;
    if (this.endpoints !== undefined) for (const e of this.endpoints.values()) e.resetLatency();
  }
}

/** Every series of the request metrics: an API's own, and one per tracked endpoint of it. */
function* series(
  apis: Map<string, ApiStats>,
): Generator<[labels: { api_id: string; endpoint?: string }, stats: ApiStats]> {
  for (const [api_id, stats] of apis) {
    yield [{ api_id }, stats];
    if (stats.endpoints !== undefined)
      for (const [endpoint, e] of stats.endpoints) yield [{ api_id, endpoint }, e];
  }
}

/** A sample as prom-client's registry prints it. */
interface Sample {
  value: number;
  labels: LabelValues<string>;
  metricName?: string;
}

/**
 * A metric whose samples are computed when scraped: what prom-client's registry reads of a
 * metric (its `get()`; `reset()` for `resetMetrics`).
 */
class ComputedMetric {
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly reset: () => void;
  readonly #samples: () => Sample[];

  constructor(def: {
    name: string;
    help: string;
    type: 'counter' | 'histogram';
    samples: () => Sample[];
    reset: () => void;
  }) {
    this.name = def.name;
    this.help = def.help;
    this.type = def.type;
    this.#samples = def.samples;
    this.reset = def.reset;
  }

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const { name, help, type, aggregator } = this;
    return Promise.resolve({ name, help, type, aggregator, values: this.#samples() });
  }
}

/** Throttled requests per second over the last THROTTLE_WINDOW_SECONDS (one slot per second). */
class SlidingRate {
  readonly #counts = new Float64Array(THROTTLE_WINDOW_SECONDS);
  readonly #seconds = new Float64Array(THROTTLE_WINDOW_SECONDS).fill(-Infinity);

  mark(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    const slot = second % THROTTLE_WINDOW_SECONDS;
    if (this.#seconds[slot] !== second) {
      this.#seconds[slot] = second;
      this.#counts[slot] = 0;
    }
    this.#counts[slot] = (this.#counts[slot] ?? 0) + 1;
  }

  perSecond(nowMs: number): number {
    const second = Math.floor(nowMs / 1000);
    let n = 0;
    for (let i = 0; i < THROTTLE_WINDOW_SECONDS; i++) {
      if (second - (this.#seconds[i] ?? -Infinity) < THROTTLE_WINDOW_SECONDS) n += this.#counts[i] ?? 0;
    }
    return n / THROTTLE_WINDOW_SECONDS;
  }
}

/** The metrics of one gateway process. */
export class Metrics implements RequestObserver {
  /** The registry `/metrics` prints; nothing else writes to it. */
  readonly registry = new Registry();
  readonly #now: () => number;
  readonly #apis = new Map<string, ApiStats>();
  readonly #tracking = new TrackingCache();
  readonly #refused: Record<RefusalReason, Counter.Internal>;
  readonly #events: Map<string, Counter.Internal>;
  readonly #throttled: Counter;
  readonly #throttleRate = new SlidingRate();
  readonly #upstreamErrors: Counter;

  /**
   * `now` is the clock of the throttle window (tests inject one); `processMetrics` adds
   * prom-client's process and Node.js metrics (CPU, memory, event loop lag), on by default.
   */
  constructor(opts: { now?: () => number; processMetrics?: boolean } = {}) {
    this.#now = opts.now ?? Date.now;
    const registers = [this.registry];
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });

    const { requests, latency } = this.#requestMetrics();
    this.registry.registerMetric(requests);
    this.registry.registerMetric(latency);

    const refused = new Counter({
      name: 'svc_gateway_refused_total',
      help: 'Requests refused by a limit, by reason (rate_limit, api_rate_limit, endpoint_rate_limit, throttle: throttling gave up, quota).',
      labelNames: ['reason'],
      registers,
    });
    this.#refused = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, zero(refused.labels(r))])) as Record<
      RefusalReason,
      Counter.Internal
    >;
    this.#throttled = new Counter({
      name: 'svc_gateway_throttled_total',
      help: 'Requests made to wait and try again by throttling (each wait counts).',
      registers,
    });
    const rate = this.#throttleRate;
    const now = this.#now;
    const perSecond: Gauge = new Gauge({
      name: 'svc_gateway_throttled_requests_per_second',
      help: `ThrottledRequestsPS: throttled requests per second over the last ${THROTTLE_WINDOW_SECONDS} seconds.`,
      registers,
      collect: () => {
        perSecond.set(rate.perSecond(now()));
      },
    });
    this.#upstreamErrors = new Counter({
      name: 'svc_gateway_upstream_errors_total',
      help: 'Upstream calls that failed without a response (unreachable, reset, timed out): the 502 and 504 the gateway answers itself.',
      registers,
    });
    const events = new Counter({
      name: 'svc_gateway_events_total',
      help: 'Events handed to a handler, by event and outcome (delivered, failed after its retries, suppressed by a cooldown, dropped: queue full or handler closed).',
      labelNames: ['event', 'outcome'],
      registers,
    });
    this.#events = new Map(
      EVENT_NAMES.flatMap((e) =>
        EVENT_OUTCOMES.map((o) => [`${e} ${o}`, zero(events.labels(e, o))] as const),
      ),
    );
  }

  /** The request observer: notes when the request was routed. */
  onRequest(ctx: RequestContext): void {
    ctx.state.startedAt = performance.now();
  }

  /**
   * The request observer: counts the request and its latency under its API (and its tracked
   * endpoint), unless the API leaves it out.
   */
  onResponse(ctx: RequestContext, status: number): void {
    const tracking = this.#tracking.get(ctx.route);
    const endpoint = tracking === null ? '' : tracking(ctx);
    if (endpoint === undefined) return;
    const id = ctx.route.id;
    let stats = this.#apis.get(id);
    if (stats === undefined) {
      stats = new ApiStats();
      this.#apis.set(id, stats);
    }
    if (endpoint !== '') {
      stats.endpoints ??= new Map();
      let e = stats.endpoints.get(endpoint);
      if (e === undefined) {
        e = new ApiStats();
        stats.endpoints.set(endpoint, e);
      }
      stats = e;
    }
    const cls = status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
    const i = methodIndex(ctx.method) * CLASSES.length + cls;
    stats.requests[i] = (stats.requests[i] ?? 0) + 1;
    const started = ctx.state.startedAt;
    if (started === undefined) return;
    const seconds = (performance.now() - started) / 1000;
    let b = 0;
    while (b < BUCKETS.length && seconds > (BUCKETS[b] ?? Infinity)) b++;
    stats.buckets[b] = (stats.buckets[b] ?? 0) + 1;
    stats.sum += seconds;
    stats.count++;
  }

  /** A request refused by a limit. */
  refused(reason: RefusalReason): void {
    this.#refused[reason].inc();
  }

  /** A request made to wait by throttling; counts toward `ThrottledRequestsPS`. */
  throttled(): void {
    this.#throttled.inc();
    this.#throttleRate.mark(this.#now());
  }

  /** An upstream call that failed without a response (the gateway answered 502 or 504). */
  upstreamError(): void {
    this.#upstreamErrors.inc();
  }

  /** What became of an event handed to one handler. */
  event(name: EventName, outcome: EventOutcome): void {
    this.#events.get(`${name} ${outcome}`)?.inc();
  }

  /** This process's metrics in the Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** This process's metrics for the cluster primary to merge. */
  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }

  #requestMetrics(): { requests: Counter; latency: Counter } {
    const apis = this.#apis;
    const requests = new ComputedMetric({
      name: 'svc_gateway_requests_total',
      help: 'Requests routed to an API, by API, tracked endpoint (track_endpoints; none: the other requests), method and status class (none: no status was sent).',
      type: 'counter',
      samples: () => {
        const out: Sample[] = [];
        for (const [labels, stats] of series(apis)) {
          stats.requests.forEach((value, i) => {
            if (value === 0) return;
            const method = METHODS[Math.floor(i / CLASSES.length)] ?? 'OTHER';
            const status_class = CLASSES[i % CLASSES.length] ?? 'none';
            out.push({ value, labels: { ...labels, method, status_class } });
          });
        }
        return out;
      },
      reset: () => {
        for (const s of apis.values()) s.resetRequests();
      },
    });
    const name = 'svc_gateway_request_duration_seconds';
    const latency = new ComputedMetric({
      name,
      help: 'Seconds from routing a request to the end of its response, by API and tracked endpoint (track_endpoints; none: the other requests).',
      type: 'histogram',
      samples: () => {
        const out: Sample[] = [];
        for (const [labels, stats] of series(apis)) {
          let cumulative = 0;
          BUCKETS.forEach((le, b) => {
            cumulative += stats.buckets[b] ?? 0;
            out.push({ value: cumulative, labels: { ...labels, le }, metricName: `${name}_bucket` });
          });
          out.push({
            value: stats.count,
            labels: { ...labels, le: '+Inf' },
            metricName: `${name}_bucket`,
          });
          out.push({ value: stats.sum, labels, metricName: `${name}_sum` });
          out.push({ value: stats.count, labels, metricName: `${name}_count` });
        }
        return out;
      },
      reset: () => {
        for (const s of apis.values()) s.resetLatency();
      },
    });
    // prom-client's typings admit only its own metric classes; its registry reads `name`,
    // `type` and `get()` of any object (AggregatorRegistry registers plain objects too).
    return { requests: requests as unknown as Counter, latency: latency as unknown as Counter };
  }
}

/** A labelled series that shows as 0 before its first increment. */
function zero(child: Counter.Internal): Counter.Internal {
  child.inc(0);
  return child;
}

/** The metrics of every process of a node, merged (counters and histograms summed). */
export function aggregateMetrics(snapshots: readonly MetricsSnapshot[]): Promise<string> {
  return AggregatorRegistry.aggregate([...snapshots]).metrics();
}

/** Both observers, in order (either may be absent). */
export function joinObservers(
  a: RequestObserver | undefined,
  b: RequestObserver | undefined,
): RequestObserver | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return {
    onRequest: (ctx) => {
      a.onRequest?.(ctx);
      b.onRequest?.(ctx);
    },
    onResponse: (ctx, status) => {
      a.onResponse?.(ctx, status);
      b.onResponse?.(ctx, status);
    },
  };
}
