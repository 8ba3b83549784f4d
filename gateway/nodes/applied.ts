/**
 * What one gateway process serves: a revision per API and per policy, the hash of the stored
 * document as the management API returns it (`lib/canonical-hash.ts`: the operator's
 * `latestSvcSpecHash`), and when it took effect here. An API takes effect when the route table
 * holding it is swapped in; one left out of the table (it failed to compile) has no revision: it
 * is not served. A policy takes effect once this process has forgotten what it cached of the
 * one before (policies.ts).
 */
import { hashOf } from '../../lib/canonical-hash.ts';
import type { StoredEntry } from '../store/store.ts';
import type { AppliedKind, AppliedRevision, AppliedView } from './registry.ts';

/** The revisions of one kind of document a process serves. */
export class AppliedDocs {
  readonly #docs = new Map<string, AppliedRevision & { text?: string }>();

  /**
   * Records a swap: `entries` are the stored documents read, `leftOut` the IDs not served. An
   * unchanged stored text keeps its revision and time, so only a change is timed anew; a
   * document no longer stored is no longer served.
   */
  swapped(entries: readonly StoredEntry[], leftOut: ReadonlySet<string>, now: number): void {
    let served = 0;
    for (const e of entries) {
      if (!('value' in e) || leftOut.has(e.id)) continue;
      served++;
      const before = this.#docs.get(e.id);
      if (before !== undefined && e.text !== undefined && before.text === e.text) continue;
      this.#record(e.id, e.value, now, e.text);
    }
    // Every document served is recorded now (a store lists an ID once): when they are all the
    // recorded ones, none is gone, and no set of 10,000 IDs is made at every reload.
    if (this.#docs.size === served) return;
    const seen = new Set<string>();
    for (const e of entries) if ('value' in e && !leftOut.has(e.id)) seen.add(e.id);
    for (const id of this.#docs.keys()) if (!seen.has(id)) this.#docs.delete(id);
  }

  /** Records one document as stored now (undefined: gone, no longer served). */
  set(id: string, value: unknown, now: number): void {
    if (value === undefined) this.#docs.delete(id);
    else this.#record(id, value, now);
  }

  #record(id: string, value: unknown, now: number, text?: string): void {
    const revision = hashOf(value);
    const before = this.#docs.get(id);
    if (before?.revision === revision) {
      if (text !== undefined) before.text = text;
      return;
    }
    this.#docs.set(id, {
      revision,
      applied_at: new Date(now).toISOString(),
      ...(text === undefined ? {} : { text }),
    });
  }

  /** One document's revision, or undefined when this process does not serve it. */
  get(id: string): AppliedRevision | undefined {
    const a = this.#docs.get(id);
    return a === undefined ? undefined : { revision: a.revision, applied_at: a.applied_at };
  }

  /** Every document served, by ID. */
  all(): Record<string, AppliedRevision> {
    const out: Record<string, AppliedRevision> = {};
    for (const [id, a] of this.#docs) out[id] = { revision: a.revision, applied_at: a.applied_at };
    return out;
  }
}

/** The revisions a process serves: its APIs and its policies. */
export class Applied implements AppliedView {
  readonly apis = new AppliedDocs();
  readonly policies = new AppliedDocs();

  get(kind: AppliedKind, id: string): AppliedRevision | undefined {
    return this[kind].get(id);
  }

  all(kind: AppliedKind): Record<string, AppliedRevision> {
    return this[kind].all();
  }

  /** The APIs the last reload that swapped the table left out, and why (set by that reload). */
  apisLeftOut: Readonly<Record<string, string>> = {};

  leftOut(): Readonly<Record<string, string>> {
    return this.apisLeftOut;
  }
}
