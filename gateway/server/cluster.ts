/**
 * `--workers N`: the primary forks N workers that share the ports (node:cluster), relays node
 * reloads between them, replaces a worker that dies, and stops them all on SIGTERM/SIGINT. The
 * primary itself serves nothing and never touches the store. Each worker's young generation is
 * bounded (`workerExecArgv`), and so are its malloc arenas (`workerEnv`).
 */
import cluster, { type Worker } from 'node:cluster';
import { flushCompileCache } from 'node:module';
import { environment } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import type { ReloadReport } from '../admin/index.ts';
import { MemoryCounters } from '../limits/memory.ts';
import { isCountersCall, runCounterOp, type CountersDone } from '../limits/relay.ts';
import { MetricsRelay } from '../metrics/relay.ts';
import { PrimaryStreams } from '../streams/host.ts';
import { CHANGED_ACK_TIMEOUT_MS, isBusMessage, type BusMessage } from './node-bus.ts';

/** A worker sends this once it serves; a worker that exits before it stops the node. */
export const STARTED: BusMessage = { svc: 'started', id: '' };

/** How long the primary waits for every worker to answer a node reload. */
const ROUND_TIMEOUT_MS = 30_000;
/** More crashes than this within CRASH_WINDOW_MS stop the node rather than loop. */
const MAX_CRASHES = 5;
const CRASH_WINDOW_MS = 60_000;

/**
 * V8's semi-space of each worker, MiB (`--max-semi-space-size`). V8 sizes it from the machine's
 * memory (64 MiB on a 24 GiB machine, so a 128 MiB young generation), and a worker loading
 * 10,000 APIs grew it to the full size and kept it: 292 MiB resident against 186 MiB with 8
 * (issue 33 item 4). Proxying keeps few objects alive, so its scavenges stay short.
 */
export const WORKER_SEMI_SPACE_MIB = 8;

/**
 * The flags of the workers: the primary's, with the semi-space bound unless the node's flags or
 * `NODE_OPTIONS` set one (the operator's choice wins).
 */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const flags = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  return flags.some((f) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(f))
    ? [...execArgv]
    : [...execArgv, `--max-semi-space-size=${String(WORKER_SEMI_SPACE_MIB)}`];
}

/**
 * glibc's malloc arenas of each worker (`MALLOC_ARENA_MAX`). By default each thread that
 * allocates (libuv's pool reading 10,000 API files at a load) may get an arena of its own, which
 * keeps the memory it once held: 174-179 MiB resident per worker at 10,000 APIs against 167-169
 * MiB with 2 (issue 33 item 4). The workers' own threads allocate little.
 */
export const WORKER_MALLOC_ARENAS = 2;

/** What the workers' environment adds to the primary's: the arena bound, unless it sets one. */
export function workerEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: String(WORKER_MALLOC_ARENAS) } : {};
}

interface Round {
  origin: Worker;
  waiting: Set<number>;
  failures: string[];
  /** Messages of successful reloads (APIs left out), once each. */
  notes: Set<string>;
  timer: NodeJS.Timeout;
}

