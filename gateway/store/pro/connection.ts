/**
 * The connection of a gateway in mode pro to its dashboard (index.ts is the store on top):
 * calls with the node secret (and the node ID once registered), the registration as a node
 * (`POST /system/nodes`), and the notification stream (`/system/notifications`, server-sent
 * events) held open: a `hello` opens it, a `change` names a committed write. A stream that ends
 * or stays silent is reopened with backoff after registering again; while it is down, the store
 * is asked to poll every `pollIntervalMs`.
 */
import { hostname } from 'node:os';
import type { Logger } from '../../../lib/log.ts';

/** The header of the node secret. */
export const NODE_SECRET_HEADER = 'x-svc-node-secret';
const NODE_ID_HEADER = 'x-svc-node-id';
/** A read of the dashboard longer than this counts as a failure. */
const CALL_TIMEOUT_MS = 5000;
/** A stream silent for longer than this (the dashboard beats every 15 s) is reopened. */
const STREAM_IDLE_MS = 45_000;
const FIRST_RECONNECT_MS = 250;
const MAX_RECONNECT_MS = 5000;

/** Where the dashboard is and who this node is. */
export interface DashboardConnectionOptions {
  url: string;
  nodeSecret: string;
  /** Organisations served (empty: all). */
  orgs: readonly string[];
  pollIntervalMs: number;
  version: string;
}

/** A change the dashboard names (`event: change`), as sent: the store checks the fields. */
export interface DashboardChange {
  kind?: unknown;
  id?: unknown;
}

/** What the connection tells the store. */
export interface DashboardListener {
  /** The stream is open (`hello`): changes may have been missed while it was down. */
  opened(): void;
  /** A committed write in the dashboard. */
  changed(change: DashboardChange): void;
  /** The stream is down: read the configuration again. */
  poll(): Promise<void>;
  /** Registering or the stream failed: the dashboard is unreachable. */
  failed(err: unknown): void;
}

/** Registration, calls and the notification stream, with polling while it is down. */
export class DashboardConnection {
  readonly #opts: DashboardConnectionOptions;
  readonly #log: Logger;
  readonly #listener: DashboardListener;
  #nodeId: string | undefined;
  #closed = false;
  #abort: AbortController | undefined;
  #streamUp = false;
  #pollTimer: NodeJS.Timeout | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  readonly #onOpened: (() => void)[] = [];

  /** `opts.url` has no trailing slash; `log` names the dashboard. */
  constructor(opts: DashboardConnectionOptions, log: Logger, listener: DashboardListener) {
    this.#opts = opts;
    this.#log = log;
    this.#listener = listener;
  }

  /** Registers and opens the notification stream, in the background. */
  start(): void {
    void this.#connect(FIRST_RECONNECT_MS);
  }

  /** Calls `fn` each time the node has registered and its notification stream is open. */
  onOpened(fn: () => void): void {
    this.#onOpened.push(fn);
  }

  /** Whether the notification stream is open. */
  get streaming(): boolean {
    return this.#streamUp;
  }

  /** Closes the stream and stops reconnecting and polling. */
  close(): void {
    this.#closed = true;
    this.#abort?.abort();
    clearTimeout(this.#pollTimer);
    clearTimeout(this.#reconnectTimer);
  }

  /** Calls the dashboard as this node, for the organisations served. */
  call(method: string, path: string, body?: unknown): Promise<Response> {
    const orgs =
      this.#opts.orgs.length > 0 ? `orgs=${this.#opts.orgs.map(encodeURIComponent).join(',')}` : '';
    const sep = path.includes('?') ? '&' : '?';
    return fetch(`${this.#opts.url}${path}${orgs === '' ? '' : sep + orgs}`, {
      method,
      headers: {
        [NODE_SECRET_HEADER]: this.#opts.nodeSecret,
        ...(this.#nodeId === undefined ? {} : { [NODE_ID_HEADER]: this.#nodeId }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  }

  async #register(): Promise<void> {
    const res = await this.call('POST', '/system/nodes', {
      hostname: hostname(),
      version: this.#opts.version,
      orgs: this.#opts.orgs,
    });
    const body = (await res.json()) as { Message?: string; Meta?: { node_id?: string } };
    if (res.status !== 200)
      throw new Error(`node registration answered ${res.status}: ${body.Message ?? ''}`);
    this.#nodeId = body.Meta?.node_id;
    this.#log.info('registered with the dashboard', { node_id: this.#nodeId });
  }

  /** Registers, then holds the notification stream open; reconnects with backoff, polling meanwhile. */
  async #connect(delayMs: number): Promise<void> {
    if (this.#isClosed()) return;
    let wait = delayMs;
    try {
      await this.#register();
      await this.#stream();
      // The stream was open and ended (the dashboard stopped): try again soon.
      wait = FIRST_RECONNECT_MS;
    } catch (err) {
      if (!this.#isClosed()) this.#listener.failed(err);
    }
    this.#streamUp = false;
    if (this.#isClosed()) return;
    this.#startPolling();
    this.#reconnectTimer = setTimeout(() => void this.#connect(Math.min(wait * 2, MAX_RECONNECT_MS)), wait);
    this.#reconnectTimer.unref();
  }

  /** Read through a method: `close()` may run while a call awaits. */
  #isClosed(): boolean {
    return this.#closed;
  }

  #startPolling(): void {
    if (this.#pollTimer !== undefined || this.#closed) return;
    const tick = (): void => {
      this.#pollTimer = undefined;
      if (this.#closed || this.#streamUp) return;
      void this.#listener.poll().finally(() => {
        this.#startPolling();
      });
    };
    this.#pollTimer = setTimeout(tick, this.#opts.pollIntervalMs);
    this.#pollTimer.unref();
  }

  /** Reads the notification stream until it ends. */
  async #stream(): Promise<void> {
    const abort = new AbortController();
    this.#abort = abort;
    let idle: NodeJS.Timeout | undefined;
    const beat = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        abort.abort(new Error('notification stream silent'));
      }, STREAM_IDLE_MS);
      idle.unref();
    };
    const orgs =
      this.#opts.orgs.length > 0 ? `?orgs=${this.#opts.orgs.map(encodeURIComponent).join(',')}` : '';
    try {
      beat();
      const res = await fetch(`${this.#opts.url}/system/notifications${orgs}`, {
        headers: {
          [NODE_SECRET_HEADER]: this.#opts.nodeSecret,
          accept: 'text/event-stream',
          ...(this.#nodeId === undefined ? {} : { [NODE_ID_HEADER]: this.#nodeId }),
        },
        signal: abort.signal,
      });
      if (res.status !== 200 || res.body === null) {
        throw new Error(`notification stream answered ${res.status}`);
      }
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        beat();
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          this.#onEvent(block);
        }
      }
    } finally {
      clearTimeout(idle);
    }
  }

  #onEvent(block: string): void {
    let event = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data += line.slice(5).trim();
    }
    if (event === 'hello') {
      this.#streamUp = true;
      clearTimeout(this.#pollTimer);
      this.#pollTimer = undefined;
      this.#log.info('dashboard notifications open');
      this.#listener.opened();
      for (const fn of this.#onOpened) fn();
      return;
    }
    if (event !== 'change') return;
    let c: DashboardChange;
    try {
      c = JSON.parse(data) as DashboardChange;
    } catch {
      return;
    }
    this.#listener.changed(c);
  }
}
