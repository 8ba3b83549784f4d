/**
 * The shared store: every gateway node on one Redis sees the same documents and counters, and
 * group messages travel over Redis pub/sub. A collection is one hash (`<prefix><collection>`,
 * field = ID, value = JSON), so a write is one atomic command.
 */
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { isGroupMessage, parsedLater, type GroupMessage } from './store.ts';
import type { Collection, PutMode, PutOutcome, Store, StoreHealth, StoredEntry } from './store.ts';
import { redisRegistry, type NodeRegistry } from '../nodes/registry.ts';

/** HSET only when the field exists; returns 1 when written. */
const UPDATE_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

const HEALTH_TIMEOUT_MS = 1000;

/** The Redis store. */
export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly shared = true;
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #log: Logger;
  readonly #handlers = new Set<(m: GroupMessage) => void>();
  #subscriber: Redis | undefined;
  #subscribing: Promise<void> = Promise.resolve();

  constructor(url: string, opts: { prefix: string; log: Logger }) {
    this.#prefix = opts.prefix;
    this.#channel = `${opts.prefix}group`;
    this.#log = opts.log;
    this.#redis = new Redis(url, {
      // A command waits through one reconnection attempt, then fails: callers get an answer.
      maxRetriesPerRequest: 1,
      connectTimeout: 5000,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    this.#redis.on('error', (err: unknown) => {
      this.#log.warn('redis connection error', { error: errorMessage(err) });
    });
  }

  #key(collection: Collection): string {
    return `${this.#prefix}${collection}`;
  }

  async #run<T>(op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis ${op}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }

  async list(collection: Collection): Promise<StoredEntry[]> {
    const all = await this.#run('list', () => this.#redis.hgetall(this.#key(collection)));
    // A text the last list parsed is parsed again only when its value is read: a reload of one
    // change among 10,000 APIs reads the others' texts alone (issue 33 item 4).
    const before = this.#parsed.get(collection);
    const parsed = new Map<string, string>();
    const entries = Object.keys(all)
      .sort()
      .map((id): StoredEntry => {
        const text = all[id] ?? '';
        if (before?.get(id) === text) {
          parsed.set(id, text);
          return parsedLater(id, text);
        }
        try {
          const value = JSON.parse(text) as unknown;
          parsed.set(id, text);
          return { id, value, text };
        } catch (err) {
          return { id, problem: `${this.#key(collection)}[${id}]: ${errorMessage(err)}` };
        }
      });
    this.#parsed.set(collection, parsed);
    return entries;
  }

  /** The texts the last list of each collection parsed, by ID. */
  readonly #parsed = new Map<Collection, ReadonlyMap<string, string>>();

  async get(collection: Collection, id: string): Promise<unknown> {
    const text = await this.#run('get', () => this.#redis.hget(this.#key(collection), id));
    if (text === null) return undefined;
    return JSON.parse(text) as unknown;
  }

  async put(collection: Collection, id: string, value: unknown, mode?: PutMode): Promise<PutOutcome> {
    const key = this.#key(collection);
    const text = JSON.stringify(value);
    return this.#run('put', async () => {
      switch (mode ?? 'upsert') {
        case 'create':
          return (await this.#redis.hsetnx(key, id, text)) === 1 ? 'added' : 'exists';
        case 'update':
          return (await this.#redis.eval(UPDATE_SCRIPT, 1, key, id, text)) === 1 ? 'modified' : 'missing';
        case 'upsert':
          return (await this.#redis.hset(key, id, text)) === 1 ? 'added' : 'modified';
      }
    });
  }

  async delete(collection: Collection, id: string): Promise<boolean> {
    return (await this.#run('delete', () => this.#redis.hdel(this.#key(collection), id))) === 1;
  }

  forget(): void {
    // Nothing cached: every read goes to Redis.
  }

  async publish(message: GroupMessage): Promise<void> {
    await this.#run('publish', () => this.#redis.publish(this.#channel, JSON.stringify(message)));
  }

  subscribe(handler: (message: GroupMessage) => void): () => void {
    this.#handlers.add(handler);
    if (this.#subscriber === undefined) {
      // A subscribed connection can't run other commands: one more connection, shared by handlers.
      // It subscribes each time it is ready, so a Redis that comes up (or back) later still
      // delivers group messages.
      const sub = this.#redis.duplicate({ autoResubscribe: false });
      this.#subscriber = sub;
      let settle: () => void = () => undefined;
      this.#subscribing = new Promise<void>((resolve) => {
        settle = resolve;
      });
      sub.on('error', (err: unknown) => {
        this.#log.warn('redis subscriber error', { error: errorMessage(err) });
        settle(); // don't hold start-up while Redis is away
      });
      sub.on('ready', () => {
        sub.subscribe(this.#channel).then(
          () => {
            settle();
          },
          (err: unknown) => {
            this.#log.error('redis subscribe failed', { error: errorMessage(err) });
            settle();
          },
        );
      });
      sub.on('message', (_channel: string, text: string) => {
        let msg: unknown;
        try {
          msg = JSON.parse(text);
        } catch {
          msg = undefined;
        }
        if (!isGroupMessage(msg)) {
          this.#log.warn('ignored malformed group message', { channel: this.#channel });
          return;
        }
        for (const h of this.#handlers) h(msg);
      });
    }
    return () => {
      this.#handlers.delete(handler);
    };
  }

  /** Resolves once the subscription is active, or Redis has failed to answer once. */
  subscribed(): Promise<void> {
    return this.#subscribing;
  }

  nodeRegistry(opts: { timeoutMs: number }): NodeRegistry {
    return redisRegistry(this.#redis, { prefix: this.#prefix, timeoutMs: opts.timeoutMs });
  }

  async health(): Promise<StoreHealth> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.#redis.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => {
            reject(new Error('no answer to PING'));
          }, HEALTH_TIMEOUT_MS);
        }),
      ]);
      return { ok: true };
    } catch (err) {
      return { ok: false, message: errorMessage(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.#handlers.clear();
    const quit = async (r: Redis): Promise<void> => {
      try {
        await r.quit();
      } catch {
        r.disconnect();
      }
    };
    await Promise.all([quit(this.#redis), ...(this.#subscriber ? [quit(this.#subscriber)] : [])]);
  }
}
