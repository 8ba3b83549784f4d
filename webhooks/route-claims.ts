/**
 * The route claims of every API, kept by watching the three API kinds, so that the route check
 * (routes.ts `findConflict`) costs a map lookup instead of a LIST of every API (and a GET of
 * every OAS-based API's ConfigMap) on every admission.
 *
 * The cache may be stale; a refusal must not be. It is used one way only: a claim the cache
 * holds is a candidate, re-read fresh (a GET of the API and of its document's ConfigMap) before
 * the webhook refuses; gone, or no longer claiming the route, it is dropped and the object
 * admitted. So the cache aims to hold a superset of the real claims: a claim it holds in excess
 * costs a GET when someone asks for that route; a claim it misses would admit a conflict.
 *
 * Documents. The claim of an OAS or streams API is in the document its ConfigMap holds, and
 * ConfigMaps are not watched (every ConfigMap of the cluster would be cached). Instead:
 * - an API's document is read (a GET) when the API itself is seen: at the first list, on create,
 *   and on an update that changes its spec or labels (status writes don't re-read it);
 * - a change of the document is seen by the ConfigMap validating webhook, which this same server
 *   answers (configmap.validate.ts): once it admits an update of a ConfigMap that APIs read, the
 *   claims under the new content are added beside the current ones (`noteConfigMap`), and the
 *   ConfigMap is re-read a little later, when the write has landed, to drop the ones it replaced.
 * Where the ConfigMap webhook is not installed (values `webhooks.configMaps.enabled: false`, or
 * an excluded namespace) a document change is not checked at admission at all, as before this
 * cache; the cache then learns the new claim at the API's next change, or when a fresh read of
 * the candidate corrects it.
 *
 * Two concurrent admissions claiming the same route may both be admitted, as before the cache:
 * neither is stored when the other is checked (admission is not a transaction; the operator
 * reports the conflict on the API's status).
 */
import type { Logger } from '../lib/log.ts';
import { errorMessage } from '../lib/errors.ts';
import { configMapDataOf, metadataOf, metaOf } from './access.ts';
import type { ApiKind, ConfigMapContent, RouteClaimSource } from './lookups.ts';
import { apiDefinitionClaim, claimFromConfigMap, claimKey, documentRefOf, sameApi } from './routes.ts';
import type { RouteClaim } from './routes.ts';

