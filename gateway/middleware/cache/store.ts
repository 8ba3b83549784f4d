/**
 * Where cached responses live: Redis when the gateway keeps its store there (shared by every
 * gateway node, entries expire with `PX`), else the memory of each process (bounded: the oldest
 * entries go first past `MEMORY_ENTRIES`). One cache per process and Redis (per gateway in
 * memory), shared by the APIs that cache (each under its own keys), opened by the first and
 * closed with the last. ioredis is loaded with the first Redis cache, not by every worker.
 */
import type { Redis } from 'ioredis';
import { errorMessage } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { holdShared } from '../../pipeline/keep.ts';

/** One cached response. */
export interface CachedResponse {
  status: number;
  /** Lower-case names, as relayed to the client (no hop-by-hop headers). */
  headers: Record<string, string>;
  /** The body, valid UTF-8 (other bodies are not cached). */
  body: string;
}

/** A cache of responses by key. Failures read as misses and writes that are lost. */
export interface ResponseStore {
  readonly kind: 'memory' | 'redis';
  get(key: string): Promise<CachedResponse | undefined>;
  set(key: string, value: CachedResponse, ttlMs: number): Promise<void>;
}

/** The most entries the memory cache keeps per process. */
export const MEMORY_ENTRIES = 10_000;

/** Responses in this process's memory. */
export class MemoryResponses implements ResponseStore {
  readonly kind = 'memory';
  readonly #entries = new Map<string, { value: CachedResponse; until: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get(key: string): Promise<CachedResponse | undefined> {
    const e = this.#entries.get(key);
    if (e === undefined) return Promise.resolve(undefined);
    if (e.until <= this.#now()) {
      this.#entries.delete(key);
      return Promise.resolve(undefined);
    }
    return Promise.resolve(e.value);
  }

  set(key: string, value: CachedResponse, ttlMs: number): Promise<void> {
    this.#entries.delete(key);
    this.#entries.set(key, { value, until: this.#now() + ttlMs });
    if (this.#entries.size > MEMORY_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    return Promise.resolve();
  }
}

/** Responses in Redis: `<prefix>cache:<key>` holds them as JSON. */
export class RedisResponses implements ResponseStore {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #log: Logger;
  readonly #now: () => number;

  /** `connect` is ioredis's client class (loaded by the first Redis cache). */
  constructor(connect: typeof Redis, url: string, prefix: string, log: Logger, now: () => number = Date.now) {
    this.#prefix = `${prefix}cache:`;
    this.#log = log;
    this.#now = now;
    // The cache is an optimisation: a command fails fast while Redis is away (a miss).
    this.#redis = new connect(url, {
      maxRetriesPerRequest: 0,
      commandTimeout: 1000,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    this.#redis.on('error', (err: unknown) => {
      log.debug('redis connection error', { error: errorMessage(err), part: 'cache' });
    });
  }

  async get(key: string): Promise<CachedResponse | undefined> {
    try {
      const text = await this.#redis.get(this.#prefix + key);
      if (text === null) return undefined;
      const v = JSON.parse(text) as { s: number; h: Record<string, string>; b: string; u: number };
      // Redis expires the entry too; the gateway's clock decides (tests move it).
      if (v.u <= this.#now()) return undefined;
      return { status: v.s, headers: v.h, body: v.b };
    } catch (err) {
      this.#log.debug('cache read failed', { error: errorMessage(err) });
      return undefined;
    }
  }

  async set(key: string, value: CachedResponse, ttlMs: number): Promise<void> {
    const until = this.#now() + ttlMs;
    const text = JSON.stringify({ s: value.status, h: value.headers, b: value.body, u: until });
    try {
      await this.#redis.set(this.#prefix + key, text, 'PX', Math.max(1, Math.round(ttlMs)));
    } catch (err) {
      this.#log.debug('cache write failed', { error: errorMessage(err) });
    }
  }

  async close(): Promise<void> {
    try {
      await this.#redis.quit();
    } catch {
      this.#redis.disconnect();
    }
  }
}

interface Held {
  store: ResponseStore;
  users: number;
  close: () => Promise<void>;
}

/** Redis caches by URL and prefix; memory caches by the gateway they belong to. */
const shared = new Map<string, Held>();
const perGateway = new WeakMap<object, Held>();

/**
 * The response cache of `config.store` (the gateway's `store` setting): one Redis connection per
 * process and URL, or the memory of the gateway `owner` (its document store). The returned
 * `release` closes it when no API uses it any more.
 */
export async function acquireResponses(
  owner: object,
  config: { store: string; redis_key_prefix: string },
  log: Logger,
  now: () => number,
): Promise<{ store: ResponseStore; release: () => Promise<void> }> {
  const redis = /^rediss?:\/\//.test(config.store);
  const id = `${config.store}\n${config.redis_key_prefix}`;
  const connect = redis ? (await import('ioredis')).Redis : undefined;
  // Looked up after the import: another API may have opened it meanwhile.
  let held = redis ? shared.get(id) : perGateway.get(owner);
  if (held === undefined) {
    if (connect !== undefined) {
      const r = new RedisResponses(
        connect,
        config.store,
        config.redis_key_prefix,
        log.child({ part: 'cache' }),
        now,
      );
      held = { store: r, users: 0, close: () => r.close() };
      shared.set(id, held);
    } else {
      held = { store: new MemoryResponses(now), users: 0, close: () => Promise.resolve() };
      perGateway.set(owner, held);
    }
  }
  const h = held;
  return {
    store: h.store,
    release: holdShared(h, async () => {
      if (redis) shared.delete(id);
      else perGateway.delete(owner);
      await h.close();
    }),
  };
}
