/**
 * Keys with their policies applied, cached per process so a warm key costs no store round trip.
 * A key or policy written anywhere reaches every process as a `changed` group message, and
 * `forget` drops what it changes; an age limit bounds what a lost message could leave behind.
 * Misses are cached as well (briefly), so unknown tokens can't hammer the store.
 */
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import type { Collection, Store } from '../store/store.ts';
import { applyPolicies, type Applied } from './apply-policies.ts';
import { keyIdOf } from './credentials.ts';

/** A stored key and what its policies make of it. */
export interface LoadedKey {
  /** The stored ID (hash of the key). */
  id: string;
  /** The key as stored (basic-auth password hashed). */
  stored: GatewaySession;
  /** The session with policies applied, or why the key can't be used. */
  applied: Applied;
}

const HIT_MAX_AGE_MS = 60_000;
const MISS_MAX_AGE_MS = 5_000;
const MAX_ENTRIES = 200_000;

interface Entry<T> {
  value: T | null;
  at: number;
}

/** The session cache of one process. */
export class Sessions {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #keys = new Map<string, Entry<LoadedKey>>();
  readonly #policies = new Map<string, Entry<GatewayPolicy>>();
  readonly #orgs = new Map<string, Entry<GatewaySession>>();
  readonly #derived = new Map<string, Entry<LoadedKey>>();
  /** Bumped by every forget: a load that spans one is not cached. */
  #generation = 0;

  constructor(store: Store, opts: { log: Logger; now?: () => number }) {
    this.#store = store;
    this.#log = opts.log;
    this.#now = opts.now ?? Date.now;
  }

  /** The key whose value is `raw`, or undefined. */
  byKey(raw: string): Promise<LoadedKey | undefined> {
    return this.byId(keyIdOf(raw));
  }

