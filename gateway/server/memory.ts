/**
 * Gives back to the system the memory a load of the routes held and no longer needs (issue 33
 * item 4). V8 keeps the pages a collection frees in a pool of its own, still resident, and grows
 * its old generation for the garbage a load makes: a worker that loaded 10,000 APIs (their files,
 * parsed definitions, checks and compiled routes: far more at once than the table keeps) held
 * 160-168 MiB for good, and 175-185 MiB after a few reloads, though its live heap is about 46 MiB.
 * A last-resort collection also empties the pool and shrinks the generations.
 *
 * Run once when the process starts serving (`releaseMemory`, before it takes requests), and once
 * the routes have stopped changing after a reload (`IdleRelease`): a collection blocks the process
 * while it runs (about 20 ms with one API, 100-300 ms with 10,000 on 2 busy cores), so it waits for
 * a quiet moment rather than follow each of a burst of reloads, and the workers of a node take
 * their turns.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full collection that returns the freed pages to the system (V8's `last-resort` flavour, as
 * on memory pressure). Blocks the process while it runs.
 */
export function releaseMemory(): void {
  // V8's collector as a function, without `--expose-gc` for the whole process: a new context
  // gets `gc` while the flag is on (as Jest's leak detection does).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as NodeJS.GCFunction;
  setFlagsFromString('--no-expose-gc');
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** Quiet time after the last reload before the memory it freed is given back, ms. */
export const RELEASE_QUIET_MS = 10_000;
/** Between two workers' turns, ms: one at a time pauses. */
export const RELEASE_TURN_MS = 2_000;

/**
 * Releases memory once the routes have not changed for a quiet time: each `changed()` (a reload
 * swapped the table) starts the wait again. `turn` (the worker's number) shifts the moment, so
 * the workers of one node, which reload together, do not pause together.
 */
export class IdleRelease {
  #timer: NodeJS.Timeout | undefined;
  readonly #delayMs: number;
  readonly #release: () => void;

  constructor(opts: { turn?: number; quietMs?: number; release?: () => void } = {}) {
    this.#delayMs = (opts.quietMs ?? RELEASE_QUIET_MS) + (opts.turn ?? 0) * RELEASE_TURN_MS;
    this.#release = opts.release ?? releaseMemory;
  }

  /** The routes changed: release after the quiet time, unless they change again before. */
  changed(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#release();
    }, this.#delayMs);
    // A pending release never keeps a stopping process alive.
    this.#timer.unref();
  }

  /** Whether a release is waiting for its quiet time. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
