/**
 * The gateway's streams: one supervised Bento process per gateway node (lib/bento/process.ts;
 * with `--workers` the primary supervises it for every worker, host.ts), started when the first
 * API with streams loads and stopped with the gateway, and the set of streams it runs. At each reload `update` makes the desired set the streams of the stored APIs
 * (schemas/rules/streams.ts `planStreams`) and `sync` makes Bento's set equal to it through its
 * streams API: create what is new, update what changed, delete what is gone, nothing else
 * touched. When Bento dies it is started again with backoff, and every stream is put back.
 */
import cluster from 'node:cluster';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { bentoMissing, bentoPath } from '../../lib/bento/binary.ts';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BentoState } from '../../lib/bento/process.ts';
import { bentoConfig, checkStreams, deleteStream } from '../../lib/bento/streams.ts';
import {
  hasStreams,
  planStreams,
  type PlannedStream,
  type StreamEndpoint,
} from '../../schemas/rules/streams.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { StoredEntry } from '../store/store.ts';
import { hostFor, OWN_STREAM_PREFIX, type StreamsHost } from './host.ts';

/** How long a reload waits for Bento to take the new streams before reporting and moving on. */
const SYNC_WAIT_MS = 20_000;

/** An endpoint of a running stream, as the request path finds it. */
export interface StreamTarget {
  stream: PlannedStream;
  endpoint: StreamEndpoint;
}

/** One series of a `TallyCounter`: its labels and its count so far. */
interface Tally {
  labels: Record<string, string>;
  count: number;
}

/**
 * A counter whose series are counted as plain numbers and handed to prom-client when it is
 * scraped: prom-client's labelled `inc` hashes and checks its labels on every call, which cost
 * more than the rest of a count on the publish path. `series` finds (or makes) a series once;
 * callers keep it and add to `count`.
 */
class TallyCounter {
  readonly #series = new Map<string, Tally>();

  constructor(opts: { name: string; help: string; labelNames: string[]; registers: Registry[] }) {
    const series = this.#series;
    const counter: Counter = new Counter({
      ...opts,
      collect: () => {
        counter.reset();
        for (const t of series.values()) counter.inc(t.labels, t.count);
      },
    });
  }

  /** The series with these labels (`key` names it: the label values, in order). */
  series(key: string, labels: () => Record<string, string>): Tally {
    let t = this.#series.get(key);
    if (t === undefined) {
      t = { labels: labels(), count: 0 };
      this.#series.set(key, t);
    }
    return t;
  }
}

interface ApiStreams {
  streams: PlannedStream[];
  /** Endpoints by path: `http` and `ws` endpoints kept apart (a ws_path may equal nothing else). */
  endpoints: Map<string, StreamTarget>;
}

/** The API of a Bento stream ID (`<api id>.<stream name>`; names have no dot). */
function apiIdOf(streamId: string): string {
  return streamId.slice(0, streamId.lastIndexOf('.'));
}

/**
 * Whether a stored document may have streams, from its text when the store kept it: without the
 * key `x-svc-streaming` (nor a `\\u` escape that could spell it) it has none, and its value need
 * not be parsed (the files store parses an unchanged document only when its value is read).
 */
function mayHaveStreams(e: { text?: string }): boolean {
  return e.text === undefined || e.text.includes('x-svc-streaming') || e.text.includes('\\u');
}

/** The streams of one gateway process. */
export class StreamsEngine {
  readonly enabled: boolean;
  readonly binary: string;
  readonly #worker: boolean;
  readonly #log: Logger;
  #host: StreamsHost | undefined;
  /** Desired streams by Bento stream ID, with the configuration text sent. */
  #desired = new Map<string, { stream: PlannedStream; text: string }>();
  #byApi = new Map<string, ApiStreams>();
  #stopped = false;
  #connections: TallyCounter | undefined;
  #batches: TallyCounter | undefined;
  #batchedMessages: TallyCounter | undefined;
  /** Each endpoint's series of `#connections` by outcome, found without building a key. */
  readonly #connectionTallies = new WeakMap<StreamEndpoint, { ok?: Tally; error?: Tally }>();
  /** Problems of the last sync, by stream ID (a stream Bento refused). */
  #refused = new Map<string, string>();