/** `kind/namespace/name`: one API. */
const apiId = (kind: string, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;
const idOf = (c: RouteClaim): string => apiId(c.kind, c.namespace, c.name);

/**
 * Claims by API and by claim key (`claimKey` of routes.ts: two claims conflict exactly when
 * their keys are equal). An API may hold more than one claim while a document change is pending.
 */
export class RouteClaimIndex {
  readonly #byApi = new Map<string, RouteClaim[]>();
  readonly #byKey = new Map<string, Map<string, RouteClaim>>();

  /** Replaces the claims of `api` (`kind/namespace/name`). */
  set(api: string, claims: readonly RouteClaim[]): void {
    this.delete(api);
    for (const c of claims) this.add(api, c);
  }

  /** Adds a claim of `api` beside those it holds (replacing one of the same key). */
  add(api: string, claim: RouteClaim): void {
    const key = claimKey(claim);
    const held = (this.#byApi.get(api) ?? []).filter((c) => claimKey(c) !== key);
    this.#byApi.set(api, [...held, claim]);
    let apis = this.#byKey.get(key);
    if (apis === undefined) {
      apis = new Map();
      this.#byKey.set(key, apis);
    }
    apis.set(api, claim);
  }

  /** Forgets every claim of `api`. */
  delete(api: string): void {
    for (const c of this.#byApi.get(api) ?? []) {
      const key = claimKey(c);
      const apis = this.#byKey.get(key);
      apis?.delete(api);
      if (apis?.size === 0) this.#byKey.delete(key);
    }
    this.#byApi.delete(api);
  }

  /** The claims of `api`. */
  claimsOf(api: string): readonly RouteClaim[] {
    return this.#byApi.get(api) ?? [];
  }

  /** Claims of other APIs with the same key as `claim`: the candidates for a conflict. */
  candidates(claim: RouteClaim): RouteClaim[] {
    return [...(this.#byKey.get(claimKey(claim))?.values() ?? [])].filter((c) => !sameApi(c, claim));
  }

  /** How many APIs hold a claim. */
  get size(): number {
    return this.#byApi.size;
  }
}

/** What the cache needs from the cluster. */
export interface RouteClaimCacheDeps {
  /** The claim of an OAS-based API object as it is: a read of its document's ConfigMap. */
  claimOf: (kind: ApiKind, obj: unknown) => Promise<RouteClaim | undefined>;
  /** The claim of an API read now (a GET of it and of its document); none when gone. */
  fresh: (kind: ApiKind, namespace: string, name: string) => Promise<RouteClaim | undefined>;
  log: Logger;
  /** Document reads in flight at once (the first list reads one per OAS-based API). */
  concurrency?: number;
  /** Delay of the re-read of a ConfigMap after its update was admitted (the write lands after). */
  recheckMs?: number;
  /** Delay before a failed document read is retried; doubled on each failure, capped at 30 s. */
  retryMs?: number;
}

/** An OAS-based API, as the cache remembers it to re-read its document. */
interface DocumentApi {
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition';
  obj: unknown;
}

const sameSource = (a: unknown, b: unknown): boolean =>
  metadataOf(a).generation === metadataOf(b).generation &&
  metadataOf(a).generation !== undefined &&
  JSON.stringify(metadataOf(a).labels ?? {}) === JSON.stringify(metadataOf(b).labels ?? {});

/** The watch cache of route claims; see the top of this file. */
export class RouteClaimCache implements RouteClaimSource {
  readonly index = new RouteClaimIndex();
  readonly #deps: RouteClaimCacheDeps;
  /** A counter per API, bumped by each watch event: a read started before the last one is dropped. */
  readonly #generation = new Map<string, number>();
  /** OAS-based APIs by the `namespace/name` of the ConfigMap they read. */
  readonly #readers = new Map<string, Map<string, DocumentApi>>();
  readonly #readerOf = new Map<string, string>();
  readonly #queue: (() => Promise<void>)[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  #running = 0;
  #idle: (() => void)[] = [];
  #synced = false;
  #stopped = false;

  constructor(deps: RouteClaimCacheDeps) {
    this.#deps = deps;
  }

  /** Whether the first list of every kind was seen and its documents read (`markSynced`). */
  synced(): boolean {
    return this.#synced;
  }

  /**
   * Called once every kind has been listed: resolves when the documents read for that list are
   * in, and the cache answers the route check from then on.
   */
  async markSynced(): Promise<void> {
    while (this.#running > 0 || this.#queue.length > 0) {
      await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
    this.#synced = !this.#stopped;
    this.#deps.log.info('route claims cached', { apis: this.index.size });
  }

  /** Stops pending re-reads. */
  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#queue.length = 0;
  }

  /** A watch event of one of the three API kinds (an informer handler). */
  observe(kind: ApiKind, event: 'add' | 'update' | 'delete', obj: unknown, old?: unknown): void {
    const { namespace, name } = metaOf(obj);
    const id = apiId(kind, namespace, name);
    const generation = (this.#generation.get(id) ?? 0) + 1;
    if (event === 'delete') {
      this.#generation.delete(id);
      this.index.delete(id);
      this.#setReader(id, undefined);
      return;
    }
    this.#generation.set(id, generation);
    if (kind === 'ApiDefinition') {
      // Its claim is in its spec: nothing to read.
      this.#set(id, generation, apiDefinitionClaim(obj));
      return;
    }
    this.#setReader(id, { kind, obj });
    // A status write changes neither the spec nor the labels: the document needs no new read.
    if (event === 'update' && old !== undefined && sameSource(obj, old)) return;
    // Until the document is read, the claims held (those of the previous version) stay.
    this.#read(id, generation, kind, obj, 0);
  }

  /**
   * The ConfigMap `namespace/name` was admitted with `content` (an update the ConfigMap webhook
   * allowed): the claims its readers make under it are added now, and the ConfigMap is re-read
   * once the write has landed to drop the claims it replaced.
   */
  noteConfigMap(namespace: string, name: string, content: ConfigMapContent): void {
    const readers = this.#readers.get(`${namespace}/${name}`);
    if (readers === undefined) return;
    for (const [id, { kind, obj }] of readers) {
      const claim = claimFromConfigMap(kind, obj, content);
      if (claim !== undefined) this.index.add(id, claim);
    }
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      for (const [id, { kind, obj }] of this.#readers.get(`${namespace}/${name}`) ?? []) {
        this.#read(id, this.#generation.get(id) ?? 0, kind, obj, 0);
      }
    }, this.#deps.recheckMs ?? 5_000);
    timer.unref();
    this.#timers.add(timer);
  }

  /**
   * The other API claiming `claim`'s route, re-read fresh: a candidate of the cache that is gone
   * or claims another route now is corrected and skipped.
   */
  async conflict(claim: RouteClaim): Promise<RouteClaim | undefined> {
    const key = claimKey(claim);
    for (const candidate of this.index.candidates(claim)) {
      const id = idOf(candidate);
      const generation = this.#generation.get(id);
      const fresh = await this.#deps.fresh(candidate.kind, candidate.namespace, candidate.name);
      if (fresh !== undefined && claimKey(fresh) === key) return fresh;
      // Stale. A watch event since the read started has the last word.
      if (this.#generation.get(id) === generation) this.index.set(id, fresh === undefined ? [] : [fresh]);
      this.#deps.log.debug('stale route claim dropped', { api: id, claims: fresh === undefined ? 0 : 1 });
    }
    return undefined;
  }

  #setReader(id: string, api: DocumentApi | undefined): void {
    const before = this.#readerOf.get(id);
    if (before !== undefined) {
      const readers = this.#readers.get(before);
      readers?.delete(id);
      if (readers?.size === 0) this.#readers.delete(before);
      this.#readerOf.delete(id);
    }
    const ref = api === undefined ? undefined : documentRefOf(api.kind, api.obj);
    if (api === undefined || ref === undefined) return;
    const cm = `${ref.namespace}/${ref.name}`;
    let readers = this.#readers.get(cm);
    if (readers === undefined) {
      readers = new Map();
      this.#readers.set(cm, readers);
    }
    readers.set(id, api);
    this.#readerOf.set(id, cm);
  }

  #read(id: string, generation: number, kind: ApiKind, obj: unknown, failures: number): void {
    this.#enqueue(async () => {
      if (this.#generation.get(id) !== generation) return;
      try {
        this.#set(id, generation, await this.#deps.claimOf(kind, obj));
      } catch (err) {
        // Until the read succeeds, the claims held stay (the previous version's, if any).
        const delay = Math.min((this.#deps.retryMs ?? 1_000) * 2 ** failures, 30_000);
        this.#deps.log.warn('document read failed, retrying', {
          api: id,
          error: errorMessage(err),
          retryInMs: delay,
        });
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          this.#read(id, generation, kind, obj, failures + 1);
        }, delay);
        timer.unref();
        this.#timers.add(timer);
      }
    });
  }

  #set(id: string, generation: number, claim: RouteClaim | undefined): void {
    if (this.#generation.get(id) !== generation) return;
    this.index.set(id, claim === undefined ? [] : [claim]);
  }

  #enqueue(job: () => Promise<void>): void {
    if (this.#stopped) return;
    this.#queue.push(job);
    this.#pump();
  }

  #pump(): void {
    const limit = this.#deps.concurrency ?? 8;
    while (this.#running < limit && this.#queue.length > 0) {
      const job = this.#queue.shift();
      if (job === undefined) break;
      this.#running++;
      void job().finally(() => {
        this.#running--;
        this.#pump();
        if (this.#running === 0 && this.#queue.length === 0) {
          const waiting = this.#idle;
          this.#idle = [];
          for (const resolve of waiting) resolve();
        }
      });
    }
  }
}

/** The `namespace/name` and content of a ConfigMap object. */
export function configMapOf(obj: unknown): { namespace: string; name: string; content: ConfigMapContent } {
  return {
    ...metaOf(obj),
    content: {
      data: (configMapDataOf(obj).data ?? {}) as Record<string, string>,
      binaryData: (configMapDataOf(obj).binaryData ?? {}) as Record<string, string>,
    },
  };
}
