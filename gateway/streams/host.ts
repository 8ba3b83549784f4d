/**
 * Where a gateway process finds its Bento: one per node. A gateway running as one process
 * supervises Bento itself (`LocalHost`); with `--workers` > 1 the cluster primary supervises it
 * (`PrimaryStreams`, wired in server/cluster.ts) and the workers reach it through `RemoteHost`:
 * they ask the primary over the cluster IPC channel to start it and to make its streams their
 * desired set, hear its state (up, down, its loopback port, restarts) as it changes, and talk to
 * its HTTP server (stream endpoints, lint, metrics) directly over loopback.
 */
import type { Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { BentoProcess, callBento, type BentoAnswer, type BentoState } from '../../lib/bento/process.ts';
import { deleteStream } from '../../lib/bento/streams.ts';
import { resourcePrefix, runnableStream } from '../../schemas/rules/streams.ts';
import { PortalWebhooks } from './portal-webhook.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** Bento as a gateway process sees it. */
export interface StreamsHost {
  readonly state: BentoState;
  /** Loopback port of Bento's HTTP server while up, else 0. */
  readonly port: number;
  /** Times Bento was started again after dying. */
  readonly restarts: number;
  /** Bento's process ID while it runs (tests kill it). */
  readonly pid: number | undefined;
  /** Whether Bento was ever asked for (a node without streams never starts it). */
  readonly started: boolean;
  /** Starts Bento if needed and resolves once it is up. */
  up(): Promise<void>;
  /** Bento's HTTP API (`/streams`, `/metrics`, ...). */
  call(method: string, urlPath: string, body?: string, timeoutMs?: number): Promise<BentoAnswer>;
  /**
   * Makes Bento's streams the desired set (stream ID -> configuration text): creates, updates,
   * deletes, nothing else touched. Resolves with the streams Bento refused (ID -> why).
   */
  apply(desired: ReadonlyMap<string, string>): Promise<Map<string, string>>;
  /** Lets go of Bento: stops it when this process supervises it. */
  stop(): Promise<void>;
}

/**
 * The start of the IDs of streams the gateway runs for itself beside the stored APIs' (a data
 * graph's Kafka subscriptions, gateway/graphql/kafka.ts): no API ID has a `!`, and a sync leaves
 * them alone (their owner deletes them).
 */
export const OWN_STREAM_PREFIX = 'svc!';

/** Bento supervised by this process. */
export class LocalHost implements StreamsHost {
  readonly #log: Logger;
  readonly #bento: BentoProcess;
  /** The last desired set, put back whenever Bento comes up again. */
  #desired: ReadonlyMap<string, string> = new Map();
  /**
   * What Bento runs, as far as this host put it there (ID -> the stream's fingerprint: its
   * configuration text and its rate limit resources, so a change to either is sent).
   */
  readonly #applied = new Map<string, string>();
  #refused = new Map<string, string>();
  /** Rate limit resources of each stream (created on Bento before the stream). */
  readonly #rateLimits = new Map<string, Map<string, Record<string, unknown>>>();
  #queue: Promise<unknown> = Promise.resolve();
  #started = false;
  /** The delivery endpoint of `portal_webhook` outputs (portal-webhook.ts), next to Bento. */
  readonly webhooks: PortalWebhooks;

  constructor(opts: { binary: string; log: Logger; onStateChange?: (state: BentoState) => void }) {
    this.#log = opts.log;
    this.webhooks = new PortalWebhooks({ log: opts.log });
    this.#bento = new BentoProcess({
      binary: opts.binary,
      log: opts.log,
      // A new process runs nothing: put every stream back before anyone waits on it.
      onUp: async () => {
        this.#applied.clear();
        await this.#syncNow();
      },
      onStateChange: (state) => {
        this.#log.info('stream processor state', { state });
        opts.onStateChange?.(state);
      },
    });
  }

  get state(): BentoState {
    return this.#bento.state;
  }
  get port(): number {
    return this.#bento.port;
  }
  get restarts(): number {
    return this.#bento.restarts;
  }
  get pid(): number | undefined {
    return this.#bento.pid;
  }
  get started(): boolean {
    return this.#started;
  }

  up(): Promise<void> {
    this.#started = true;
    return this.#bento.up();
  }

  call(method: string, urlPath: string, body?: string, timeoutMs?: number): Promise<BentoAnswer> {
    return this.#bento.call(method, urlPath, body, timeoutMs);
  }

  apply(desired: ReadonlyMap<string, string>): Promise<Map<string, string>> {
    const run = this.#queue.then(async () => {
      // portal_webhook outputs become http_client outputs to the delivery endpoint.
      const translated = new Map<string, string>();
      for (const [id, text] of desired) {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        // The stream as Bento runs it: the seed's forms in Bento's, and its rate limits as
        // node-wide resources named for it (checked when it was written: checkStreams).
        const { config, rateLimits } = runnableStream(parsed, id, resourcePrefix(id));
        const out = await this.webhooks.translate(id, config);
        translated.set(id, JSON.stringify(out));
        if (rateLimits.size > 0) this.#rateLimits.set(id, rateLimits);
        else this.#rateLimits.delete(id);
      }
      this.#desired = translated;
      if (desired.size === 0 && !this.#started) return new Map<string, string>();
      if (this.#bento.state !== 'up') await this.up();
      await this.#syncNow();
      return this.#refused;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    await this.#bento.stop();
    await this.webhooks.close();
  }

  /** Kills Bento at once (the process is exiting and can't wait). */
  killNow(): void {
    const pid = this.#bento.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  async #syncNow(): Promise<void> {
    const bento = this.#bento;
    const listed = await bento.call('GET', '/streams');
    if (listed.status !== 200) throw new Error(`GET /streams answered ${listed.status}`);
    const running = new Set(Object.keys(JSON.parse(listed.body) as Record<string, unknown>));
    // Streams that go are stopped together: each may take about 250 ms (deleteStream).
    await Promise.all(
      [...running]
        .filter((id) => !this.#desired.has(id) && !id.startsWith(OWN_STREAM_PREFIX))
        .map(async (id) => {
          await deleteStream(bento, id);
          this.#applied.delete(id);
          this.#log.info('stream deleted', { stream: id });
        }),
    );
    for (const id of this.#applied.keys()) if (!running.has(id)) this.#applied.delete(id);
    const refused = new Map<string, string>();
    for (const [id, text] of this.#desired) {
      const exists = running.has(id);
      const rateLimits = this.#rateLimits.get(id) ?? new Map<string, Record<string, unknown>>();
      // The rate limits live outside the stream's text (node-wide resources): a change to them
      // alone must reach Bento too, so they are part of what is compared.
      const fingerprint = `${text}\n${JSON.stringify([...rateLimits])}`;
      if (exists && this.#applied.get(id) === fingerprint) continue;
      // A changed stream is deleted and created again: Bento's PUT stops the old one the way its
      // DELETE does, which never ends for a stream with an http_server output (deleteStream).
      if (exists) await deleteStream(bento, id);
      // Resources first (POST creates or replaces one), then the stream that uses them, updated so
      // that it takes the new ones.
      for (const [name, rl] of rateLimits) {
        const r = await bento.call(
          'POST',
          `/resources/rate_limit/${encodeURIComponent(name)}`,
          JSON.stringify(rl),
        );
        if (r.status !== 200)
          this.#log.error('rate limit refused', { stream: id, status: r.status, body: r.body });
      }
      const res = await bento.call('POST', `/streams/${encodeURIComponent(id)}`, text);
      if (res.status === 200) {
        this.#applied.set(id, fingerprint);
        this.#log.info(exists ? 'stream updated' : 'stream created', { stream: id });
      } else {
        refused.set(id, `the stream processor refused it: ${res.body.trim().slice(0, 500)}`);
        this.#log.error('stream refused', { stream: id, status: res.status, body: res.body.slice(0, 500) });
      }
    }
    this.#refused = refused;
  }
}

/** Bento's state as the primary tells its workers. */
interface HostState {
  state: BentoState;
  port: number;
  restarts: number;
  pid: number | undefined;
}

/** Messages between a worker's RemoteHost and the primary's PrimaryStreams. */
type StreamsMessage =
  | { svc: 'streams-up'; id: string }
  | { svc: 'streams-apply'; id: string; desired: [string, string][] }
  | { svc: 'streams-done'; id: string; refused?: [string, string][]; error?: string; host?: HostState }
  | ({ svc: 'streams-state'; id: '' } & HostState);

function isStreamsMessage(m: unknown): m is StreamsMessage {
  if (!isPlainObject(m)) return false;
  const svc = m.svc;
  return typeof svc === 'string' && svc.startsWith('streams-') && typeof m.id === 'string';
}

/** The primary's side: supervises the node's one Bento for every worker. */
export class PrimaryStreams {
  readonly #host: LocalHost;
  readonly #workers: () => Worker[];

  /** `workers`: the workers listening on the bus now (told each change of Bento's state). */
  constructor(opts: { binary: string; log: Logger; workers: () => Worker[] }) {
    this.#workers = opts.workers;
    this.#host = new LocalHost({
      binary: opts.binary,
      log: opts.log.child({ part: 'streams' }),
      onStateChange: () => {
        for (const w of this.#workers()) this.#tell(w);
      },
    });
    // Bento must not outlive the node, however the primary ends.
    process.once('exit', () => {
      this.#host.killNow();
    });
  }

  /** Handles a message from worker `w`; true when it was about streams. */
  onMessage(w: Worker, m: unknown): boolean {
    if (isPlainObject(m) && m.svc === 'hello') {
      // A new worker learns where Bento is (it may have started before the worker).
      this.#tell(w);
      return false;
    }
    if (!isStreamsMessage(m)) return false;
    const reply = (r: Omit<Extract<StreamsMessage, { svc: 'streams-done' }>, 'svc' | 'id'>): void => {
      if (w.isConnected())
        w.send({ svc: 'streams-done', id: m.id, ...r, host: this.#snapshot() } satisfies StreamsMessage);
    };
    const failed = (err: unknown): void => {
      reply({ error: errorMessage(err) });
    };
    if (m.svc === 'streams-up') {
      this.#host.up().then(() => {
        reply({});
      }, failed);
    } else if (m.svc === 'streams-apply') {
      this.#host.apply(new Map(m.desired)).then((refused) => {
        reply({ refused: [...refused] });
      }, failed);
    }
    return true;
  }

  /** Stops Bento (the node stops). */
  stop(): Promise<void> {
    return this.#host.stop();
  }

  #snapshot(): HostState {
    const h = this.#host;
    return { state: h.state, port: h.port, restarts: h.restarts, pid: h.pid };
  }

  #tell(w: Worker): void {
    if (w.isConnected())
      w.send({ svc: 'streams-state', id: '', ...this.#snapshot() } satisfies StreamsMessage);
  }
}

/** How long a worker waits for the primary to start Bento or apply its streams. */
const REMOTE_TIMEOUT_MS = 30_000;

/** A cluster worker's view of the node's Bento, supervised by the primary. */
export class RemoteHost implements StreamsHost {
  #state: HostState = { state: 'stopped', port: 0, restarts: 0, pid: undefined };
  #asked = false;
  readonly #waiting = new Map<string, (m: Extract<StreamsMessage, { svc: 'streams-done' }>) => void>();
  readonly #onMessage = (m: unknown): void => {
    if (!isStreamsMessage(m)) return;
    if (m.svc === 'streams-state') {
      this.#state = { state: m.state, port: m.port, restarts: m.restarts, pid: m.pid };
      if (m.state !== 'stopped') this.#asked = true;
    } else if (m.svc === 'streams-done') {
      if (m.host !== undefined) this.#state = m.host;
      this.#waiting.get(m.id)?.(m);
      this.#waiting.delete(m.id);
    }
  };

  constructor() {
    if (process.send === undefined) throw new Error('RemoteHost: not a cluster worker (no IPC channel)');
    process.on('message', this.#onMessage);
  }

  get state(): BentoState {
    return this.#state.state;
  }
  get port(): number {
    return this.#state.state === 'up' ? this.#state.port : 0;
  }
  get restarts(): number {
    return this.#state.restarts;
  }
  get pid(): number | undefined {
    return this.#state.pid;
  }
  get started(): boolean {
    return this.#asked;
  }

  async up(): Promise<void> {
    this.#asked = true;
    await this.#ask({ svc: 'streams-up', id: randomUUID() });
  }

  call(method: string, urlPath: string, body?: string, timeoutMs?: number): Promise<BentoAnswer> {
    return callBento(this.port, method, urlPath, body, timeoutMs);
  }

  async apply(desired: ReadonlyMap<string, string>): Promise<Map<string, string>> {
    if (desired.size > 0) this.#asked = true;
    const done = await this.#ask({ svc: 'streams-apply', id: randomUUID(), desired: [...desired] });
    return new Map(done.refused ?? []);
  }

  stop(): Promise<void> {
    process.off('message', this.#onMessage);
    for (const [id, resolve] of this.#waiting) resolve({ svc: 'streams-done', id, error: 'stopping' });
    this.#waiting.clear();
    return Promise.resolve();
  }

  #ask(m: StreamsMessage): Promise<Extract<StreamsMessage, { svc: 'streams-done' }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(m.id);
        reject(new Error(`the node's stream processor did not answer within ${REMOTE_TIMEOUT_MS} ms`));
      }, REMOTE_TIMEOUT_MS);
      this.#waiting.set(m.id, (done) => {
        clearTimeout(timer);
        if (done.error === undefined) resolve(done);
        else reject(new Error(done.error));
      });
      process.send?.(m);
    });
  }
}

/** The host of a gateway process: its own Bento, or the primary's when it is a cluster worker. */
export function hostFor(opts: { binary: string; log: Logger; worker: boolean }): StreamsHost {
  return opts.worker ? new RemoteHost() : new LocalHost({ binary: opts.binary, log: opts.log });
}
