/**
 * `svc_config_convergence_seconds`: how long a change of an API or policy takes to be served by every
 * gateway, from the reconcile that pushed it (the operator's first sight of the change, right
 * after the API server accepted it) to the time the last gateway started serving the new
 * revision (its `applied_at`, gateway/nodes/). One observation per pushed revision, made by the
 * reconcile that finds every gateway serving it.
 */
import { Histogram, type Registry } from 'prom-client';

/** Pushes remembered at most. */
const MAX_WAITING = 100_000;

/** The convergence histogram and the pushes still waiting for their gateways. */
export class Convergence {
  readonly #histogram: Histogram<'kind'>;
  /** Pushed revisions not yet served by every gateway, by object uid. */
  readonly #waiting = new Map<string, { revision: string; since: number }>();

  constructor(registry?: Registry) {
    this.#histogram = new Histogram({
      name: 'svc_config_convergence_seconds',
      help: 'Seconds from a change of an API or policy to the last gateway serving its new revision',
      labelNames: ['kind'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: registry === undefined ? [] : [registry],
    });
  }

  /** A push of `revision` for the object `uid`, whose reconcile started at `since`. */
  pushed(uid: string | undefined, revision: string, since: Date): void {
    if (uid === undefined) return;
    // Objects deleted before their gateways served them are never looked at again: bounded.
    if (this.#waiting.size >= MAX_WAITING) this.#waiting.clear();
    this.#waiting.set(uid, { revision, since: since.getTime() });
  }

  /**
   * Every gateway serves `revision` of `uid`, the last one since `lastAppliedAt`: observed once
   * for a revision pushed by this process (a restarted operator does not know when it changed).
   * Returns the seconds observed, if any.
   */
  served(uid: string | undefined, kind: string, revision: string, lastAppliedAt: number): number | undefined {
    if (uid === undefined) return undefined;
    const w = this.#waiting.get(uid);
    if (w?.revision !== revision) return undefined;
    this.#waiting.delete(uid);
    // Gateways' clocks may run a little behind the operator's: never below zero.
    const seconds = Math.max(0, lastAppliedAt - w.since) / 1000;
    this.#histogram.observe({ kind }, seconds);
    return seconds;
  }
}
