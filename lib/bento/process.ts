/**
 * One Bento process in streams mode (`bento -c <conf> streams`), supervised: its HTTP server
 * (streams REST API, `/ready`, `/metrics`, and the streams' `http_server` endpoints) listens on a
 * loopback port of its own, never reachable from outside the host; a process that dies is
 * started again with capped exponential backoff until `stop()`. Whoever owns the process is told
 * each time it comes up (`onUp`), so it can put its streams back. It is tethered to the gateway
 * (lib/tether.ts): when the gateway process ends, however it ends, Bento is stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { errorMessage } from '../errors.ts';
import { freeLoopbackPort } from '../net.ts';
import type { Logger } from '../log.ts';
import { tether } from '../tether.ts';

/** First restart delay after a crash; doubles up to MAX_BACKOFF_MS, reset after a stable run. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;
/** A run at least this long resets the backoff. */
const STABLE_MS = 10_000;
/** How long a start may take before it counts as failed. */
const READY_TIMEOUT_MS = 15_000;

/**
 * What Bento logs when a call to its streams API ends before it answered: the gateway does that on
 * purpose to make Bento close a stream at once (gateway/streams/host.ts `deleteStream`).
 */
const EXPECTED = '"msg":"Streams CRUD Error: context canceled';

/** Where the process is in its life. */
export type BentoState = 'stopped' | 'starting' | 'up' | 'down';

/** An answer of Bento's HTTP API. */
export interface BentoAnswer {
  status: number;
  body: string;
}

/**
 * Calls Bento's HTTP API on a loopback port: the one caller of it, for the process that
 * supervises Bento (BentoProcess.call) and for the gateway workers that only know its port
 * (gateway/streams/host.ts). A body is sent as YAML; the answer is read whole.
 */
