/**
 * Node-wide scrapes with `--workers` > 1: the worker a scrape reaches asks the cluster primary
 * (`metrics-node` on the node bus); the primary asks every worker for its registry, merges them
 * with prom-client's AggregatorRegistry and answers the asking worker with the text. A worker
 * that doesn't answer in time is left out of that scrape rather than failing it.
 */
import type { Worker } from 'node:cluster';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { METRICS_ROUND_TIMEOUT_MS, type BusMessage } from '../server/node-bus.ts';
import { aggregateMetrics, type MetricsSnapshot } from './metrics.ts';

interface Round {
  origin: Worker;
  waiting: Set<number>;
  snapshots: MetricsSnapshot[];
  timer: NodeJS.Timeout;
}

/** The primary's side of node-wide scrapes. */
export class MetricsRelay {
  readonly #log: Logger;
  readonly #workers: () => Worker[];
  readonly #rounds = new Map<string, Round>();

  /** `workers`: the workers listening on the bus now. */
  constructor(opts: { log: Logger; workers: () => Worker[] }) {
    this.#log = opts.log;
    this.#workers = opts.workers;
  }

  /** Handles a bus message from worker `w`; true when it was about metrics. */
  onMessage(w: Worker, m: BusMessage): boolean {
    if (m.svc === 'metrics-node') {
      const workers = this.#workers();
      const round: Round = {
        origin: w,
        waiting: new Set(workers.map((x) => x.id)),
        snapshots: [],
        timer: setTimeout(() => {
          const r = this.#rounds.get(m.id);
          if (r !== undefined) {
            this.#log.warn('workers did not report their metrics in time', { workers: r.waiting.size });
          }
          this.#finish(m.id);
        }, METRICS_ROUND_TIMEOUT_MS),
      };
      this.#rounds.set(m.id, round);
      for (const x of workers) send(x, { svc: 'metrics', id: m.id });
      if (workers.length === 0) this.#finish(m.id);
      return true;
    }
    if (m.svc === 'metrics-local') {
      const round = this.#rounds.get(m.id);
      if (round?.waiting.delete(w.id) === true) {
        round.snapshots.push(m.snapshot);
        if (round.waiting.size === 0) this.#finish(m.id);
      }
      return true;
    }
    return false;
  }

  /** A worker exited: no round waits for it any longer. */
  onExit(w: Worker): void {
    for (const [id, round] of this.#rounds) {
      if (round.waiting.delete(w.id) && round.waiting.size === 0) this.#finish(id);
    }
  }

  #finish(id: string): void {
    const round = this.#rounds.get(id);
    if (round === undefined) return;
    this.#rounds.delete(id);
    clearTimeout(round.timer);
    aggregateMetrics(round.snapshots).then(
      (text) => {
        send(round.origin, { svc: 'metrics-node-done', id, text });
      },
      (err: unknown) => {
        this.#log.error('merging metrics failed', { error: errorMessage(err) });
        send(round.origin, { svc: 'metrics-node-done', id, text: '', error: errorMessage(err) });
      },
    );
  }
}

function send(w: Worker, m: BusMessage): void {
  if (w.isConnected()) w.send(m);
}
