/**
 * How `/svc/reload` reaches every process of one gateway node. A single process reloads itself;
 * a cluster worker asks the primary, which has every worker reload and answers with the outcome
 * of all of them. Metrics scrapes go the same way: a worker asks the primary, which merges every
 * worker's metrics.
 */
import { randomUUID } from 'node:crypto';
import type { ReloadReport } from '../admin/index.ts';
import type { MetricsSnapshot } from '../metrics/metrics.ts';
import { COLLECTIONS, type Collection } from '../store/store.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** Node-wide reloads. */
export interface NodeBus {
  /** Reloads every process of this node and reports (ok only when all are). */
  reloadNode(): Promise<ReloadReport>;
  /** Registers this process's own reload. */
  serve(reloadLocal: () => Promise<ReloadReport>): void;
  /**
   * Tells the other processes of this node that a document changed; resolves once every one of
   * them has forgotten its copy (or after CHANGED_ACK_TIMEOUT_MS, when one does not answer).
   */
  changed(collection: Collection, id: string): Promise<void>;
  /** Receives what other processes of this node changed. */
  onChanged(handler: (collection: Collection, id: string) => void): void;
  /** The Prometheus text of the metrics of every process of this node, merged. */
  nodeMetrics(): Promise<string>;
  /** Registers this process's metrics. */
  serveMetrics(local: ProcessMetrics): void;
  /** Stops listening. */
  close(): void;
}

/** One process's metrics, as the bus reads them (`Metrics`, gateway/metrics/). */
export interface ProcessMetrics {
  /** Prometheus text of this process alone. */
  text(): Promise<string>;
  /** The same for merging in the primary. */
  snapshot(): Promise<MetricsSnapshot>;
}

/** The bus of a gateway running as one process. */
export function localBus(): NodeBus {
  let local: (() => Promise<ReloadReport>) | undefined;
  let metrics: ProcessMetrics | undefined;
  return {
    reloadNode: () =>
      local === undefined ? Promise.resolve({ ok: false, message: 'not started' }) : local(),
    serve: (fn) => {
      local = fn;
    },
    changed: () => Promise.resolve(),
    onChanged: () => undefined,
    nodeMetrics: () => metrics?.text() ?? Promise.reject(new Error('metrics are not kept')),
    serveMetrics: (m) => {
      metrics = m;
    },
    close: () => undefined,
  };
}

/** Messages between the primary and its workers. */
export type BusMessage =
  | { svc: 'hello'; id: '' }
  | { svc: 'started'; id: '' }
  | { svc: 'reload-node'; id: string }
  | { svc: 'reload'; id: string }
  | { svc: 'reloaded'; id: string; report: ReloadReport }
  | { svc: 'reload-node-done'; id: string; report: ReloadReport }
  // `round` (a worker's change notice): the primary answers `changed-done` with it once every
  // other worker has sent `changed-ack`, each after forgetting its copy.
  | { svc: 'changed'; id: string; collection: Collection; round?: string }
  | { svc: 'changed-ack'; id: string }
  | { svc: 'changed-done'; id: string }
  // A worker asks for the node's metrics; the primary asks every worker for its own and answers
  // with the merged text (`error` when it could not).
  | { svc: 'metrics-node'; id: string }
  | { svc: 'metrics'; id: string }
  | { svc: 'metrics-local'; id: string; snapshot: MetricsSnapshot }
  | { svc: 'metrics-node-done'; id: string; text: string; error?: string };

/** Whether an IPC message is one of ours. */
export function isBusMessage(m: unknown): m is BusMessage {
  return isPlainObject(m) && typeof m.svc === 'string' && typeof m.id === 'string';
}

/** How long a worker waits for the primary's answer to a node reload. */
const NODE_RELOAD_TIMEOUT_MS = 60_000;
/**
 * How long a change notice waits for the other workers' acknowledgements: a worker that does not
 * answer in time (stuck, or dying) does not hold the write; its copy still ages out (sessions/).
 */
export const CHANGED_ACK_TIMEOUT_MS = 2_000;
/** How long the primary waits for the workers' metrics; the asking worker waits a little more. */
export const METRICS_ROUND_TIMEOUT_MS = 5_000;

