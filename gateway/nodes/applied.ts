/**
 * What one gateway process serves: a revision per API, the hash of the stored document as the
 * management API returns it (`lib/canonical-hash.ts`: the operator's `latestSvcSpecHash`), and
 * when the route table holding it was swapped in. An API left out of the table (it failed to
 * compile) has no revision: it is not served.
 */
import { hashOf } from '../../lib/canonical-hash.ts';
import type { StoredEntry } from '../store/store.ts';
import type { AppliedRevision, AppliedView } from './registry.ts';

/** The revisions a process serves, updated by each reload that swapped its table. */
export class AppliedApis implements AppliedView {
  readonly #apis = new Map<string, AppliedRevision & { text?: string }>();

  /**
   * Records a swap: `entries` are the stored APIs the reload read, `leftOut` the IDs it could not
   * serve. An unchanged stored text keeps its revision and time, so only a change is timed anew.
   */
  swapped(entries: readonly StoredEntry[], leftOut: ReadonlySet<string>, now: number): void {
    const at = new Date(now).toISOString();
    const seen = new Set<string>();
    for (const e of entries) {
      if (!('value' in e) || leftOut.has(e.id)) continue;
      seen.add(e.id);
      const before = this.#apis.get(e.id);
      if (before !== undefined && e.text !== undefined && before.text === e.text) continue;
      const revision = hashOf(e.value);
      if (before?.revision === revision) continue;
      this.#apis.set(e.id, { revision, applied_at: at, ...(e.text === undefined ? {} : { text: e.text }) });
    }
    for (const id of this.#apis.keys()) if (!seen.has(id)) this.#apis.delete(id);
  }

  /** One API's revision, or undefined when this process does not serve it. */
  get(id: string): AppliedRevision | undefined {
    const a = this.#apis.get(id);
    return a === undefined ? undefined : { revision: a.revision, applied_at: a.applied_at };
  }

  /** Every API served, by ID. */
  all(): Record<string, AppliedRevision> {
    const out: Record<string, AppliedRevision> = {};
    for (const [id, a] of this.#apis) out[id] = { revision: a.revision, applied_at: a.applied_at };
    return out;
  }
}
