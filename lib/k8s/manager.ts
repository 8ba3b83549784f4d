import type * as k8s from '@kubernetes/client-node';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../log.ts';
import { errorMessage } from '../errors.ts';
import { Informer, NOT_SERVED, objectKey, type InformerEvent, type WatchSpec } from './informer.ts';
import { WorkQueue, type WorkResult } from './workqueue.ts';

/** A controller: a primary kind whose keys it reconciles, and the kinds that lead back to it. */
export interface ControllerSpec {
  /** Name in logs and metrics, e.g. `apidefinition`. */
  name: string;
  /** The primary kind: every change to one of its objects queues that object's key. */
  watch: WatchSpec;
  /** Reconciles one key (`namespace/name`); throws to retry with backoff. */
  reconcile: (key: string) => Promise<WorkResult>;
  /**
   * Other kinds whose changes queue keys of this controller (a ConfigMap queues its APIs). Every
   * event reaches `map`, status updates included; `event` lets it skip those it does not need.
   */
  watches?: readonly {
    watch: WatchSpec;
    map: (obj: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) => string[];
  }[];
  workers?: number;
}

/** Options of {@link ControllerManager}. */
export interface ManagerOptions {
  kc: k8s.KubeConfig;
  log: Logger;
  registry: Registry;
  /** Every primary object is queued again this often (the controller cache expiry). */
  resyncPeriodMs: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Whether an update is one a reconciler must see: a new generation (spec), a deletion request,
 * or new labels or annotations. Status and finalizer writes, most of them the controller's own,
 * are skipped; the periodic resync still brings every object back.
 */
export function specChanged(obj: k8s.KubernetesObject, old: k8s.KubernetesObject): boolean {
  const a = obj.metadata ?? {};
  const b = old.metadata ?? {};
  // Kinds without a generation (ConfigMaps, Secrets) change whenever their data does.
  if (a.generation === undefined) return true;
  return (
    a.generation !== b.generation ||
    (a.deletionTimestamp === undefined) !== (b.deletionTimestamp === undefined) ||
    JSON.stringify(a.labels ?? {}) !== JSON.stringify(b.labels ?? {}) ||
    JSON.stringify(a.annotations ?? {}) !== JSON.stringify(b.annotations ?? {})
  );
}

function specKey(spec: WatchSpec): string {
  return `${spec.apiVersion}/${spec.kind}@${[...spec.namespaces].sort().join(',')}`;
}

/**
 * Runs controllers the way an operator framework does: shared informers per kind, a work queue
 * per controller, a periodic resync of every object, and metrics. Queues start only when every
 * informer has listed once, so a reconciler never sees a half-filled cache; at start every
 * object is therefore reconciled.
 */
export class ControllerManager {
  readonly #opts: ManagerOptions;
  readonly #informers = new Map<string, Informer<k8s.KubernetesObject>>();
  readonly #queues = new Map<string, WorkQueue>();
  readonly #controllers: ControllerSpec[] = [];
  readonly #metrics: {
    total: Counter<'controller' | 'result'>;
    duration: Histogram<'controller'>;
    depth: Gauge<'controller'>;
    waiting: Gauge<'controller'>;
  };
  #resyncTimer: NodeJS.Timeout | undefined;
  #synced = false;
  /** Controllers waiting for a kind to be listable, and why. */
  readonly #waiting = new Map<string, string>();

  constructor(opts: ManagerOptions) {
    this.#opts = opts;
    const registers = [opts.registry];
    this.#metrics = {
      total: new Counter({
        name: 'svc_reconcile_total',
        help: 'Reconciles by controller and result (success or error).',
        labelNames: ['controller', 'result'],
        registers,
      }),
      duration: new Histogram({
        name: 'svc_reconcile_duration_seconds',
        help: 'Time spent in one reconcile.',
        labelNames: ['controller'],
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
      }),
      waiting: new Gauge({
        name: 'svc_controller_waiting',
        help: 'Controllers waiting (1) until a kind of theirs can be listed: its CRD installed, its RBAC granted.',
        labelNames: ['controller'],
        registers,
        collect: () => {
          for (const c of this.#controllers) {
            this.#metrics.waiting.set({ controller: c.name }, this.#waiting.has(c.name) ? 1 : 0);
          }
        },
      }),
      depth: new Gauge({
        name: 'svc_workqueue_depth',
        help: 'Keys waiting in the work queue.',
        labelNames: ['controller'],
        registers,
        collect: () => {
          for (const [name, q] of this.#queues) this.#metrics.depth.set({ controller: name }, q.depth);
        },
      }),
    };
  }

