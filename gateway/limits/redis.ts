/**
 * Counters in Redis, shared by every gateway node: each operation is one Lua script, so a check
 * and its record are atomic and N nodes together admit exactly the limit. Sliding windows are
 * sorted sets of admitted request times read from Redis's own clock (nodes' clocks may differ).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Counters, QuotaUse, RateVerdict } from './counters.ts';

/** KEYS[1] window; ARGV limit, window ms, member. Returns {allowed, remaining, reset ms}. */
const RATE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
local allowed = 0
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  n = n + 1
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], window)
local reset = window
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then reset = tonumber(oldest[2]) + window - now end
local remaining = limit - n
if remaining < 0 then remaining = 0 end
return {allowed, remaining, reset}`;

/** KEYS[1] counter, KEYS[2] the group's set; ARGV period ms. Returns {used, ttl ms}. */
const QUOTA_SCRIPT = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('SADD', KEYS[2], KEYS[1])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {v, ttl}`;

/** KEYS[1] counter. Returns {used, ttl ms}, or {0, 0} when no period runs. */
const PEEK_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return {0, 0} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return {0, 0} end
return {tonumber(v), ttl}`;

/** KEYS[1] the group's set: deletes every counter in it, and the set. */
const RESET_GROUP_SCRIPT = `
local names = redis.call('SMEMBERS', KEYS[1])
for _, n in ipairs(names) do redis.call('DEL', n) end
redis.call('DEL', KEYS[1])
return #names`;

/** The scripts, as ioredis commands (defineCommand). */
interface Scripts {
  svcRate(key: string, limit: string, windowMs: string, member: string): Promise<unknown>;
  svcQuota(key: string, group: string, periodMs: string): Promise<unknown>;
  svcPeek(key: string): Promise<unknown>;
  svcResetGroup(group: string): Promise<unknown>;
}

/** Counters of every gateway node on one Redis. */
export class RedisCounters implements Counters {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #prefix: string;
  #wasReady = false;
  readonly #scripts: Scripts;

  constructor(url: string, opts: { prefix: string; log: Logger }) {
    this.#prefix = `${opts.prefix}counter:`;
    this.#redis = new Redis(url, {
      // Limits are on the request path: once Redis has been up, a command fails at once while it
      // is away (see #run) and the middleware decides (refuse or allow, a setting) instead of
      // holding the request; before the first connection, commands wait for it, boundedly.
      maxRetriesPerRequest: 0,
      commandTimeout: 2000,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    // Scripts are registered once and called by SHA (EVALSHA, with a fallback that loads them):
    // sending the script text with every request costs Redis a parse and the network the bytes.
    this.#redis.defineCommand('svcRate', { numberOfKeys: 1, lua: RATE_SCRIPT });
    this.#redis.defineCommand('svcQuota', { numberOfKeys: 2, lua: QUOTA_SCRIPT });
    this.#redis.defineCommand('svcPeek', { numberOfKeys: 1, lua: PEEK_SCRIPT });
    this.#redis.defineCommand('svcResetGroup', { numberOfKeys: 1, lua: RESET_GROUP_SCRIPT });
    this.#scripts = this.#redis as unknown as Scripts;
    this.#redis.on('ready', () => {
      this.#wasReady = true;
    });
    this.#redis.on('error', (err: unknown) => {
      opts.log.debug('redis connection error', { error: errorMessage(err), part: 'counters' });
    });
  }

  async #run<T>(op: string, fn: () => Promise<T>): Promise<T> {
    if (this.#wasReady && this.#redis.status !== 'ready') {
      throw new TransientError(
        'GW_ERR_STORE_UNAVAILABLE',
        `redis ${op}: not connected (${this.#redis.status})`,
      );
    }
    try {
      return await fn();
    } catch (err) {
      throw new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis ${op}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }

  async rate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const res = (await this.#run('rate', () =>
      this.#scripts.svcRate(this.#prefix + name, String(limit), String(windowMs), randomUUID()),
    )) as [number, number, number];
    return { allowed: res[0] === 1, remaining: res[1], resetMs: res[2] };
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    const res = (await this.#run('quota', () =>
      this.#scripts.svcQuota(this.#prefix + name, `${this.#prefix}group:${group}`, String(periodMs)),
    )) as [number, number];
    return { used: res[0], ttlMs: res[1] };
  }

  async peekQuota(name: string): Promise<QuotaUse | undefined> {
    const res = (await this.#run('peek', () => this.#scripts.svcPeek(this.#prefix + name))) as [
      number,
      number,
    ];
    return res[0] === 0 ? undefined : { used: res[0], ttlMs: res[1] };
  }

  async resetQuota(name: string): Promise<void> {
    await this.#run('reset', () => this.#redis.del(this.#prefix + name));
  }

  async resetGroup(group: string): Promise<void> {
    await this.#run('reset', () => this.#scripts.svcResetGroup(`${this.#prefix}group:${group}`));
  }

  async close(): Promise<void> {
    try {
      await this.#redis.quit();
    } catch {
      this.#redis.disconnect();
    }
  }
}