/** The bus of a cluster worker (talks to the primary over the IPC channel). */
export function workerBus(): NodeBus {
  const send = process.send?.bind(process);
  if (send === undefined) throw new Error('workerBus: not a cluster worker (no IPC channel)');
  let local: (() => Promise<ReloadReport>) | undefined;
  // Node reloads asked for before this worker could reload: run once it can (its first load
  // then reads what the reload was asked for).
  const early: string[] = [];
  const waiting = new Map<string, (r: ReloadReport) => void>();
  let changedHandler: ((collection: Collection, id: string) => void) | undefined;
  let metrics: ProcessMetrics | undefined;
  const metricsWaiting = new Map<string, (m: { text: string; error?: string }) => void>();
  const changedWaiting = new Map<string, () => void>();
  const reload = (id: string, run: () => Promise<ReloadReport>): void => {
    void run().then((report) => send({ svc: 'reloaded', id, report } satisfies BusMessage));
  };
  const onMessage = (m: unknown): void => {
    if (!isBusMessage(m)) return;
    if (m.svc === 'reload') {
      if (local === undefined) early.push(m.id);
      else reload(m.id, local);
    } else if (m.svc === 'changed') {
      if ((COLLECTIONS as readonly unknown[]).includes(m.collection)) changedHandler?.(m.collection, m.id);
      // Forgotten (the handler is synchronous): the writer may answer now.
      if (typeof m.round === 'string') send({ svc: 'changed-ack', id: m.round } satisfies BusMessage);
    } else if (m.svc === 'changed-done') {
      changedWaiting.get(m.id)?.();
      changedWaiting.delete(m.id);
    } else if (m.svc === 'reload-node-done') {
      waiting.get(m.id)?.(m.report);
      waiting.delete(m.id);
    } else if (m.svc === 'metrics') {
      // A process without metrics yet (still starting) reports none rather than hold the round.
      void (metrics?.snapshot() ?? Promise.resolve([]))
        .catch(() => [])
        .then((snapshot) => send({ svc: 'metrics-local', id: m.id, snapshot } satisfies BusMessage));
    } else if (m.svc === 'metrics-node-done') {
      metricsWaiting.get(m.id)?.(m);
      metricsWaiting.delete(m.id);
    }
  };
  process.on('message', onMessage);
  // From now on this worker hears node reloads: the primary includes it in them.
  send({ svc: 'hello', id: '' } satisfies BusMessage);
  return {
    reloadNode: () =>
      new Promise((resolve) => {
        const id = randomUUID();
        const timer = setTimeout(() => {
          waiting.delete(id);
          resolve({ ok: false, message: 'the node did not finish reloading in time' });
        }, NODE_RELOAD_TIMEOUT_MS);
        waiting.set(id, (r) => {
          clearTimeout(timer);
          resolve(r);
        });
        send({ svc: 'reload-node', id } satisfies BusMessage);
      }),
    serve: (fn) => {
      local = fn;
      for (const id of early.splice(0)) reload(id, fn);
    },
    changed: (collection, id) =>
      new Promise((resolve) => {
        const round = randomUUID();
        const timer = setTimeout(() => {
          changedWaiting.delete(round);
          resolve();
        }, CHANGED_ACK_TIMEOUT_MS + 500);
        changedWaiting.set(round, () => {
          clearTimeout(timer);
          resolve();
        });
        send({ svc: 'changed', id, collection, round } satisfies BusMessage);
      }),
    onChanged: (handler) => {
      changedHandler = handler;
    },
    nodeMetrics: () =>
      new Promise((resolve, reject) => {
        const id = randomUUID();
        const timer = setTimeout(() => {
          metricsWaiting.delete(id);
          reject(new Error('the node did not report its metrics in time'));
        }, METRICS_ROUND_TIMEOUT_MS + 1_000);
        metricsWaiting.set(id, (r) => {
          clearTimeout(timer);
          if (r.error === undefined) resolve(r.text);
          else reject(new Error(r.error));
        });
        send({ svc: 'metrics-node', id } satisfies BusMessage);
      }),
    serveMetrics: (m) => {
      metrics = m;
    },
    close: () => {
      process.off('message', onMessage);
    },
  };
}
