/**
 * What happens while the counters can't be reached (Redis down): the request is refused with 503
 * (fail closed, the default) or let through uncounted (`limits_fail_open`). The outage is logged
 * once when it starts and once when counting resumes.
 */
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';

/** The outcome of a guarded counter operation when the counters are away. */
export const UNAVAILABLE = Symbol('counters unavailable');

/** Runs counter operations and tracks outages. */
export class LimitsGuard {
  readonly failOpen: boolean;
  readonly #log: Logger;
  #down = false;

  constructor(opts: { failOpen: boolean; log: Logger }) {
    this.failOpen = opts.failOpen;
    this.#log = opts.log;
  }

  /** The result of `op`, or UNAVAILABLE when the counters can't be reached. */
  run<T>(op: () => Promise<T>): Promise<T | typeof UNAVAILABLE> {
    let pending: Promise<T>;
    try {
      pending = op();
    } catch (err) {
      pending = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    // Not an async function: one promise per operation, on every limited request.
    return pending.then(
      (result) => {
        if (this.#down) {
          this.#down = false;
          this.#log.info('limit counters reachable again');
        }
        return result;
      },
      (err: unknown) => {
        if (!(err instanceof TransientError)) throw err;
        if (!this.#down) {
          this.#down = true;
          this.#log.error('limit counters unreachable', {
            error: errorMessage(err),
            meanwhile: this.failOpen
              ? 'limited requests pass uncounted'
              : 'limited requests are refused (503)',
          });
        }
        return UNAVAILABLE;
      },
    );
  }
}
