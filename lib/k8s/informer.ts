import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { errorMessage } from '../errors.ts';
import { statusOf } from './client.ts';
import { backoffMs } from './workqueue.ts';

/** Which objects an informer follows. */
export interface WatchSpec {
  apiVersion: string;
  kind: string;
  plural: string;
  /** Namespaces to watch; empty watches all of them. */
  namespaces: readonly string[];
}

/** What happened to an object. */
export type InformerEvent = 'add' | 'update' | 'delete';

/** Called for each change; `old` is the previous version on update. */
export type InformerHandler<T> = (event: InformerEvent, obj: T, old?: T) => void;

/** `namespace/name` of an object, the key the work queue uses. */
export function objectKey(obj: k8s.KubernetesObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/** Splits a `namespace/name` key. */
export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

function collectionPath(spec: WatchSpec, namespace: string | undefined): string {
  const base = spec.apiVersion.includes('/') ? `/apis/${spec.apiVersion}` : `/api/${spec.apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${spec.plural}` : `${base}/${spec.plural}`;
}

interface WatchEntry<T extends k8s.KubernetesObject> {
  lw: k8s.ListWatch<T>;
  failures: number;
  timer?: NodeJS.Timeout;
  /** Why the first list can't succeed yet (the kind not served, or forbidden), until it does. */
  unavailable?: string;
}

/** A secondary index: `of` gives the values an object is found under, `keys` the objects under each value. */
interface Index<T> {
  of: (obj: T) => readonly string[];
  keys: Map<string, Set<string>>;
}

/**
 * Why a list failed for a reason that only a change to the cluster mends (its CRD installed, its
 * RBAC granted), or undefined for any other failure (the API server unreachable, say).
 */
export function unavailableReason(err: unknown): string | undefined {
  const code = statusOf(err);
  if (code === 403) return FORBIDDEN;
  if (code === 404 || (err instanceof Error && err.message.includes('Unrecognized API version and kind'))) {
    return NOT_SERVED;
  }
  return undefined;
}

/** `unavailable` of a kind the API server does not serve: no object of it can exist. */
export const NOT_SERVED = 'not served by the API server (CRD not installed)';
/** `unavailable` of a kind its client may not list: objects of it may exist, unseen. */
export const FORBIDDEN = 'forbidden (RBAC)';

/**
 * A cache of one kind, kept current by list and watch. client-node's ListWatch relists after
 * 410 Gone and reconnects after watch time-outs; on any other error it stops, and this class
 * restarts it with capped exponential backoff, so a watch never stays dead.
 */
export class Informer<T extends k8s.KubernetesObject> {
  readonly spec: WatchSpec;
  readonly #kc: k8s.KubeConfig;
  readonly #log: Logger;
  readonly #handlers: InformerHandler<T>[] = [];
  readonly #objects = new Map<string, T>();
  readonly #watches: WatchEntry<T>[] = [];
  readonly #backoff: { baseMs: number; maxMs: number };
  /** Secondary indexes by name. */
  readonly #indexes = new Map<string, Index<T>>();
  #stopped = false;
  #listed: Promise<void> = Promise.resolve();

  constructor(
    kc: k8s.KubeConfig,
    spec: WatchSpec,
    log: Logger,
    backoff: { baseMs: number; maxMs: number } = { baseMs: 500, maxMs: 30_000 },
  ) {
    this.#kc = kc;
    this.spec = spec;
    this.#log = log.child({ informer: spec.kind });
    this.#backoff = backoff;
  }

  /** Registers a handler; handlers run synchronously, in registration order. */
  on(handler: InformerHandler<T>): void {
    this.#handlers.push(handler);
  }

  /** The cached object, if any. */
  get(namespace: string, name: string): T | undefined {
    return this.#objects.get(`${namespace}/${name}`);
  }

  /** Every cached object. */
  list(): T[] {
    return [...this.#objects.values()];
  }

  /**
   * Adds a secondary index (as client-go's Indexer): `of` gives the values an object is found
   * under (a reference it holds, say), so that "which objects refer to X" is a map lookup, not a
   * scan of every object. Adding an index of a name that exists keeps the first one.
   */
  addIndex(name: string, of: (obj: T) => readonly string[]): void {
    if (this.#indexes.has(name)) return;
    const index = { of, keys: new Map<string, Set<string>>() };
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#objects) this.#indexAdd(index, key, obj);
  }

  /** The cached objects an index finds under `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.#indexes.get(name);
    if (index === undefined) throw new Error(`informer ${this.spec.kind}: no index ${name}`);
    const out: T[] = [];
    for (const key of index.keys.get(value) ?? []) {
      const obj = this.#objects.get(key);
      if (obj !== undefined) out.push(obj);
    }
    return out;
  }

  #indexAdd(index: Index<T>, key: string, obj: T): void {
    for (const value of index.of(obj)) {
      let keys = index.keys.get(value);
      if (keys === undefined) {
        keys = new Set();
        index.keys.set(value, keys);
      }
      keys.add(key);
    }
  }

  #indexRemove(index: Index<T>, key: string, obj: T): void {
    for (const value of index.of(obj)) {
      const keys = index.keys.get(value);
      keys?.delete(key);
      if (keys?.size === 0) index.keys.delete(value);
    }
  }

  /**
   * Lists and starts watching; resolves once every namespace has been listed at least once, or
   * its first list was refused for a reason only a change to the cluster mends (`unavailable`
   * says which); such a list is retried with backoff, and `whenListed` resolves once it passes.
   */
  async start(): Promise<void> {
    const objects = k8s.KubernetesObjectApi.makeApiClient(this.#kc);
    const watch = new k8s.Watch(this.#kc);
    const namespaces = this.spec.namespaces.length > 0 ? this.spec.namespaces : [undefined];
    const entries = namespaces.map((ns) => {
      const listFn = async (): Promise<k8s.KubernetesListObject<T>> =>
        objects.list<T>(this.spec.apiVersion, this.spec.kind, ns);
      const lw = new k8s.ListWatch<T>(collectionPath(this.spec, ns), watch, listFn, false);
      const entry: WatchEntry<T> = { lw, failures: 0 };
      this.#watches.push(entry);
      lw.on(k8s.ADD, (obj) => {
        this.#apply('add', obj);
      });
      lw.on(k8s.UPDATE, (obj) => {
        this.#apply('update', obj);
      });
      lw.on(k8s.DELETE, (obj) => {
        this.#apply('delete', obj);
      });
      lw.on(k8s.ERROR, (err: unknown) => {
        this.#restart(entry, err);
      });
      lw.on(k8s.CONNECT, () => {
        entry.failures = 0;
      });
      return entry;
    });
    // A failed first list has scheduled a restart; these wait for it to succeed.
    this.#listed = Promise.all(
      entries.map((e) => this.#until(() => e.lw.latestResourceVersion() !== '')),
    ).then(() => undefined);
    await Promise.all(
      entries.map(async (e) => {
        await e.lw.start();
        await this.#until(() => e.lw.latestResourceVersion() !== '' || e.unavailable !== undefined);
      }),
    );
  }

  /** True once every namespace has been listed. */
  get listed(): boolean {
    return this.#watches.every((w) => w.lw.latestResourceVersion() !== '');
  }

  /** Why a namespace is not listed yet (the kind not served, or forbidden), if one is not. */
  get unavailable(): string | undefined {
    return this.#watches.find((w) => w.lw.latestResourceVersion() === '' && w.unavailable)?.unavailable;
  }

  /** Resolves once every namespace has been listed (after `start`). */
  whenListed(): Promise<void> {
    return this.#listed;
  }

  async #until(done: () => boolean): Promise<void> {
    while (!this.#stopped && !done()) await new Promise((r) => setTimeout(r, 100));
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const w of this.#watches) {
      if (w.timer) clearTimeout(w.timer);
      await w.lw.stop();
    }
  }

  #restart(entry: WatchEntry<T>, err: unknown): void {
    if (this.#stopped || entry.timer) return;
    entry.failures++;
    const delay = backoffMs(entry.failures, this.#backoff.baseMs, this.#backoff.maxMs);
    const why = entry.lw.latestResourceVersion() === '' ? unavailableReason(err) : undefined;
    if (why !== undefined && entry.unavailable === undefined) {
      this.#log.warn(`${this.spec.kind} ${why}: waiting for it`, {
        error: errorMessage(err),
        retryInMs: delay,
      });
    } else if (why === undefined) {
      this.#log.warn('watch failed, restarting', { error: errorMessage(err), retryInMs: delay });
    }
    entry.unavailable = why;
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (this.#stopped) return;
      entry.lw.start().catch((e: unknown) => {
        this.#restart(entry, e);
      });
    }, delay);
    entry.timer.unref();
  }

  #apply(event: InformerEvent, obj: T): void {
    // managedFields are often the largest part of an object and no reconciler reads them.
    if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
    // The items of a list of a built-in kind (Ingress, Service) come without kind and
    // apiVersion, where a watch event's object has them: every cached object gets them, so that
    // an Event about it names its kind (involvedObject.kind) whether it was listed or watched.
    obj.kind ??= this.spec.kind;
    obj.apiVersion ??= this.spec.apiVersion;
    const key = objectKey(obj);
    const old = this.#objects.get(key);
    if (event === 'delete') this.#objects.delete(key);
    else this.#objects.set(key, obj);
    for (const index of this.#indexes.values()) {
      if (old !== undefined) this.#indexRemove(index, key, old);
      if (event !== 'delete') this.#indexAdd(index, key, obj);
    }
    // A relist reports every object as an update; unchanged ones need no work.
    if (event !== 'delete' && old?.metadata?.resourceVersion === obj.metadata?.resourceVersion && old) return;
    for (const h of this.#handlers) h(event === 'update' && !old ? 'add' : event, obj, old);
  }
}
