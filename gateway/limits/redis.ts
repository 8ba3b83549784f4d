/**
 * Counters in Redis, shared by every gateway node: each operation is one Lua script, so a check
 * and its record are atomic and N nodes together admit exactly the limit. Sliding windows are
 * sorted sets of admitted request times read from Redis's own clock (nodes' clocks may differ).
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Counters, QuotaCount, QuotaUse, RateCheck, RateQuotaVerdict, RateVerdict } from './counters.ts';

/**
 * The sliding window, as a Lua function: admits when fewer than `limit` were admitted in the last
 * `window` ms (Redis's clock), records `member` then. Returns allowed (0/1), remaining, reset ms.
 */
const RATE_FN = `
local function rate(key, limit, window, member)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  local allowed = 0
  if n < limit then
    redis.call('ZADD', key, now, member)
    n = n + 1
    allowed = 1
  end
  redis.call('PEXPIRE', key, window)
  local reset = window
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if oldest[2] then reset = tonumber(oldest[2]) + window - now end
  local remaining = limit - n
  if remaining < 0 then remaining = 0 end
  return allowed, remaining, reset
end`;

/**
 * The quota count, as a Lua function: one more request in the period of `key`, which starts at 1
 * for `period` ms when none runs (and joins the key's `group` set). Returns used, ttl ms.
 */
const QUOTA_FN = `
local function quota(key, group, period)
  local v = redis.call('INCR', key)
  if v == 1 then
    redis.call('PEXPIRE', key, period)
    redis.call('SADD', group, key)
  end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then redis.call('PEXPIRE', key, period); ttl = tonumber(period) end
  return v, ttl
end`;

/** KEYS[1] window; ARGV limit, window ms, member. Returns {allowed, remaining, reset ms}. */
const RATE_SCRIPT = `${RATE_FN}
local a, r, reset = rate(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3])
return {a, r, reset}`;

/** KEYS[1] counter, KEYS[2] the group's set; ARGV period ms. Returns {used, ttl ms}. */
const QUOTA_SCRIPT = `${QUOTA_FN}
local v, ttl = quota(KEYS[1], KEYS[2], ARGV[1])
return {v, ttl}`;

/**
 * KEYS[1] window, KEYS[2] quota counter, KEYS[3] its group's set; ARGV limit, window ms, member,
 * period ms. The quota is counted only when the window admits. Returns {allowed, remaining,
 * reset ms, used, ttl ms}, used and ttl -1 when not counted.
 */
const RATE_QUOTA_SCRIPT = `${RATE_FN}
${QUOTA_FN}
local a, r, reset = rate(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3])
if a == 0 then return {a, r, reset, -1, -1} end
local v, ttl = quota(KEYS[2], KEYS[3], ARGV[4])
return {a, r, reset, v, ttl}`;

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
  svcRateQuota(
    window: string,
    counter: string,
    group: string,
    limit: string,
    windowMs: string,
    member: string,
    periodMs: string,
  ): Promise<unknown>;
  svcPeek(key: string): Promise<unknown>;
  svcResetGroup(group: string): Promise<unknown>;
}

/**
 * Members of sliding windows: unique across processes (a random prefix per process) and short (a
 * counter after it), so a window of many requests costs Redis little memory.
 */
const MEMBER_PREFIX = randomBytes(6).toString('base64url');
let memberSeq = 0;
const nextMember = (): string => `${MEMBER_PREFIX}${(memberSeq++).toString(36)}`;

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
      // The checks of requests that arrive together (one turn of the event loop) go to Redis in
      // one write, and their answers come back in one read: a system call each way for many
      // requests instead of one per request, on the gateway and on Redis alike.
      enableAutoPipelining: true,
    });
    // Scripts are registered once and called by SHA (EVALSHA, with a fallback that loads them):
    // sending the script text with every request costs Redis a parse and the network the bytes.
    this.#redis.defineCommand('svcRate', { numberOfKeys: 1, lua: RATE_SCRIPT });
    this.#redis.defineCommand('svcQuota', { numberOfKeys: 2, lua: QUOTA_SCRIPT });
    this.#redis.defineCommand('svcRateQuota', { numberOfKeys: 3, lua: RATE_QUOTA_SCRIPT });
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
      this.#scripts.svcRate(this.#prefix + name, String(limit), String(windowMs), nextMember()),
    )) as [number, number, number];
    return { allowed: res[0] === 1, remaining: res[1], resetMs: res[2] };
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    const res = (await this.#run('quota', () =>
      this.#scripts.svcQuota(this.#prefix + name, `${this.#prefix}group:${group}`, String(periodMs)),
    )) as [number, number];
    return { used: res[0], ttlMs: res[1] };
  }

  async rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    const res = (await this.#run('rate', () =>
      this.#scripts.svcRateQuota(
        this.#prefix + rate.name,
        this.#prefix + quota.name,
        `${this.#prefix}group:${quota.group}`,
        String(rate.limit),
        String(rate.windowMs),
        nextMember(),
        String(quota.periodMs),
      ),
    )) as [number, number, number, number, number];
    return {
      rate: { allowed: res[0] === 1, remaining: res[1], resetMs: res[2] },
      quota: res[0] === 1 ? { used: res[3], ttlMs: res[4] } : undefined,
    };
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
