/**
 * A work queue of object keys (`namespace/name`), the way controllers use it: a key waiting in
 * the queue is there once however often it is added; a key is never worked on by two workers at
 * once (added while in work, it is queued again when the work ends); failures come back after a
 * per-key exponential backoff with a cap; success forgets the key's failures.
 */

/** Backoff of a key after `failures` consecutive failures: base * 2^(failures-1), capped. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

/** What a handler says about a key once it is done with it. */
export interface WorkResult {
  /** Work on the key again after this delay (a periodic check), without counting a failure. */
  requeueAfterMs?: number;
}

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Concurrent workers. */
  workers: number;
  /** First retry delay after a failure. */
  baseBackoffMs?: number;
  /** Longest retry delay. */
  maxBackoffMs?: number;
  /** Called after each item with its outcome, for metrics and logs. */
  onDone?: (key: string, outcome: { ok: boolean; durationMs: number; error?: unknown }) => void;
}

/** Keys in, one handler call per key at a time out. */
export class WorkQueue {
  readonly #handler: (key: string) => Promise<WorkResult>;
  readonly #opts: Required<Omit<WorkQueueOptions, 'onDone'>> & Pick<WorkQueueOptions, 'onDone'>;
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #running = 0;
  #started = false;
  #stopped = false;
  #idle: (() => void)[] = [];

  constructor(handler: (key: string) => Promise<WorkResult>, opts: WorkQueueOptions & { paused?: boolean }) {
    this.#handler = handler;
    const { paused, ...rest } = opts;
    // `??`, not a spread over defaults: an option passed as undefined keeps its default (a NaN
    // backoff would retry a failing key every millisecond).
    this.#opts = {
      ...rest,
      baseBackoffMs: rest.baseBackoffMs ?? 500,
      maxBackoffMs: rest.maxBackoffMs ?? 60_000,
    };
    this.#started = paused !== true;
  }

  /** Keys waiting (not counting those in work or waiting for a timer). */
  get depth(): number {
    return this.#queue.length;
  }

  /** Adds a key now. A pending delayed add of the same key is superseded. */
  add(key: string): void {
    if (this.#stopped) return;
    const timer = this.#timers.get(key);
    if (timer) {
      clearTimeout(timer);
      this.#timers.delete(key);
    }
    if (this.#active.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#queue.push(key);
    this.#pump();
  }

  /** Adds a key after a delay; an earlier pending delay for the key wins. */
  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    if (this.#timers.has(key) || this.#queued.has(key)) return;
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, timer);
  }

  /** Consecutive failures of a key. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Starts the workers; keys added before are held until then. */
  start(): void {
    this.#started = true;
    this.#pump();
  }

  /** Stops taking work; resolves when the items in work are done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#queue.length = 0;
    this.#queued.clear();
    if (this.#running > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** Resolves when nothing is queued or in work (timers aside); for tests and benchmarks. */
  async drained(): Promise<void> {
    if (this.#running === 0 && (this.#queue.length === 0 || !this.#started)) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#started && !this.#stopped && this.#running < this.#opts.workers && this.#queue.length > 0) {
      const key = this.#queue.shift();
      if (key === undefined) break;
      this.#queued.delete(key);
      this.#active.add(key);
      this.#running++;
      void this.#work(key);
    }
  }

  async #work(key: string): Promise<void> {
    const started = performance.now();
    let result: WorkResult = {};
    let error: unknown;
    let ok = true;
    try {
      result = await this.#handler(key);
    } catch (err) {
      ok = false;
      error = err;
    }
    this.#opts.onDone?.(key, { ok, durationMs: performance.now() - started, error });
    this.#active.delete(key);
    this.#running--;
    if (ok) {
      this.#failures.delete(key);
    } else {
      const n = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, n);
    }
    if (this.#dirty.delete(key)) {
      this.add(key);
    } else if (!ok) {
      this.addAfter(key, backoffMs(this.failures(key), this.#opts.baseBackoffMs, this.#opts.maxBackoffMs));
    } else if (result.requeueAfterMs !== undefined) {
      this.addAfter(key, result.requeueAfterMs);
    }
    this.#pump();
    if (this.#running === 0 && (this.#queue.length === 0 || this.#stopped)) {
      const waiting = this.#idle;
      this.#idle = [];
      for (const resolve of waiting) resolve();
    }
  }
}
