/** Waiting on conditions with a deadline, and free ports: for tests, benchmarks and the demo. */

/**
 * Polls `check` until it returns a value other than undefined or false, or fails after
 * `timeoutMs` naming what it waited for (and the last error `check` threw).
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`, { cause: last });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export { freeLoopbackPort as freePort } from '../net.ts';
