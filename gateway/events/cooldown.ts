/**
 * Webhook cooldowns (`event_timeout`): an identical delivery within the cooldown is suppressed.
 * Kept per process and outside route tables, so that a reload (which compiles every route again)
 * does not forget them; bounded, so a flood of distinct events can't grow it without end.
 */

/** Keys of recent deliveries and when each may fire again. */
export class Cooldowns {
  readonly #until = new Map<string, number>();
  readonly #max: number;

  /** `max`: keys kept at most; beyond it the expired ones go, then the oldest. */
  constructor(max = 10_000) {
    this.#max = max;
  }

  /**
   * True when `key` may fire at `now` (milliseconds); it then cools down for `ms`. False while
   * an earlier claim of the same key cools down.
   */
  claim(key: string, now: number, ms: number): boolean {
    const until = this.#until.get(key);
    if (until !== undefined) {
      if (until > now) return false;
      // Inserted again below, at the end: the map stays in claim order for eviction.
      this.#until.delete(key);
    }
    if (this.#until.size >= this.#max) this.#prune(now);
    this.#until.set(key, now + ms);
    return true;
  }

  /** Keys held now (for tests). */
  get size(): number {
    return this.#until.size;
  }

  #prune(now: number): void {
    for (const [key, until] of this.#until) if (until <= now) this.#until.delete(key);
    for (const key of this.#until.keys()) {
      if (this.#until.size < this.#max) break;
      this.#until.delete(key);
    }
  }
}

/** The cooldowns of this process, shared by every route table it builds. */
export const processCooldowns = new Cooldowns();
