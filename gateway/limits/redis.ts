/**
 * Counters in Redis, shared by every gateway node: each operation is one Lua script, so a check
 * and its record are atomic and N nodes together admit exactly the limit. Sliding windows are
 * logs of admitted request times, per millisecond of Redis's own clock (nodes' clocks may differ).
 */
import { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import {
  peekVerdict,
  type Counters,
  type QuotaCount,
  type QuotaUse,
  type RateCheck,
  type RateQuotaVerdict,
  type RateVerdict,
} from './counters.ts';

/** What one entry of a batch asks (ARGV's first value of the entry). */
const KIND = { rate: '1', quota: '2', rateThenQuota: '3' } as const;

/**
 * The checks of one batch as one atomic script. The batch's identical checks (same kind, keys and
 * values: the requests of one busy key) travel as one run with a count, each key once: KEYS are
 * the batch's distinct keys, ARGV nine values per run (kind, limit, window ms, period ms, count,
 * then the KEYS indexes of a sliding window's log, its total, a quota counter and the quota's
 * group set). Runs are decided in order, the checks of a run one after the other. Returns five
 * numbers per run, from which each check's verdict follows (`expand`): how many of its checks
 * the window admitted (the first ones: a window that refuses one check refuses the rest of the
 * run), the window's count before the run, the reset ms, the quota's count before the run (-1
 * when not counted) and its ttl ms. Kind 3 counts the quota of the checks the window admits;
 * kind 2 counts a quota alone (its rate values 1, 0, 0 for every check).
 *
 * Sliding window: a request is admitted when fewer than `limit` were admitted in the last
 * `window` ms (Redis's clock, read once per batch). The log of admitted requests is a list of
 * `<ms>:<count>` buckets, oldest first (requests of one millisecond leave the window together),
 * their total in its own key; buckets that left the window are popped from the head. Quota: a
 * counter whose period starts at 1 for `period` ms when none runs (then it joins its group set,
 * so a key's scopes can be reset together).
 *
 * Each window and counter a batch names is read once, decided in Lua and written back once: the
 * checks of many requests of one key cost Redis what one costs, and what crosses the network does
 * not grow with them. Every step is O(1) on the list's ends, however many requests the window
 * holds.
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
for i = 0, #ARGV / 9 - 1 do
  local a, o = i * 9, i * 5
  local kind = ARGV[a + 1]
  local count = tonumber(ARGV[a + 5])
  local admitted, before, reset, used, ttl = count, 0, 0, -1, -1
  if kind ~= '2' then
    local limit, span = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    local w = window(KEYS[tonumber(ARGV[a + 6])], KEYS[tonumber(ARGV[a + 7])], span)
    before = w.n
    admitted = math.min(count, math.max(limit - w.n, 0))
    if admitted > 0 then
      w.n = w.n + admitted
      w.added = w.added + admitted
      w.dirty = true
      if w.head == nil then w.head = now end
    end
    reset = span
    if w.head ~= nil then reset = w.head + span - now end
  end
  if admitted > 0 and (kind == '2' or kind == '3') then
    local q = counter(KEYS[tonumber(ARGV[a + 8])], KEYS[tonumber(ARGV[a + 9])], ARGV[a + 4])
    used = q.v
    q.v = q.v + admitted
    q.added = q.added + admitted
    ttl = q.ttl
    if q.fresh or ttl < 0 then ttl = q.period end
  end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = admitted, before, reset, used, ttl
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
  resolve: (v: Verdict) => void;
  reject: (err: unknown) => void;
}

/**
 * One check's outcome: allowed (0/1), the window's remaining, reset ms, the quota's count after
 * the check and its ttl ms (-1, -1 when the quota was not counted).
 */
type Verdict = readonly [allowed: number, remaining: number, resetMs: number, used: number, ttlMs: number];

/** Whether two checks are the same (kind, keys and values). */
function sameCheck(a: Pending, b: Pending): boolean {
  return (
    a.kind === b.kind &&
    a.keys[0] === b.keys[0] &&
    a.keys[1] === b.keys[1] &&
    a.keys[2] === b.keys[2] &&
    a.keys[3] === b.keys[3] &&
    a.args[0] === b.args[0] &&
    a.args[1] === b.args[1] &&
    a.args[2] === b.args[2]
  );
}

/** Identical checks of one batch, sent once with their count. */
interface Run {
  first: Pending;
  checks: Pending[];
}

/**
 * The verdict of the `j`th check (from 1) of a run, from the run's five numbers (see
 * BATCH_SCRIPT): the first `admitted` checks are admitted, each counting in the window and the
 * quota after the ones before it.
 */
export function expand(kind: string, limit: number, run: readonly number[], j: number): Verdict {
  const [admitted = 0, before = 0, reset = 0, used = -1, ttl = -1] = run;
  if (kind === KIND.quota) return [1, 0, 0, used + j, ttl];
  const allowed = j <= admitted;
  const remaining = Math.max(limit - (before + Math.min(j, admitted)), 0);
  return allowed
    ? [1, remaining, reset, used < 0 ? -1 : used + j, used < 0 ? -1 : ttl]
    : [0, remaining, reset, -1, -1];
}

/** KEYS[1] counter. Returns {used, ttl ms}, or {0, 0} when no period runs. */
const PEEK_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return {0, 0} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return {0, 0} end
return {tonumber(v), ttl}`;

/**
 * KEYS[1] a sliding window's log, KEYS[2] its total, ARGV[1] its span in ms. Read only: the requests still in the
 * window and the ms until the oldest leaves it (-1 when none), by Redis's clock.
 */
const PEEK_RATE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local span = tonumber(ARGV[1])
local n, oldest = 0, -1
-- Without its total the log is stale: the next check starts the window afresh.
if not redis.call('GET', KEYS[2]) then return {0, -1} end
for _, b in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local sep = string.find(b, ':', 1, true)
  local bt = tonumber(string.sub(b, 1, sep - 1))
  if bt > now - span then
    n = n + tonumber(string.sub(b, sep + 1))
    if oldest < 0 then oldest = bt + span - now end
  end
end
return {n, oldest}`;

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
  svcPeekRate(log: string, total: string, spanMs: string): Promise<unknown>;
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
    this.#redis.defineCommand('svcPeekRate', { numberOfKeys: 2, lua: PEEK_RATE_SCRIPT });
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
  #check(kind: Pending['kind'], keys: Pending['keys'], args: Pending['args']): Promise<Verdict> {
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
    // Identical checks become one run (in the order of their first check); each key is sent once.
    const runs = new Map<string, Run>();
    let last: Run | undefined;
    for (const p of batch) {
      // The checks of one busy key come one after the other: no lookup for those.
      if (last !== undefined && sameCheck(last.first, p)) {
        last.checks.push(p);
        continue;
      }
      const id = `${p.kind}\n${p.keys.join('\n')}\n${p.args.join('\n')}`;
      last = runs.get(id);
      if (last === undefined) {
        last = { first: p, checks: [p] };
        runs.set(id, last);
      } else last.checks.push(p);
    }
    const keys: string[] = [];
    const index = new Map<string, string>();
    const keyIndex = (key: string): string => {
      let i = index.get(key);
      if (i === undefined) {
        i = String(keys.push(key));
        index.set(key, i);
      }
      return i;
    };
    const args: string[] = [];
    for (const { first, checks } of runs.values()) {
      args.push(first.kind, ...first.args, String(checks.length), ...first.keys.map(keyIndex));
    }
    const ordered = [...runs.values()];
    this.#scripts.svcBatch(keys.length, ...keys, ...args).then(
      (res) => {
        const all = res as number[];
        for (const [r, { first, checks }] of ordered.entries()) {
          const out = all.slice(r * 5, r * 5 + 5);
          const limit = Number(first.args[0]);
          for (let j = 0; j < checks.length; j++) checks[j]?.resolve(expand(first.kind, limit, out, j + 1));
        }
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
    return { allowed: res[0] === 1, remaining: res[1], resetMs: res[2] };
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    const key = this.#prefix + name;
    const res = await this.#check(
      KIND.quota,
      [key, key, key, `${this.#prefix}group:${group}`],
      ['0', '0', String(periodMs)],
    );
    return { used: res[3], ttlMs: res[4] };
  }

  async rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    const res = await this.#check(
      KIND.rateThenQuota,
      [...this.#window(rate.name), this.#prefix + quota.name, `${this.#prefix}group:${quota.group}`],
      [String(rate.limit), String(rate.windowMs), String(quota.periodMs)],
    );
    const allowed = res[0] === 1;
    return {
      rate: { allowed, remaining: res[1], resetMs: res[2] },
      quota: allowed ? { used: res[3], ttlMs: res[4] } : undefined,
    };
  }

  async peekRate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const [log, total] = this.#window(name);
    const res = (await this.#run('peek', () => this.#scripts.svcPeekRate(log, total, String(windowMs)))) as [
      number,
      number,
    ];
    return peekVerdict(res[0], limit, res[1] < 0 ? windowMs : res[1]);
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
