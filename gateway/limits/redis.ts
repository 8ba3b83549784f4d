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
 * `window` ms before `now` (Redis's clock), records `member` then. Returns allowed (0/1),
 * remaining, reset ms.
 */
const RATE_FN = `
local function rate(key, limit, window, member, now)
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

/** What one entry of a batch asks (ARGV's first value of the entry). */
const KIND = { rate: '1', quota: '2', rateThenQuota: '3' } as const;

/**
 * The checks of one batch, in order, as one atomic script: three KEYS per check (window, quota
 * counter, its group's set) and five ARGV (kind, limit, window ms, member, period ms). A rate
 * check and a quota count each run as above; kind 3 counts the quota only when the window admits.
 * Returns five numbers per check: allowed, remaining, reset ms, used, ttl ms (used and ttl -1
 * when not counted; the rate values 1, 0, 0 for a quota alone). Redis's clock is read once.
 */
const BATCH_SCRIPT = `${RATE_FN}
${QUOTA_FN}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 0, #ARGV / 5 - 1 do
  local a, k = i * 5, i * 3
  local kind = ARGV[a + 1]
  local allowed, remaining, reset, used, ttl = 1, 0, 0, -1, -1
  if kind ~= '2' then
    allowed, remaining, reset =
      rate(KEYS[k + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4], now)
  end
  if kind == '2' or (kind == '3' and allowed == 1) then
    used, ttl = quota(KEYS[k + 2], KEYS[k + 3], ARGV[a + 5])
  end
  out[a + 1], out[a + 2], out[a + 3], out[a + 4], out[a + 5] = allowed, remaining, reset, used, ttl
end
return out`;

/**
 * The most checks one script call carries: a burst larger than this goes in several calls (each
 * atomic), so one call never holds Redis long.
 */
const MAX_BATCH = 256;

/** A check waiting for its batch. */
interface Pending {
  kind: (typeof KIND)[keyof typeof KIND];
  keys: [string, string, string];
  args: [string, string, string, string];
  resolve: (res: readonly number[]) => void;
  reject: (err: unknown) => void;
}

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
  /** The number of keys, the keys, then the arguments (see BATCH_SCRIPT). */
  svcBatch(numberOfKeys: number, ...keysThenArgs: string[]): Promise<unknown>;
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
    });
    // Scripts are registered once and called by SHA (EVALSHA, with a fallback that loads them):
    // sending the script text with every request costs Redis a parse and the network the bytes.
    this.#redis.defineCommand('svcBatch', { lua: BATCH_SCRIPT });
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

  /**
   * Queues one check for the batch of this turn of the event loop: the checks of requests that
   * arrive together go to Redis as one script call (one write, one read, one script run for many
   * requests, on the gateway and on Redis alike), still each atomic and in order.
   */
  #check(kind: Pending['kind'], keys: Pending['keys'], args: Pending['args']): Promise<readonly number[]> {
    if (this.#wasReady && this.#redis.status !== 'ready') {
      return Promise.reject(
        new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis check: not connected (${this.#redis.status})`),
      );
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ kind, keys, args, resolve, reject });
      if (this.#pending.length >= MAX_BATCH) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flushSoon);
      }
    });
  }

  #pending: Pending[] = [];
  #scheduled = false;
  readonly #flushSoon = (): void => {
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#flush();
  };

  #flush(): void {
    const batch = this.#pending;
    this.#pending = [];
    const keys: string[] = [];
    const args: string[] = [];
    for (const p of batch) {
      keys.push(...p.keys);
      args.push(p.kind, ...p.args);
    }
    this.#scripts.svcBatch(keys.length, ...keys, ...args).then(
      (res) => {
        const all = res as number[];
        for (let i = 0; i < batch.length; i++) batch[i]?.resolve(all.slice(i * 5, i * 5 + 5));
      },
      (err: unknown) => {
        const e = new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis check: ${errorMessage(err)}`, {
          cause: err,
        });
        for (const p of batch) p.reject(e);
      },
    );
  }

  async rate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const key = this.#prefix + name;
    const res = await this.#check(
      KIND.rate,
      [key, key, key],
      [String(limit), String(windowMs), nextMember(), '0'],
    );
    return { allowed: res[0] === 1, remaining: res[1] ?? 0, resetMs: res[2] ?? 0 };
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    const key = this.#prefix + name;
    const res = await this.#check(
      KIND.quota,
      [key, key, `${this.#prefix}group:${group}`],
      ['0', '0', '', String(periodMs)],
    );
    return { used: res[3] ?? 0, ttlMs: res[4] ?? 0 };
  }

  async rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    const res = await this.#check(
      KIND.rateThenQuota,
      [this.#prefix + rate.name, this.#prefix + quota.name, `${this.#prefix}group:${quota.group}`],
      [String(rate.limit), String(rate.windowMs), nextMember(), String(quota.periodMs)],
    );
    const allowed = res[0] === 1;
    return {
      rate: { allowed, remaining: res[1] ?? 0, resetMs: res[2] ?? 0 },
      quota: allowed ? { used: res[3] ?? 0, ttlMs: res[4] ?? 0 } : undefined,
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
