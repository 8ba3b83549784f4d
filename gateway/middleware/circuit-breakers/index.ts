/**
 * Circuit breakers per endpoint (`extended_paths.circuit_breakers`), kept per gateway process:
 * - over the last `samples` upstream calls of the endpoint, when the share of failures (a 5xx
 *   status, or no response at all: unreachable, timed out) reaches `threshold_percent` (0 to 1),
 *   the breaker opens: requests get 503 `Service temporarily unavailable.` without an upstream
 *   call, for `return_to_service_after` seconds;
 * - then it is half-open: one trial request goes upstream (the others still get 503); its
 *   success closes the breaker, its failure opens it again for the same time. With
 *   `disable_half_open_state`, the breaker closes at once when the time is up.
 * The first entry matching the method and path applies; each entry has its own breaker.
 */
import type { CircuitBreakerMeta, VersionInfo } from '../../../schemas/generated/models.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersionMiddleware,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** The breaker of one endpoint. */
export class Breaker {
  readonly threshold: number;
  readonly samples: number;
  readonly openMs: number;
  readonly halfOpen: boolean;
  /** Outcomes of the last calls (true: failed), oldest first. */
  #window: boolean[] = [];
  #failures = 0;
  /** When the breaker is open: the time it may be tried again; else undefined. */
  #openUntil: number | undefined;
  /** Half-open: a trial request is in flight. */
  #trial = false;

  constructor(
    meta: Pick<
      CircuitBreakerMeta,
      'threshold_percent' | 'samples' | 'return_to_service_after' | 'disable_half_open_state'
    >,
  ) {
    this.threshold = Number(meta.threshold_percent ?? '0');
    this.samples = Math.max(1, meta.samples ?? 1);
    this.openMs = (meta.return_to_service_after ?? 0) * 1000;
    this.halfOpen = meta.disable_half_open_state !== true;
  }

  /** Whether a request may go upstream now; 'trial' when it is the half-open state's trial. */
  admit(now: number): boolean | 'trial' {
    if (this.#openUntil === undefined) return true;
    if (now < this.#openUntil) return false;
    if (!this.halfOpen) {
      this.#close();
      return true;
    }
    if (this.#trial) return false;
    this.#trial = true;
    return 'trial';
  }

  /** The outcome of a call admitted with `admitted`; true when it opened the breaker. */
  record(failed: boolean, now: number, admitted: true | 'trial'): boolean {
    if (admitted === 'trial') {
      this.#trial = false;
      if (failed) {
        this.#openUntil = now + this.openMs;
        return true;
      }
      this.#close();
      return false;
    }
    if (this.#openUntil !== undefined) return false;
    this.#window.push(failed);
    if (failed) this.#failures++;
    if (this.#window.length > this.samples && this.#window.shift() === true) this.#failures--;
    if (this.#window.length >= this.samples && this.#failures / this.#window.length >= this.threshold) {
      this.#openUntil = now + this.openMs;
      this.#window = [];
      this.#failures = 0;
      return true;
    }
    return false;
  }

  #close(): void {
    this.#openUntil = undefined;
    this.#trial = false;
    this.#window = [];
    this.#failures = 0;
  }
}

interface Entry {
  endpoint: CompiledEndpoint;
  breaker: Breaker;
}

/** The breakers of a version, compiled (each with its own state); undefined when it has none. */
export function compileBreakers(v: VersionInfo): Entry[] | undefined {
  return compileEndpointEntries(v, v.extended_paths?.circuit_breakers, (e) => ({ breaker: new Breaker(e) }));
}

/** See the module comment. */
export const circuitBreakers: GatewayMiddleware = perVersionMiddleware(
  'circuit-breakers',
  'breakers',
  compileBreakers,
  (of, deps) =>
    around(async (ctx, next) => {
      const hit = matchingEntry(of(ctx), ctx);
      if (hit === undefined) {
        await next();
        return undefined;
      }
      const admitted = hit.breaker.admit(deps.now());
      if (admitted === false) return reject(ctx, GatewayError.breakerOpen());
      try {
        await next();
      } finally {
        const status = ctx.upstreamStatus;
        const failed = status === undefined || status >= 500;
        if (hit.breaker.record(failed, deps.now(), admitted)) {
          ctx.log.warn('circuit breaker opened', { path: ctx.path, method: ctx.method.toUpperCase() });
        }
      }
      return undefined;
    }),
);
