/**
 * How `/svc/reload` reaches every process of one gateway node. A single process reloads itself;
 * a cluster worker asks the primary, which has every worker reload and answers with the outcome
 * of all of them.
 */
import { randomUUID } from 'node:crypto';
import type { ReloadReport } from '../admin/index.ts';
import { COLLECTIONS, type Collection } from '../store/store.ts';

/** Node-wide reloads. */
export interface NodeBus {
  /** Reloads every process of this node and reports (ok only when all are). */
  reloadNode(): Promise<ReloadReport>;
  /** Registers this process's own reload. */
  serve(reloadLocal: () => Promise<ReloadReport>): void;
  /** Tells the other processes of this node that a document changed. */
  changed(collection: Collection, id: string): void;
  /** Receives what other processes of this node changed. */
  onChanged(handler: (collection: Collection, id: string) => void): void;
  /** Stops listening. */
  close(): void;
}

/** The bus of a gateway running as one process. */
export function localBus(): NodeBus {
  let local: (() => Promise<ReloadReport>) | undefined;
  return {
    reloadNode: () =>
      local === undefined ? Promise.resolve({ ok: false, message: 'not started' }) : local(),
    serve: (fn) => {
      local = fn;
    },
    changed: () => undefined,
    onChanged: () => undefined,
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
  | { svc: 'changed'; id: string; collection: Collection };

/** Whether an IPC message is one of ours. */
export function isBusMessage(m: unknown): m is BusMessage {
  return (
    m !== null &&
    typeof m === 'object' &&
    typeof (m as { svc?: unknown }).svc === 'string' &&
    typeof (m as { id?: unknown }).id === 'string'
  );
}

/** How long a worker waits for the primary's answer to a node reload. */
const NODE_RELOAD_TIMEOUT_MS = 60_000;

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
    } else if (m.svc === 'reload-node-done') {
      waiting.get(m.id)?.(m.report);
      waiting.delete(m.id);
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
    changed: (collection, id) => {
      send({ svc: 'changed', id, collection } satisfies BusMessage);
    },
    onChanged: (handler) => {
      changedHandler = handler;
    },
    close: () => {
      process.off('message', onMessage);
    },
  };
}
