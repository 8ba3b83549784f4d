/**
 * Counters in Redis, shared by every gateway node: each operation is one Lua script, so a check
 * and its record are atomic and N nodes together admit exactly the limit. Sliding windows are
 * logs of admitted request times, per millisecond of Redis's own clock (nodes' clocks may differ).
 */
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Counters, QuotaCount, QuotaUse, RateCheck, RateQuotaVerdict, RateVerdict } from './counters.ts';

/** What one entry of a batch asks (ARGV's first value of the entry). */
const KIND = { rate: '1', quota: '2', rateThenQuota: '3' } as const;

/**
 * The checks of one batch, in order, as one atomic script: four KEYS per check (a sliding
 * window's log, its total, a quota counter, the quota's group set) and four ARGV (kind, limit,
 * window ms, period ms). Returns five numbers per check: allowed (0/1), remaining, reset ms, used,
 * ttl ms (used and ttl -1 when the quota was not counted; the rate values 1, 0, 0 for a quota
 * alone). Kind 3 counts the quota only when the window admits.
 *
 * Sliding window: a request is admitted when fewer than `limit` were admitted in the last
 * `window` ms (Redis's clock, read once per batch). The log of admitted requests is a list of
 * `<ms>:<count>` buckets, oldest first (requests of one millisecond leave the window together),
 * their total in its own key; buckets that left the window are popped from the head. Quota: a
 * counter whose period starts at 1 for `period` ms when none runs (then it joins its group set,
 * so a key's scopes can be reset together).
 *
 * Each window and counter a batch names is read once, the batch's checks are decided in order on
 * those values in Lua, and each is written back once: the checks of many requests of one key
 * (a busy client) cost Redis what one costs. Every step is O(1) on the list's ends, however many
 * requests the window holds.
 */
const BATCH_SCRIPT = `
local function bucket(b)
  local sep = string.find(b, ':', 1, true)
  return tonumber(string.sub(b, 1, sep - 1)), tonumber(string.sub(b, sep + 1))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windows, quotas = {}, {}
local function window(key, nkey, span)
  local w = windows[key]
  if w then return w end
  local n = tonumber(redis.call('GET', nkey))
  local dirty = false
  if n == nil then
    n = 0
    redis.call('DEL', key)
  end
  local head = nil
  while n > 0 do
    local b = redis.call('LINDEX', key, 0)
    if not b then n = 0; break end
    local bt, bc = bucket(b)
    if bt > now - span then head = bt; break end
    n = n - bc
    dirty = true
    redis.call('LPOP', key)
  end
  w = { nkey = nkey, n = n, head = head, added = 0, span = span, dirty = dirty }
  windows[key] = w
  return w
end
local function counter(key, group, period)
  local q = quotas[key]
  if q then return q end
  local v = tonumber(redis.call('GET', key)) or 0
  local ttl = -1
  if v > 0 then ttl = redis.call('PTTL', key) end
  q = { v = v, ttl = ttl, added = 0, group = group, period = tonumber(period), fresh = v == 0 }
  quotas[key] = q
  return q
end
local out = {}
for i = 0, #ARGV / 4 - 1 do
  local a, k, o = i * 4, i * 4, i * 5
  local kind = ARGV[a + 1]
  local allowed, remaining, reset, used, ttl = 1, 0, 0, -1, -1
  if kind ~= '2' then
    local limit, span = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    local w = window(KEYS[k + 1], KEYS[k + 2], span)
    allowed = 0
    if w.n < limit then
      w.n = w.n + 1
      w.added = w.added + 1
      w.dirty = true
      if w.head == nil then w.head = now end
      allowed = 1
    end
    remaining = math.max(limit - w.n, 0)
    reset = span
    if w.head ~= nil then reset = w.head + span - now end
  end
  if kind == '2' or (kind == '3' and allowed == 1) then
    local q = counter(KEYS[k + 3], KEYS[k + 4], ARGV[a + 4])
    q.v = q.v + 1
    q.added = q.added + 1
    used = q.v
    ttl = q.ttl
    if q.fresh or ttl < 0 then ttl = q.period end
  end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = allowed, remaining, reset, used, ttl
end
for key, w in pairs(windows) do
  if w.added > 0 then
    -- The newest bucket takes the batch's requests when it is this millisecond's (or Redis's
    -- clock went back: they then leave the window later, never sooner).
    local tail = redis.call('LINDEX', key, -1)
    local tt, tc
    if tail then tt, tc = bucket(tail) end
    if tt ~= nil and tt >= now then
      redis.call('LSET', key, -1, string.format('%d:%d', tt, tc + w.added))
    else
      redis.call('RPUSH', key, string.format('%d:%d', now, w.added))
    end
  end
  if w.dirty then
    if w.n > 0 then
      redis.call('SET', w.nkey, w.n, 'PX', w.span)
      redis.call('PEXPIRE', key, w.span)
    else
      redis.call('DEL', w.nkey, key)
    end
  end
end
for key, q in pairs(quotas) do
  redis.call('INCRBY', key, q.added)
  if q.fresh then
    redis.call('PEXPIRE', key, q.period)
    redis.call('SADD', q.group, key)
  elseif q.ttl < 0 then
    redis.call('PEXPIRE', key, q.period)
  end
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
  keys: [string, string, string, string];
  args: [string, string, string];
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

  /** The keys of a sliding window: its log of buckets and their total. */
  #window(name: string): [string, string] {
    return [`${this.#prefix}${name}#log`, `${this.#prefix}${name}#n`];
  }

  async rate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const [log, total] = this.#window(name);
    const res = await this.#check(KIND.rate, [log, total, log, log], [String(limit), String(windowMs), '0']);
    return { allowed: res[0] === 1, remaining: res[1] ?? 0, resetMs: res[2] ?? 0 };
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    const key = this.#prefix + name;
    const res = await this.#check(
      KIND.quota,
      [key, key, key, `${this.#prefix}group:${group}`],
      ['0', '0', String(periodMs)],
    );
    return { used: res[3] ?? 0, ttlMs: res[4] ?? 0 };
  }

  async rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    const res = await this.#check(
      KIND.rateThenQuota,
      [...this.#window(rate.name), this.#prefix + quota.name, `${this.#prefix}group:${quota.group}`],
      [String(rate.limit), String(rate.windowMs), String(quota.periodMs)],
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
