/**
 * Counters of a cluster worker on the files store: the primary keeps them (in memory), so the
 * workers of a node share one limit, exactly as one process would; each operation is one IPC
 * round trip. With Redis, workers use Redis directly.
 */
import { randomUUID } from 'node:crypto';
import { TransientError } from '../../lib/errors.ts';
import type { Counters, QuotaCount, QuotaUse, RateCheck, RateQuotaVerdict, RateVerdict } from './counters.ts';
import type { MemoryCounters } from './memory.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** An operation a worker asks of the primary. */
export type CounterOp =
  | { op: 'rate'; name: string; limit: number; windowMs: number }
  | { op: 'quota'; name: string; group: string; periodMs: number }
  | { op: 'rateThenQuota'; rate: RateCheck; quota: QuotaCount }
  | { op: 'peek'; name: string }
  | { op: 'peekRate'; name: string; limit: number; windowMs: number }
  | { op: 'reset'; name: string }
  | { op: 'resetGroup'; group: string };

/** The primary's answer. */
export type CounterResult = RateVerdict | QuotaUse | RateQuotaVerdict | null;

/** Runs one operation on the primary's counters. */
export function runCounterOp(counters: MemoryCounters, o: CounterOp): CounterResult {
  switch (o.op) {
    case 'rate':
      return counters.rateNow(o.name, o.limit, o.windowMs);
    case 'quota':
      return counters.quotaNow(o.name, o.group, o.periodMs);
    case 'rateThenQuota':
      return counters.rateThenQuotaNow(o.rate, o.quota);
    case 'peek':
      return counters.peekNow(o.name) ?? null;
    case 'peekRate':
      return counters.peekRateNow(o.name, o.limit, o.windowMs);
    case 'reset':
      void counters.resetQuota(o.name);
      return null;
    case 'resetGroup':
      void counters.resetGroup(o.group);
      return null;
  }
}

const TIMEOUT_MS = 5_000;

/** The worker's side: each operation is sent to the primary and answered by it. */
export class RelayedCounters implements Counters {
  readonly kind = 'relay';
  readonly #send: (m: { svc: 'counters'; id: string; call: CounterOp }) => void;
  readonly #waiting = new Map<string, { resolve: (r: CounterResult) => void; timer: NodeJS.Timeout }>();

  constructor(send: (m: { svc: 'counters'; id: string; call: CounterOp }) => void) {
    this.#send = send;
  }

  /** Hands the primary's answer to the waiting operation. */
  answered(id: string, result: CounterResult): void {
    const w = this.#waiting.get(id);
    if (w === undefined) return;
    this.#waiting.delete(id);
    clearTimeout(w.timer);
    w.resolve(result);
  }

  #call(call: CounterOp): Promise<CounterResult> {
    return new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(
          new TransientError('GW_ERR_STORE_UNAVAILABLE', 'the primary did not answer a counter operation'),
        );
      }, TIMEOUT_MS);
      this.#waiting.set(id, { resolve, timer });
      this.#send({ svc: 'counters', id, call });
    });
  }

  async rate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return (await this.#call({ op: 'rate', name, limit, windowMs })) as RateVerdict;
  }

  async quota(name: string, group: string, periodMs: number): Promise<QuotaUse> {
    return (await this.#call({ op: 'quota', name, group, periodMs })) as QuotaUse;
  }

  async rateThenQuota(rate: RateCheck, quota: QuotaCount): Promise<RateQuotaVerdict> {
    return (await this.#call({ op: 'rateThenQuota', rate, quota })) as RateQuotaVerdict;
  }

  async peekRate(name: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return (await this.#call({ op: 'peekRate', name, limit, windowMs })) as RateVerdict;
  }

  async peekQuota(name: string): Promise<QuotaUse | undefined> {
    return ((await this.#call({ op: 'peek', name })) as QuotaUse | null) ?? undefined;
  }

  async resetQuota(name: string): Promise<void> {
    await this.#call({ op: 'reset', name });
  }

  async resetGroup(group: string): Promise<void> {
    await this.#call({ op: 'resetGroup', group });
  }

  close(): Promise<void> {
    for (const w of this.#waiting.values()) clearTimeout(w.timer);
    this.#waiting.clear();
    return Promise.resolve();
  }
}

/** The counters of this cluster worker: relayed to the primary over the IPC channel. */
export function workerCounters(): RelayedCounters {
  const send = process.send?.bind(process);
  if (send === undefined) throw new Error('workerCounters: not a cluster worker (no IPC channel)');
  const counters = new RelayedCounters((m) => {
    send(m);
  });
  process.on('message', (m: unknown) => {
    if (isCountersDone(m)) counters.answered(m.id, m.result);
  });
  return counters;
}

/** The primary's answer message. */
export interface CountersDone {
  svc: 'counters-done';
  id: string;
  result: CounterResult;
}

/** A worker's request message. */
export interface CountersCall {
  svc: 'counters';
  id: string;
  call: CounterOp;
}

function isCountersDone(m: unknown): m is CountersDone {
  return isPlainObject(m) && m.svc === 'counters-done' && typeof m.id === 'string';
}

/** Whether an IPC message is a worker's counter request. */
export function isCountersCall(m: unknown): m is CountersCall {
  return isPlainObject(m) && m.svc === 'counters' && typeof m.id === 'string' && typeof m.call === 'object';
}