  /**
   * `worker`: this process is a cluster worker (`--workers` > 1): the node's Bento is the
   * primary's (host.ts), reached over loopback; else this process supervises its own.
   */
  constructor(opts: {
    config: Readonly<GatewayConfig>;
    log: Logger;
    worker?: boolean;
    /** The process's metrics registry: Bento's state is reported there. */
    registry?: Registry | undefined;
  }) {
    this.enabled = opts.config.streaming_enabled;
    this.binary = bentoPath(opts.config.streaming_bento_path);
    this.#worker = opts.worker ?? cluster.isWorker;
    this.#log = opts.log.child({ part: 'streams' });
    if (opts.registry !== undefined) this.#registerMetrics(opts.registry);
  }

  /**
   * Bento's state as gauges. Every worker of a node reports the node's one Bento, so merged
   * across workers they take the largest value, not the sum.
   */
  #registerMetrics(registry: Registry): void {
    const registers = [registry];
    const up: Gauge = new Gauge({
      name: 'svc_gateway_streams_processor_up',
      help: "1 while the node's stream processor (Bento) is up, 0 while it is stopped, starting or restarting.",
      registers,
      aggregator: 'max',
      collect: () => {
        up.set(this.state === 'up' ? 1 : 0);
      },
    });
    const restarts: Gauge = new Gauge({
      name: 'svc_gateway_streams_processor_restarts',
      help: 'Times the stream processor (Bento) was started again after dying.',
      registers,
      aggregator: 'max',
      collect: () => {
        restarts.set(this.restarts);
      },
    });
    this.#batches = new TallyCounter({
      name: 'svc_gateway_stream_batches_total',
      help: 'Publishes sent to the stream processor together (docs/streams.md): batches by API, stream and outcome (taken, or refused: its publishes were sent again alone).',
      labelNames: ['api_id', 'stream', 'outcome'],
      registers,
    });
    this.#batchedMessages = new TallyCounter({
      name: 'svc_gateway_stream_batched_messages_total',
      help: 'Publishes the stream processor took in batches, by API and stream.',
      labelNames: ['api_id', 'stream'],
      registers,
    });
    this.#connections = new TallyCounter({
      name: 'svc_gateway_stream_connections_total',
      help: "Stream analytics: connection attempts to the streams' HTTP endpoints (publishers, SSE and WebSocket consumers), by API, stream, endpoint and outcome (ok: the stream processor took it; error: it refused it or was not reachable).",
      labelNames: ['api_id', 'stream', 'endpoint', 'outcome'],
      registers,
    });
    const wanted: Gauge = new Gauge({
      name: 'svc_gateway_streams',
      help: 'Streams of the loaded APIs (x-svc-streaming) the stream processor is to run.',
      registers,
      aggregator: 'max',
      collect: () => {
        wanted.set(this.#desired.size);
      },
    });
  }

  /** Bento's state: `stopped` until an API with streams loads. */
  get state(): BentoState {
    return this.#host?.state ?? 'stopped';
  }

  /** Times Bento was started again after dying. */
  get restarts(): number {
    return this.#host?.restarts ?? 0;
  }

  /** The node's Bento (tests kill it to check the supervision, and call its API). */
  get process(): StreamsHost | undefined {
    return this.#host;
  }

  /** Ready as far as streams go: none wanted, or Bento up. */
  get healthy(): boolean {
    return this.#desired.size === 0 || this.state === 'up';
  }

  /** Why `/ready` fails because of streams, or undefined. */
  get notReady(): string | undefined {
    return this.healthy ? undefined : `the stream processor (Bento) is ${this.state}`;
  }

  /** Loopback port of Bento's HTTP server, 0 while it is not up. */
  get port(): number {
    return this.#host?.port ?? 0;
  }

  /**
   * Why the gateway can't run the streams of `doc` (stored as API `apiId`), each as
   * `<document path>: <message>`; empty when it can. Asked by the management API before a write:
   * streaming off, Bento missing, the gateway's rules, then Bento's own lint.
   */
  async writeProblems(apiId: string, doc: unknown): Promise<string[]> {
    if (!hasStreams(doc)) return [];
    if (!this.enabled)
      return [
        'x-svc-streaming: streaming is disabled on this gateway: set streaming_enabled (SVC_GW_STREAMING_ENABLED=true) to run streams',
      ];
    const missing = bentoMissing(this.binary);
    if (missing !== undefined) return [`x-svc-streaming: ${missing}`];
    const host = this.#process();
    await host.up();
    return checkStreams(host, apiId, doc);
  }

  /**
   * Makes the desired set the streams of `entries` (the stored APIs of a reload) and brings Bento
   * to it. Returns the problems to report with the reload (streams that can't run), never throws.
   */
  async update(entries: readonly StoredEntry[]): Promise<{ api_id: string; message: string }[]> {
    const problems: { api_id: string; message: string }[] = [];
    const desired = new Map<string, { stream: PlannedStream; text: string }>();
    const byApi = new Map<string, ApiStreams>();
    for (const e of entries) {
      if (!('value' in e) || !mayHaveStreams(e) || !hasStreams(e.value)) continue;
      if (!this.enabled) {
        problems.push({
          api_id: e.id,
          message: 'x-svc-streaming: streaming is disabled on this gateway: its streams do not run',
        });
        continue;
      }
      const plan = planStreams(e.id, e.value);
      if (plan.problems.length > 0) {
        problems.push({
          api_id: e.id,
          message: plan.problems.map((p) => `${p.path}: ${p.message}`).join('; '),
        });
        continue;
      }
      const endpoints = new Map<string, StreamTarget>();
      for (const s of plan.streams) {
        desired.set(s.id, { stream: s, text: JSON.stringify(bentoConfig(s)) });
        for (const endpoint of s.endpoints)
          endpoints.set(key(endpoint.path, endpoint.kind), { stream: s, endpoint });
      }
      byApi.set(e.id, { streams: plan.streams, endpoints });
    }
    this.#byApi = byApi;
    this.#desired = desired;
    const missing = desired.size > 0 ? bentoMissing(this.binary) : undefined;
    if (missing !== undefined) {
      for (const id of byApi.keys()) problems.push({ api_id: id, message: `x-svc-streaming: ${missing}` });
      return problems;
    }
    try {
      await withTimeout(this.sync(), SYNC_WAIT_MS);
    } catch (err) {
      for (const id of byApi.keys())
        problems.push({
          api_id: id,
          message: `x-svc-streaming: streams not in place yet (${errorMessage(err)}); the next reload (or a restart of the stream processor) tries again`,
        });
    }
    for (const [id, why] of this.#refused) {
      const stream = this.#desired.get(id)?.stream;
      problems.push({
        api_id: apiIdOf(id),
        message: `x-svc-streaming.streams.${stream?.name ?? id}: ${why}`,
      });
    }
    return problems;
  }

  /**
   * Whether API `apiId` has streams in the set the last `update` made (the streams middleware's
   * `enabled`: routes compile after the update of their reload).
   */
  hasStreams(apiId: string): boolean {
    return this.#byApi.has(apiId);
  }

  /** The stream endpoint `path` (under the listen path) of API `apiId` serves, if any. */
  target(apiId: string, path: string, ws: boolean): StreamTarget | undefined {
    return this.#byApi.get(apiId)?.endpoints.get(key(path, ws ? 'ws' : 'http'));
  }

  /** The streams of every API, by stream ID (metrics label Bento's series with them). */
  streamsById(): Map<string, PlannedStream> {
    return new Map([...this.#desired].map(([id, d]) => [id, d.stream]));
  }

  /** One batch of `messages` publishes sent to `stream` (gateway/streams/batch.ts), and whether Bento took it. */
  batched(stream: PlannedStream, messages: number, taken: boolean): void {
    const outcome = taken ? 'taken' : 'refused';
    const labels = (): Record<string, string> => ({ api_id: apiIdOf(stream.id), stream: stream.name });
    const batches = this.#batches?.series(`${stream.id}\n${outcome}`, () => ({ ...labels(), outcome }));
    if (batches !== undefined) batches.count++;
    const carried = taken ? this.#batchedMessages?.series(stream.id, labels) : undefined;
    if (carried !== undefined) carried.count += messages;
  }

  /** Stream analytics: one connection attempt to `endpoint`, and Bento's status (0: unreachable). */
  connection(stream: PlannedStream, endpoint: StreamEndpoint, status: number): void {
    const counter = this.#connections;
    if (counter === undefined) return;
    const outcome = status >= 100 && status < 400 ? 'ok' : 'error';
    let tallies = this.#connectionTallies.get(endpoint);
    if (tallies === undefined) {
      tallies = {};
      this.#connectionTallies.set(endpoint, tallies);
    }
    // One series per stream, endpoint and outcome, whichever endpoint object (reloads make new ones).
    const tally = (tallies[outcome] ??= counter.series(`${stream.id}\n${endpoint.path}\n${outcome}`, () => ({
      api_id: apiIdOf(stream.id),
      stream: stream.name,
      endpoint: endpoint.path,
      outcome,
    })));
    tally.count++;
  }

  /**
   * Bento's own Prometheus metrics for `/metrics`: its stream series (inputs, processors,
   * outputs: received, sent, errors, connection state, latency), named `svc_bento_<name>` and
   * labelled with the API ID and stream name (`api_id`, `stream`) instead of Bento's stream ID.
   * Empty while Bento is not up. Bento is the node's, so a scrape reports it once.
   */
  async bentoMetrics(): Promise<string> {
    const host = this.#host;
    if (host?.state !== 'up') return '';
    let text: string;
    try {
      const res = await host.call('GET', '/metrics');
      if (res.status !== 200) return '';
      text = res.body;
    } catch {
      return '';
    }
    return relabelBentoMetrics(text, new Set(this.#desired.keys()));
  }

  /**
   * Starts a stream of the gateway's own (`id` starts with OWN_STREAM_PREFIX; a sync leaves it
   * alone) from its configuration, Bento started if need be; resolves with Bento's loopback port.
   * Throws with Bento's refusal. `stopOwnStream` deletes it.
   */
  async startOwnStream(id: string, config: Record<string, unknown>): Promise<number> {
    if (!this.enabled) throw new Error('streaming is disabled on this gateway');
    if (!id.startsWith(OWN_STREAM_PREFIX)) throw new Error(`${id}: not a stream of the gateway's own`);
    const missing = bentoMissing(this.binary);
    if (missing !== undefined) throw new Error(missing);
    const host = this.#process();
    await host.up();
    const res = await host.call('POST', `/streams/${encodeURIComponent(id)}`, JSON.stringify(config));
    if (res.status !== 200)
      throw new Error(`the stream processor refused the stream: ${res.body.trim().slice(0, 300)}`);
    return host.port;
  }

  /** Deletes a stream `startOwnStream` started (nothing when Bento is not up: it went with it). */
  async stopOwnStream(id: string): Promise<void> {
    const host = this.#host;
    if (host?.state !== 'up') return;
    await deleteStream(host, id);
  }

  /** Brings Bento's streams to the desired set. */
  async sync(): Promise<void> {
    if (this.#stopped) return;
    if (this.#desired.size === 0 && this.#host?.started !== true) return;
    const texts = new Map([...this.#desired].map(([id, d]) => [id, d.text]));
    this.#refused = await this.#process().apply(texts);
  }

  /** Stops Bento (with the gateway; a worker lets go of the primary's). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#byApi = new Map();
    await this.#host?.stop();
  }

  #process(): StreamsHost {
    this.#host ??= hostFor({ binary: this.binary, log: this.#log, worker: this.#worker });
    return this.#host;
  }
}

/** Bento's series that are about its streams (not its Go runtime or process). */
const BENTO_SERIES = /^(input|output|processor|buffer|pipeline|cache|rate_limit)_/;

/**
 * Bento's Prometheus text, its stream series only (of the streams in `streams`), renamed
 * `svc_bento_<name>` and with `stream="<api id>.<name>"` turned into `api_id` and `stream`.
 */
export function relabelBentoMetrics(text: string, streams: ReadonlySet<string>): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const name = line.slice(7).split(' ', 1)[0] ?? '';
      if (BENTO_SERIES.test(name)) out.push(`${line.slice(0, 7)}svc_bento_${line.slice(7)}`);
      continue;
    }
    if (line === '' || line.startsWith('#') || !BENTO_SERIES.test(line)) continue;
    const m = /stream="([^"]*)"/.exec(line);
    const id = m?.[1];
    if (m === null || id === undefined || !streams.has(id)) continue;
    const dot = id.lastIndexOf('.');
    const labels = `api_id="${id.slice(0, dot)}",stream="${id.slice(dot + 1)}"`;
    out.push(`svc_bento_${line.replace(m[0], labels)}`);
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

function key(path: string, kind: 'http' | 'ws'): string {
  return `${kind} ${path}`;
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`no answer within ${ms} ms`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