  /**
   * The key whose value is `raw` as the cache holds it, without waiting (the request path skips a
   * promise per request): the key, null when it is known not to exist, undefined when the cache
   * can't say (call `byKey`).
   */
  byKeyCached(raw: string): LoadedKey | null | undefined {
    return freshValue(this.#keys.get(keyIdOf(raw)), this.#now());
  }

  /** The key stored under `id`, or undefined. */
  async byId(id: string): Promise<LoadedKey | undefined> {
    const now = this.#now();
    const cached = freshValue(this.#keys.get(id), now);
    if (cached !== undefined) return cached ?? undefined;
    return this.#load(id, now);
  }

  /**
   * The key stored under `id` as the store holds it now, whatever the cache holds: one read of
   * the store, for checks that must see a change the gateway was not told of (basic-auth
   * passwords once their cache has expired). The cache is refreshed with it; while the stored
   * key is unchanged the cached object itself is returned, so what was verified against it
   * stays recognisable.
   */
  async fresh(id: string): Promise<LoadedKey | undefined> {
    return this.#load(id, this.#now(), this.#keys.get(id)?.value ?? undefined);
  }

  /** Reads key `id` from the store and caches it; `cached` is kept when the stored key is unchanged. */
  async #load(id: string, now: number, cached?: LoadedKey): Promise<LoadedKey | undefined> {
    const generation = this.#generation;
    const stored = (await this.#store.get('keys', id)) as GatewaySession | undefined;
    let loaded: LoadedKey | undefined;
    if (
      stored !== undefined &&
      cached !== undefined &&
      JSON.stringify(stored) === JSON.stringify(cached.stored)
    ) {
      loaded = cached;
    } else if (stored !== undefined) {
      const policies = new Map<string, GatewayPolicy | undefined>();
      for (const pid of stored.apply_policies ?? []) policies.set(pid, await this.policy(pid));
      loaded = { id, stored, applied: applyPolicies(stored, (pid) => policies.get(pid)) };
    }
    if (generation === this.#generation) remember(this.#keys, id, loaded ?? null, now);
    return loaded;
  }

  /**
   * A session no stored key backs (a JWT identity): `key` (its `apply_policies`, its
   * organisation) with the policies applied, under the stable ID `id` that counters and events
   * use. Cached per ID and policy list until a policy changes, like a stored key.
   */
  async derived(id: string, key: GatewaySession): Promise<LoadedKey> {
    const cached = this.derivedCached(id, key.apply_policies ?? []);
    if (cached !== undefined) return cached;
    const cacheKey = `${id}\0${(key.apply_policies ?? []).join('\0')}`;
    const now = this.#now();
    const generation = this.#generation;
    const policies = new Map<string, GatewayPolicy | undefined>();
    for (const pid of key.apply_policies ?? []) policies.set(pid, await this.policy(pid));
    const loaded: LoadedKey = { id, stored: key, applied: applyPolicies(key, (pid) => policies.get(pid)) };
    if (generation === this.#generation) remember(this.#derived, cacheKey, loaded, now);
    return loaded;
  }

  /**
   * The derived session of `id` with these policies when the cache holds it, without waiting
   * (the request path skips a promise per request); undefined otherwise: call `derived`.
   */
  derivedCached(id: string, policyIds: readonly string[]): LoadedKey | undefined {
    const hit = this.#derived.get(`${id}\0${policyIds.join('\0')}`);
    return hit !== undefined && hit.value !== null && this.#now() - hit.at < HIT_MAX_AGE_MS
      ? hit.value
      : undefined;
  }

  /**
   * A policy as the cache holds it, without waiting: the policy, null when it is known not to
   * exist, undefined when the cache can't say (call `policy`).
   */
  policyCached(id: string): GatewayPolicy | null | undefined {
    return freshValue(this.#policies.get(id), this.#now());
  }

  /** A policy by ID, or undefined. */
  async policy(id: string): Promise<GatewayPolicy | undefined> {
    const now = this.#now();
    const cached = freshValue(this.#policies.get(id), now);
    if (cached !== undefined) return cached ?? undefined;
    const generation = this.#generation;
    let p: GatewayPolicy | undefined;
    try {
      p = (await this.#store.get('policies', id)) as GatewayPolicy | undefined;
    } catch (err) {
      this.#log.error('policy unreadable', { policy_id: id, error: errorMessage(err) });
      throw err;
    }
    if (generation === this.#generation) remember(this.#policies, id, p ?? null, now);
    return p;
  }

  /** The session of an organisation (`/svc/org/keys/{org_id}`: its quota), or undefined. */
  async org(orgId: string): Promise<GatewaySession | undefined> {
    const now = this.#now();
    const cached = freshValue(this.#orgs.get(orgId), now);
    if (cached !== undefined) return cached ?? undefined;
    const generation = this.#generation;
    const o = (await this.#store.get('orgs', orgId)) as GatewaySession | undefined;
    if (generation === this.#generation) remember(this.#orgs, orgId, o ?? null, now);
    return o;
  }

  /** Drops what a change of one key or policy makes stale. */
  forget(collection: Collection, id: string): void {
    this.#generation++;
    if (collection === 'keys') this.#keys.delete(id);
    else if (collection === 'orgs') this.#orgs.delete(id);
    else if (collection === 'policies') {
      this.#policies.delete(id);
      // Which keys apply the policy isn't indexed: every merged session is recomputed.
      this.#keys.clear();
      this.#derived.clear();
    }
  }

  /** Drops everything (the store was unreachable for a while, messages may be lost). */
  clear(): void {
    this.#generation++;
    this.#keys.clear();
    this.#policies.clear();
    this.#orgs.clear();
    this.#derived.clear();
  }
}

/**
 * What a cache entry says at `now` while it is fresh (a value for HIT_MAX_AGE_MS, a miss, null,
 * for MISS_MAX_AGE_MS); undefined when there is none or it is stale.
 */
function freshValue<T>(hit: Entry<T> | undefined, now: number): T | null | undefined {
  return hit !== undefined && now - hit.at < (hit.value === null ? MISS_MAX_AGE_MS : HIT_MAX_AGE_MS)
    ? hit.value
    : undefined;
}

function remember<T>(map: Map<string, Entry<T>>, id: string, value: T | null, at: number): void {
  map.delete(id);
  if (map.size >= MAX_ENTRIES) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(id, { value, at });
}
