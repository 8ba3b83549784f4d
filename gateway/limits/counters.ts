/**
 * Counters with a lifetime, the part of the store that limits and quotas count in. Kept apart
 * from the document store (APIs, policies, keys): counters are many, small and hot, and the next
 * algorithms (sliding windows, quota periods) are server-side scripts, which a document store
 * need not know about. Implementations: in memory (one process) and Redis (every node).
 */

/** A counter after an increment. */
export interface CounterValue {
  /** Value after the increment (1 for a new or expired counter). */
  value: number;
  /** Milliseconds until the counter expires. */
  ttlMs: number;
}

/** Where limits count. */
export interface Counters {
  /** `memory` (this process) or `redis` (every node on the same Redis). */
  readonly kind: 'memory' | 'redis';
  /** Adds one to a counter; a new (or expired) counter starts at 1 and lives `ttlMs`. */
  incr(counter: string, ttlMs: number): Promise<CounterValue>;
  /** Removes a counter, so the next increment starts a new period. */
  reset(counter: string): Promise<void>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}
