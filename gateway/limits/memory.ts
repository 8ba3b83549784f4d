/**
 * In-memory counters with a lifetime, for the embedded store. Expired counters are dropped when
 * touched and by a periodic sweep, so idle keys don't accumulate.
 */
import type { CounterValue, Counters } from './counters.ts';

const SWEEP_EVERY_MS = 60_000;

/** Counters of one process. */
export class MemoryCounters implements Counters {
  readonly kind = 'memory';
  readonly #counters = new Map<string, { value: number; expiresAt: number }>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#sweeper = setInterval(() => {
      this.sweep();
    }, SWEEP_EVERY_MS);
    this.#sweeper.unref();
  }

  incr(name: string, ttlMs: number): Promise<CounterValue> {
    return Promise.resolve(this.incrNow(name, ttlMs));
  }

  /** The increment, synchronously. */
  incrNow(name: string, ttlMs: number): CounterValue {
    const now = this.#now();
    const current = this.#counters.get(name);
    if (current === undefined || current.expiresAt <= now) {
      this.#counters.set(name, { value: 1, expiresAt: now + ttlMs });
      return { value: 1, ttlMs };
    }
    current.value++;
    return { value: current.value, ttlMs: current.expiresAt - now };
  }

  reset(name: string): Promise<void> {
    this.#counters.delete(name);
    return Promise.resolve();
  }

  /** Drops expired counters. */
  sweep(): void {
    const now = this.#now();
    for (const [name, c] of this.#counters) if (c.expiresAt <= now) this.#counters.delete(name);
  }

  /** Stops the sweeper. */
  close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#counters.clear();
    return Promise.resolve();
  }
}