  /** True once every informer has listed its objects. */
  get synced(): boolean {
    return this.#synced;
  }

  /** Controllers not started because a kind of theirs can't be listed yet, with the reason. */
  get waiting(): ReadonlyMap<string, string> {
    return this.#waiting;
  }

  /** The shared informer of a kind (created on first use). */
  informer<T extends k8s.KubernetesObject>(spec: WatchSpec): Informer<T> {
    const key = specKey(spec);
    let inf = this.#informers.get(key);
    if (!inf) {
      inf = new Informer(this.#opts.kc, spec, this.#opts.log);
      this.#informers.set(key, inf);
    }
    return inf as unknown as Informer<T>;
  }

  /** The queue of a controller, to queue keys from elsewhere. */
  queue(name: string): WorkQueue | undefined {
    return this.#queues.get(name);
  }

  /** Registers a controller; call before start. */
  add(spec: ControllerSpec): void {
    const log = this.#opts.log.child({ controller: spec.name });
    const queue = new WorkQueue(spec.reconcile, {
      workers: spec.workers ?? 4,
      paused: true,
      baseBackoffMs: this.#opts.baseBackoffMs,
      maxBackoffMs: this.#opts.maxBackoffMs,
      onDone: (key, outcome) => {
        this.#metrics.total.inc({ controller: spec.name, result: outcome.ok ? 'success' : 'error' });
        this.#metrics.duration.observe({ controller: spec.name }, outcome.durationMs / 1000);
        if (!outcome.ok)
          log.warn('reconcile failed, will retry', { object: key, error: errorMessage(outcome.error) });
      },
    });
    this.#queues.set(spec.name, queue);
    this.#controllers.push(spec);
    this.informer(spec.watch).on((event, obj, old) => {
      if (event === 'update' && old && !specChanged(obj, old)) return;
      queue.add(objectKey(obj));
    });
    for (const w of spec.watches ?? []) {
      this.informer(w.watch).on((event, obj, old) => {
        for (const key of w.map(obj, old, event)) queue.add(key);
      });
    }
  }

  /**
   * Lists every kind, then starts the queues and the resync timer. A controller one of whose
   * kinds can't be listed yet (its CRD not installed, or its RBAC not granted: an operator newer
   * than its chart) waits, saying so, and starts once they list; the others start at once, and
   * the manager counts as synced, so one missing kind does not keep the operator un-ready.
   */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.start()));
    this.#synced = true;
    for (const c of this.#controllers) {
      const q = this.#queues.get(c.name);
      // A secondary kind the API server does not serve (its CRD not installed) has no objects to
      // map: the controller starts without it, and its informer's events queue what they map to
      // once the CRD is installed. Its own kind, or a forbidden one, holds it back.
      const blocking = [
        this.informer(c.watch),
        ...(c.watches ?? []).map((w) => this.informer(w.watch)).filter((i) => i.unavailable !== NOT_SERVED),
      ].filter((i) => !i.listed);
      if (blocking.length === 0) {
        q?.start();
        continue;
      }
      const kinds = blocking.map((i) => `${i.spec.kind}: ${i.unavailable ?? 'not listed yet'}`).join('; ');
      this.#waiting.set(c.name, kinds);
      this.#opts.log.warn(`controller ${c.name} waits until its kinds can be listed`, {
        controller: c.name,
        waitingFor: kinds,
      });
      void Promise.all(blocking.map((i) => i.whenListed())).then(() => {
        if (!this.#waiting.delete(c.name)) return;
        q?.start();
        this.#opts.log.info(`controller ${c.name} started: its kinds are listed now`, { controller: c.name });
      });
    }
    this.#resyncTimer = setInterval(() => {
      this.resync();
    }, this.#opts.resyncPeriodMs);
    this.#resyncTimer.unref();
    this.#opts.log.info('controllers started', {
      controllers: this.#controllers.map((c) => c.name).filter((n) => !this.#waiting.has(n)),
    });
  }

  /** Queues every primary object of every controller (what the periodic resync does). */
  resync(): void {
    for (const c of this.#controllers) {
      const q = this.#queues.get(c.name);
      for (const obj of this.informer(c.watch).list()) q?.add(objectKey(obj));
    }
  }

  /** Stops the resync, the queues (letting work in progress finish) and the informers. */
  async stop(): Promise<void> {
    this.#waiting.clear();
    if (this.#resyncTimer) clearInterval(this.#resyncTimer);
    await Promise.all([...this.#queues.values()].map((q) => q.stop()));
    await Promise.all([...this.#informers.values()].map((i) => i.stop()));
  }
}
