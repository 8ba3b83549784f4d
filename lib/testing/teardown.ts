/** Stopping what a test's set-up started, whether or not the set-up got to the end. */

/** A started process or server: stopped by `stop()` or, when it has none, `close()`. */
export type Stoppable = { stop(): unknown } | { close(): unknown };

/**
 * Stops, in the order given, what a `before` hook (or a start function) started. What is undefined
 * (a set-up that failed before starting it) is skipped, and every one is stopped even when an
 * earlier one fails; the first failure is thrown once all have been tried. Otherwise an `after`
 * hook throwing on an undefined handle leaves the rest's child processes and sockets open, and
 * `node --test` never exits.
 */
export async function stopAll(...started: readonly (Stoppable | undefined)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const s of started) {
    if (s === undefined) continue;
    try {
      await ('stop' in s ? s.stop() : s.close());
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/**
 * Runs `start` with a list to which it adds what it starts (`started.push(x)`, in starting order);
 * when `start` throws, what was already started is stopped (last first) before the error is
 * rethrown, so a start function that fails part-way leaves nothing running.
 */
export async function startedOrStopped<T>(start: (started: Stoppable[]) => Promise<T>): Promise<T> {
  const started: Stoppable[] = [];
  try {
    return await start(started);
  } catch (err) {
    await stopAll(...started.reverse()).catch(() => undefined);
    throw err;
  }
}
