/**
 * Lookups answered from memory: the svc kinds are listed once and watched (one informer per kind,
 * shared with the route-claim cache, main.ts), so that an admission review costs no request to
 * the API server. Before this, a DELETE listed every SecurityPolicy (or every
 * API), an update of any ConfigMap listed both OAS-based kinds, and a reference check made a GET;
 * during a burst of thousands of objects these competed with the burst's own writes.
 *
 * A cache lags the cluster by a watch event, so it is used in the direction where that is safe:
 * - a refusal that rests on what a cache holds (the dependents that block a DELETE) is confirmed
 *   by fresh reads first (`Lookups.live`, used by references.ts): an object deleted since is not
 *   named;
 * - an object this server has just admitted (CREATE or UPDATE of an svc kind) is held beside the
 *   cache for a while (`admitted`), so that a DELETE right after the create that made it a
 *   dependent is refused even before its watch event arrives;
 * - a reference the cache does not find is looked up fresh before a warning says it is missing.
 * ConfigMaps and Secrets are not watched (every one of the cluster would be held, Secrets with
 * their values): they are read when an object names one, as before. Nor are Ingresses: only a
 * template's DELETE (rare) asks for them, and a cache could miss one created a moment before it
 * (not admitted by this server, so not held), letting the template go while that Ingress uses
 * it; they are listed fresh, one namespace at a time.
 * Until a kind's first list is in, a review that needs it is refused with a message that says so
 * (`CacheNotSyncedError`), and the server is not ready.
 */
import { asObject, metaOf, topOf } from './access.ts';
import { CacheNotSyncedError } from './lookups.ts';
import type { Lookups, SvcKind, SvcKinds } from './lookups.ts';

/** One watched kind, as the lookups read it (an Informer, or a map in tests). */
export interface ObjectSource {
  get(namespace: string, name: string): unknown;
  list(): unknown[];
}

/** A watched kind and whether its first list is in. */
export class WatchedKind {
  readonly #source: ObjectSource;
  /** What the refusal while unsynced calls these objects ("SecurityPolicies"). */
  readonly what: string;
  #synced = false;
  #unlistable = false;

  constructor(what: string, source: ObjectSource) {
    this.what = what;
    this.#source = source;
  }

  /**
   * Called once the first list is in (the informer's `start` resolved), or when the kind is not
   * served (its CRD not installed: no object of it exists, and the informer fills the source
   * once it is).
   */
  markSynced(): void {
    this.#synced = true;
  }

  /**
   * The kind may not be listed (RBAC: a chart older than this image). Reviews that need it are
   * still refused, but it does not keep the server un-ready: every other review can be answered.
   */
  markUnlistable(): void {
    this.#unlistable = true;
  }

  synced(): boolean {
    return this.#synced;
  }

  /** Listed, or known to be unlistable until the cluster changes: nothing left to wait for. */
  settled(): boolean {
    return this.#synced || this.#unlistable;
  }

  /** The source, or a refusal when it has not listed its kind yet. */
  source(): ObjectSource {
    if (!this.#synced) throw new CacheNotSyncedError(this.what);
    return this.#source;
  }
}

/** What `watchLookups` reads. */
export interface WatchLookupsDeps {
  /** The API server's answers (kubeLookups): ConfigMaps, Secrets, and confirmations. */
  live: Lookups;
  kinds: Readonly<Record<SvcKind, WatchedKind>>;
  /** How long an admitted object is held beside the cache (its watch event comes well before). */
  admittedMs?: number;
  now?: () => number;
}

/** Lookups from watch caches, plus `admitted` (called for each CREATE or UPDATE admitted). */
export interface WatchLookups extends Lookups {
  /** `namespace`: the review's, for an object that leaves it out. */
  admitted(kind: SvcKind, obj: unknown, namespace?: string): void;
  /**
   * Whether every watched kind has been listed, or is known to be unlistable for now (forbidden):
   * the server can answer every review that does not need such a kind.
   */
  synced(): boolean;
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

/** Lookups that answer the svc kinds from watch caches; see the top of this file. */
export function watchLookups(deps: WatchLookupsDeps): WatchLookups {
  const { live } = deps;
  const holdMs = deps.admittedMs ?? 30_000;
  const now = deps.now ?? Date.now;
  /** Admitted objects by kind and `namespace/name`, with the time they were admitted. */
  const admitted = new Map<SvcKind, Map<string, { obj: unknown; at: number }>>();
  const recent = (kind: SvcKind): unknown[] => {
    const held = admitted.get(kind);
    if (held === undefined) return [];
    const out: unknown[] = [];
    const oldest = now() - holdMs;
    for (const [key, entry] of held) {
      if (entry.at < oldest) held.delete(key);
      else out.push(entry.obj);
    }
    return out;
  };
  return {
    live,
    configMap: (namespace, name) => live.configMap(namespace, name),
    secretKeys: (namespace, name) => live.secretKeys(namespace, name),
    async get<K extends SvcKind>(kind: K, namespace: string, name: string): Promise<SvcKinds[K] | undefined> {
      const cached = deps.kinds[kind].source().get(namespace, name);
      if (cached !== undefined) return cached as SvcKinds[K];
      const held = admitted.get(kind)?.get(keyOf(namespace, name));
      if (held !== undefined && held.at >= now() - holdMs) return held.obj as SvcKinds[K];
      // Not in the cache: created a moment ago, or really absent; only a read can tell.
      return live.get(kind, namespace, name);
    },
    list<K extends SvcKind>(kind: K): Promise<SvcKinds[K][]> {
      const cached = deps.kinds[kind].source().list();
      const extra = recent(kind);
      return Promise.resolve((extra.length === 0 ? cached : [...cached, ...extra]) as SvcKinds[K][]);
    },
    // Fresh: see the top of this file.
    ingresses: (namespace) => live.ingresses(namespace),
    admitted(kind, admittedObj, requestNamespace) {
      // The object of a review may leave its namespace to the request.
      const meta = asObject(topOf(admittedObj).metadata);
      const obj =
        meta !== undefined && meta.namespace === undefined && requestNamespace !== undefined
          ? { ...asObject(admittedObj), metadata: { ...meta, namespace: requestNamespace } }
          : admittedObj;
      const { namespace, name } = metaOf(obj);
      if (name === '') return;
      let held = admitted.get(kind);
      if (held === undefined) {
        held = new Map();
        admitted.set(kind, held);
      }
      held.delete(keyOf(namespace, name));
      held.set(keyOf(namespace, name), { obj, at: now() });
      // Drop the expired ones now and then, so that a quiet kind does not hold them forever.
      if (held.size % 256 === 0) recent(kind);
    },
    synced() {
      return Object.values(deps.kinds).every((k) => k.settled());
    },
  };
}