export function callBento(
  port: number,
  method: string,
  urlPath: string,
  body?: string,
  timeoutMs = 10_000,
): Promise<BentoAnswer> {
  if (port === 0) return Promise.reject(new Error('the stream processor is not running'));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        timeout: timeoutMs,
        headers: body === undefined ? {} : { 'content-type': 'application/yaml' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`Bento ${method} ${urlPath}: no answer in ${timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A supervised `bento streams` process. */
export class BentoProcess {
  readonly #binary: string;
  readonly #log: Logger;
  readonly #onUp: (() => Promise<void>) | undefined;
  readonly #onStateChange: ((state: BentoState) => void) | undefined;
  #child: ChildProcess | undefined;
  #state: BentoState = 'stopped';
  #port = 0;
  #wanted = false;
  #backoffMs = FIRST_BACKOFF_MS;
  #restartTimer: NodeJS.Timeout | undefined;
  #starting: Promise<void> | undefined;
  #dir: string | undefined;
  /** Times the process came up again after dying. */
  restarts = 0;
  #everUp = false;
  #waiters: (() => void)[] = [];

  constructor(opts: {
    binary: string;
    log: Logger;
    /**
     * Called each time the process answers (first start and every restart), before the state is
     * `up` and `up()` resolves; a failure counts as a failed start (restarted with backoff).
     */
    onUp?: () => Promise<void>;
    onStateChange?: (state: BentoState) => void;
  }) {
    this.#binary = opts.binary;
    this.#log = opts.log;
    this.#onUp = opts.onUp;
    this.#onStateChange = opts.onStateChange;
  }

  /** Now: `stopped` (never started or stopped), `starting`, `up`, or `down` (restarting). */
  get state(): BentoState {
    return this.#state;
  }

  /** Loopback port of the HTTP server while up (0 otherwise). */
  get port(): number {
    return this.#state === 'up' ? this.#port : 0;
  }

  /** The process ID while running (tests kill it to check the supervision). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the process if it is not running and resolves once it is up (or rejects after the timeout). */
  async up(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    this.#wanted = true;
    if (this.#state === 'stopped') this.#launch();
    if (this.#state === 'up') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== done);
        reject(new Error(`the stream processor (Bento) did not come up within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.#waiters.push(done);
    });
  }

  /** Calls Bento's HTTP API (`/streams/...`, `/ready`, `/metrics`) on its loopback port. */
  call(method: string, urlPath: string, body?: string, timeoutMs = 10_000): Promise<BentoAnswer> {
    if (this.#state === 'stopped') return Promise.reject(new Error('the stream processor is not running'));
    return callBento(this.#port, method, urlPath, body, timeoutMs);
  }

  /** Stops the process (SIGTERM, then SIGKILL after 5 s) and does not restart it. */
  async stop(): Promise<void> {
    this.#wanted = false;
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    this.#setState('stopped');
    if (child?.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => {
        child.once('exit', () => {
          resolve();
        });
      });
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    this.#child = undefined;
    if (this.#dir !== undefined) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }

  #setState(state: BentoState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#onStateChange?.(state);
  }

  #launch(): void {
    if (this.#starting !== undefined) return;
    this.#setState('starting');
    this.#starting = this.#start()
      .catch((err: unknown) => {
        this.#log.error('stream processor failed to start', { error: errorMessage(err) });
        this.#child?.kill('SIGKILL');
        this.#scheduleRestart();
      })
      .finally(() => {
        this.#starting = undefined;
      });
  }

  async #start(): Promise<void> {
    const port = await freeLoopbackPort();
    this.#dir ??= mkdtempSync(path.join(tmpdir(), 'svc-bento-'));
    const conf = path.join(this.#dir, 'bento.yaml');
    // The HTTP server binds loopback only: the gateway is its one client. Debug endpoints are off.
    writeFileSync(
      conf,
      [
        'http:',
        `  address: 127.0.0.1:${port}`,
        '  debug_endpoints: false',
        'logger:',
        '  level: warn',
        '  format: json',
        'metrics:',
        '  prometheus: {}',
        '',
      ].join('\n'),
    );
    // An empty environment: Bento replaces `${VAR}` in configurations, and users must not read
    // the gateway's (its secret, store credentials) through a stream.
    const child = spawn(this.#binary, ['-c', conf, 'streams'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {},
    });
    // However the gateway ends (SIGKILL, OOM, a crash), Bento ends with it and frees its port.
    tether(child);
    this.#child = child;
    this.#port = port;
    const startedAt = Date.now();
    const forward = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        // The gateway ends its own calls that way on purpose (gateway/streams/host.ts deleteStream).
        if (line.includes(EXPECTED)) this.#log.debug('stream processor says', { line: line.slice(0, 2000) });
        else this.#log.warn('stream processor says', { line: line.slice(0, 2000) });
      }
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    const spawnFailed = new Promise<never>((_, reject) => {
      child.once('error', reject);
    });
    child.once('exit', (code, signal) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      if (!this.#wanted) return;
      this.#log.error('stream processor exited', { code, signal, ran_ms: Date.now() - startedAt });
      if (Date.now() - startedAt >= STABLE_MS) this.#backoffMs = FIRST_BACKOFF_MS;
      if (this.#starting === undefined) this.#scheduleRestart();
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`bento exited at start (${String(child.exitCode ?? child.signalCode)})`);
      const ready = await Promise.race([
        this.#ping(port),
        spawnFailed,
        new Promise<boolean>((r) => {
          setTimeout(() => {
            r(false);
          }, 1000);
        }),
      ]);
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`bento not ready after ${READY_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!this.#wanted || this.#child !== child) return;
    // `up` (and so the gateway's /ready) only once the owner put its streams back: a process that
    // answers but runs nothing yet is still starting.
    try {
      await this.#onUp?.();
    } catch (err) {
      throw new Error(`bento set-up failed: ${errorMessage(err)}`, { cause: err });
    }
    if (this.#child !== child) {
      // Stopped meanwhile: nothing to report; else it died while its streams were put back.
      if (this.#state === 'stopped') return;
      throw new Error('bento exited while it was being set up');
    }
    if (this.#everUp) this.restarts++;
    this.#everUp = true;
    this.#setState('up');
    this.#log.info('stream processor up', { port, pid: child.pid });
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /**
   * Whether the streams API answers on `port` (GET /streams, 200): not only /ping, which Bento
   * serves before its streams endpoints are there, and which any other Bento on the port would
   * answer (a first POST /streams/<id> right after was once answered 404 page not found).
   */
  #ping(port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/streams', timeout: 500 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => {
        resolve(false);
      });
      req.on('timeout', () => {
        req.destroy();
      });
      req.end();
    });
  }

  #scheduleRestart(): void {
    if (!this.#wanted) return;
    this.#setState('down');
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      if (this.#wanted) this.#launch();
    }, delay);
    this.#restartTimer.unref();
  }
}
