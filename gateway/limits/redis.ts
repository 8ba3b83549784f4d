/** Counters in Redis: one atomic server-side script per operation, shared by every node. */
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { CounterValue, Counters } from './counters.ts';

/** Increments a counter and sets its lifetime when it is new; returns [value, ttl ms]. */
const INCR_SCRIPT = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {v, ttl}`;

/** Counters of every gateway node on one Redis. */
export class RedisCounters implements Counters {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, opts: { prefix: string; log: Logger }) {
    this.#prefix = `${opts.prefix}counter:`;
    this.#redis = new Redis(url, {
      maxRetriesPerRequest: 1,
      connectTimeout: 5000,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    this.#redis.on('error', (err: unknown) => {
      opts.log.warn('redis connection error', { error: errorMessage(err), part: 'counters' });
    });
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

  async incr(counter: string, ttlMs: number): Promise<CounterValue> {
    const res = await this.#run('incr', () =>
      this.#redis.eval(INCR_SCRIPT, 1, this.#prefix + counter, String(ttlMs)),
    );
    const [value, ttl] = res as [number, number];
    return { value, ttlMs: ttl };
  }

  async reset(counter: string): Promise<void> {
    await this.#run('reset', () => this.#redis.del(this.#prefix + counter));
  }

  async close(): Promise<void> {
    try {
      await this.#redis.quit();
    } catch {
      this.#redis.disconnect();
    }
  }
}