/** Runs the primary process until its workers have stopped. */
export function runPrimary(opts: {
  workers: number;
  log: Logger;
  shutdownTimeoutMs: number;
  /** Streaming enabled: the node's one Bento (this binary), supervised here for every worker. */
  streams?: { binary: string } | undefined;
}): void {
  const { log } = opts;
  const started = new Set<number>();
  /** Workers listening for bus messages (the others load on their own once they start). */
  const attached = new Set<number>();
  const crashes: number[] = [];
  const rounds = new Map<string, Round>();
  /** Change notices being acknowledged: the workers still to answer, by round. */
  const changes = new Map<string, { origin: Worker; waiting: Set<number>; timer: NodeJS.Timeout }>();
  let stopping = false;

  const send = (w: Worker, m: BusMessage): void => {
    if (w.isConnected()) w.send(m);
  };

  const finish = (id: string): void => {
    const round = rounds.get(id);
    if (round === undefined) return;
    rounds.delete(id);
    clearTimeout(round.timer);
    const ok = round.failures.length === 0;
    const report: ReloadReport = { ok, message: (ok ? [...round.notes] : round.failures).join('; ') };
    send(round.origin, { svc: 'reload-node-done', id, report });
  };

  const changeDone = (round: string): void => {
    const c = changes.get(round);
    if (c === undefined) return;
    changes.delete(round);
    clearTimeout(c.timer);
    send(c.origin, { svc: 'changed-done', id: round });
  };

  // With the files store, the node's rate limits and quotas are counted here, once for all
  // workers (limits/relay.ts).
  const counters = new MemoryCounters();
  // Metrics: a scrape reaching one worker reports every worker (metrics/relay.ts).
  const metrics = new MetricsRelay({
    log,
    workers: () =>
      Object.values(cluster.workers ?? {}).filter((x): x is Worker => x !== undefined && attached.has(x.id)),
  });
  // Streams: one Bento per node, supervised here; workers reach it over loopback (streams/host.ts).
  const streams =
    opts.streams === undefined
      ? undefined
      : new PrimaryStreams({
          binary: opts.streams.binary,
          log,
          workers: () =>
            Object.values(cluster.workers ?? {}).filter(
              (x): x is Worker => x !== undefined && attached.has(x.id),
            ),
        });
  const onMessage = (w: Worker, m: unknown): void => {
    if (streams?.onMessage(w, m) === true) return;
    if (isCountersCall(m)) {
      const done: CountersDone = { svc: 'counters-done', id: m.id, result: runCounterOp(counters, m.call) };
      if (w.isConnected()) w.send(done);
      return;
    }
    if (!isBusMessage(m)) return;
    if (m.svc === 'hello') {
      attached.add(w.id);
      return;
    }
    if (m.svc === 'started') {
      started.add(w.id);
      if (started.size === opts.workers) log.info('all workers serving', { workers: opts.workers });
      return;
    }
    if (metrics.onMessage(w, m)) return;
    if (m.svc === 'reload-node') {
      const workers = Object.values(cluster.workers ?? {}).filter(
        (x): x is Worker => x !== undefined && attached.has(x.id),
      );
      const round: Round = {
        origin: w,
        waiting: new Set(workers.map((x) => x.id)),
        failures: [],
        notes: new Set(),
        timer: setTimeout(() => {
          const r = rounds.get(m.id);
          if (r !== undefined) r.failures.push(`${r.waiting.size} worker(s) did not answer in time`);
          finish(m.id);
        }, ROUND_TIMEOUT_MS),
      };
      rounds.set(m.id, round);
      for (const x of workers) send(x, { svc: 'reload', id: m.id });
    } else if (m.svc === 'changed') {
      // A key or policy written by one worker: the others forget their copies, and the writer
      // hears when they all have (its write answers only then: the change holds at once).
      const others = Object.values(cluster.workers ?? {}).filter(
        (x): x is Worker => x !== undefined && x.id !== w.id && attached.has(x.id) && x.isConnected(),
      );
      const round = m.round;
      if (round !== undefined) {
        changes.set(round, {
          origin: w,
          waiting: new Set(others.map((x) => x.id)),
          timer: setTimeout(() => {
            log.warn('a change notice was not acknowledged by every worker in time', {
              workers: changes.get(round)?.waiting.size,
            });
            changeDone(round);
          }, CHANGED_ACK_TIMEOUT_MS),
        });
      }
      for (const x of others) send(x, m);
      if (round !== undefined && others.length === 0) changeDone(round);
    } else if (m.svc === 'changed-ack') {
      const c = changes.get(m.id);
      if (c === undefined) return;
      c.waiting.delete(w.id);
      if (c.waiting.size === 0) changeDone(m.id);
    } else if (m.svc === 'reloaded') {
      const round = rounds.get(m.id);
      if (round === undefined) return;
      round.waiting.delete(w.id);
      if (!m.report.ok) round.failures.push(`worker ${String(w.process.pid)}: ${m.report.message}`);
      else if (m.report.message !== '') round.notes.add(m.report.message);
      if (round.waiting.size === 0) finish(m.id);
    }
  };

  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, environment().NODE_OPTIONS) });
  const env = workerEnv(environment());
  const fork = (): void => {
    const w = cluster.fork(env);
    w.on('message', (m: unknown) => {
      onMessage(w, m);
    });
  };

  cluster.on('exit', (w, code, signal) => {
    attached.delete(w.id);
    metrics.onExit(w);
    for (const [id, round] of rounds) {
      if (round.waiting.delete(w.id) && round.waiting.size === 0) finish(id);
    }
    for (const [id, c] of changes) {
      if (c.waiting.delete(w.id) && c.waiting.size === 0) changeDone(id);
    }
    const live = Object.keys(cluster.workers ?? {}).length;
    if (stopping) {
      if (live === 0) process.exit(0);
      return;
    }
    log.error('worker exited', { worker_pid: w.process.pid, code, signal });
    if (!started.has(w.id)) {
      log.error('a worker failed to start; stopping the node');
      stopAll(1);
      return;
    }
    started.delete(w.id);
    const now = Date.now();
    crashes.push(now);
    while (crashes.length > 0 && (crashes[0] ?? now) < now - CRASH_WINDOW_MS) crashes.shift();
    if (crashes.length > MAX_CRASHES) {
      log.error('workers keep crashing; stopping the node', { crashes: crashes.length });
      stopAll(1);
      return;
    }
    fork();
  });

  const stopAll = (exitCode: number): void => {
    if (stopping) return;
    stopping = true;
    process.exitCode = exitCode;
    void streams?.stop();
    const workers = Object.values(cluster.workers ?? {}).filter((x): x is Worker => x !== undefined);
    if (workers.length === 0) process.exit(exitCode);
    for (const w of workers) w.process.kill('SIGTERM');
    setTimeout(() => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(exitCode);
    }, opts.shutdownTimeoutMs + 2000).unref();
  };

  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.on(sig, () => {
      log.info('stopping', { signal: sig });
      stopAll(0);
    });
  }
  log.info('starting workers', { workers: opts.workers });
  // The modules this process compiled (main.ts turned the compile cache on): the workers load
  // them from the cache, without Node's TypeScript stripper.
  flushCompileCache();
  for (let i = 0; i < opts.workers; i++) fork();
}
