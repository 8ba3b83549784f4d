/**
 * Counters of one process: sliding windows as sorted lists of timestamps, quota periods as
 * values with an end. Expired entries are dropped when touched and by a periodic sweep, so idle
 * keys don't accumulate. The clock is injected, so tests can move through long periods.
 */
import { peekVerdict } from './counters.ts';
import type { Counters, QuotaCount, QuotaUse, RateCheck, RateQuotaVerdict, RateVerdict } from './counters.ts';

const SWEEP_EVERY_MS = 60_000;

interface Period {
  value: number;
  endsAt: number;
}

interface Window {
  /** Admitted request times, oldest first. */
  times: number[];
  windowMs: number;
}

/** Counters of one process. */
export class MemoryCounters implements Counters {
  readonly kind = 'memory';
  readonly #periods = new Map<string, Period>();
  readonly #windows = new Map<string, Window>();
  readonly #groups = new Map<string, Set<string>>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#sweeper = setInterval(() => {
      this.sweep();
    }, SWEEP_EVERY_MS);
    this.#sweeper.unref();
  }

  rate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return Promise.resolve(this.rateNow(name, limit, windowMs));
  }

  /** See Counters.rate, synchronously (the primary answers its workers with it). */
  rateNow(name: string, limit: number, windowMs: number): RateVerdict {
    const now = this.#now();
    let w = this.#windows.get(name);
    if (w === undefined) {
      w = { times: [], windowMs };
      this.#windows.set(name, w);
    }
    w.windowMs = windowMs;
    const from = now - windowMs;
    let drop = 0;
    while (drop < w.times.length && (w.times[drop] ?? 0) <= from) drop++;
    if (drop > 0) w.times.splice(0, drop);
    const allowed = w.times.length < limit;
    if (allowed) w.times.push(now);
    const oldest = w.times[0];
    return {
      allowed,
      remaining: Math.max(0, limit - w.times.length),
      resetMs: oldest === undefined ? windowMs : oldest + windowMs - now,
    };
  }

  peekRate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return Promise.resolve(this.peekRateNow(name, limit, windowMs));
  }

  /** See Counters.peekRate, synchronously. */
  peekRateNow(name: string, limit: number, windowMs: number): RateVerdict {
    const now = this.#now();
    const times = (this.#windows.get(name)?.times ?? []).filter((t) => t > now - windowMs);
    return peekVerdict(times.length, limit, times[0] === undefined ? windowMs : times[0] + windowMs - now);
  }

  quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    return Promise.resolve(this.quotaNow(name, group, periodMs));
  }

  /** See Counters.quota, synchronously. */
  quotaNow(name: string, group: string, periodMs: number): QuotaUse {
    const now = this.#now();
    const current = this.#periods.get(name);
    if (current === undefined || current.endsAt <= now) {
      this.#periods.set(name, { value: 1, endsAt: now + periodMs });
      let g = this.#groups.get(group);
      if (g === undefined) {
        g = new Set();
        this.#groups.set(group, g);
      }
      g.add(name);
      return { used: 1, ttlMs: periodMs };
    }
    current.value++;
    return { used: current.value, ttlMs: current.endsAt - now };
  }

  rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    return Promise.resolve(this.rateThenQuotaNow(rate, quota));
  }

  /** See Counters.rateThenQuota, synchronously. */
  rateThenQuotaNow(rate: RateCheck, quota: QuotaCount): RateQuotaVerdict {
    const r = this.rateNow(rate.name, rate.limit, rate.windowMs);
    return { rate: r, quota: r.allowed ? this.quotaNow(quota.name, quota.group, quota.periodMs) : undefined };
  }

  peekQuota(name: string): Promise<QuotaUse | undefined> {
    return Promise.resolve(this.peekNow(name));
  }

  /** See Counters.peekQuota, synchronously. */
  peekNow(name: string): QuotaUse | undefined {
    const now = this.#now();
    const p = this.#periods.get(name);
    if (p === undefined || p.endsAt <= now) return undefined;
    return { used: p.value, ttlMs: p.endsAt - now };
  }

  resetQuota(name: string): Promise<void> {
    this.#periods.delete(name);
    return Promise.resolve();
  }

  resetGroup(group: string): Promise<void> {
    for (const name of this.#groups.get(group) ?? []) this.#periods.delete(name);
    this.#groups.delete(group);
    return Promise.resolve();
  }

  /** Drops expired periods and empty windows. */
  sweep(): void {
    const now = this.#now();
    for (const [name, p] of this.#periods) if (p.endsAt <= now) this.#periods.delete(name);
    for (const [name, w] of this.#windows) {
      const last = w.times[w.times.length - 1];
      if (last === undefined || last <= now - w.windowMs) this.#windows.delete(name);
    }
    for (const [group, names] of this.#groups) {
      for (const n of names) if (!this.#periods.has(n)) names.delete(n);
      if (names.size === 0) this.#groups.delete(group);
    }
  }

  /** Stops the sweeper. */
  close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#periods.clear();
    this.#windows.clear();
    this.#groups.clear();
    return Promise.resolve();
  }
}
