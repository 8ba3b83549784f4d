/**
 * When a process applies a policy. A policy takes effect without a reload: every process that
 * may have cached it is told to forget it (the change notice of a write, through the node's bus
 * and the store's group messages), and its next request reads the stored policy. The moment it
 * forgets is when it applies the new revision: it reads the policy again, records its hash and
 * publishes it in the registry, where the operator finds it (`GET /svc/nodes/policies/{id}`).
 * At start every stored policy is read once.
 */
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Store } from '../store/store.ts';
import type { AppliedDocs } from './applied.ts';

/** How soon a read the store refused is tried again. */
const RETRY_MS = 1000;

/** What {@link PolicyRevisions} needs. */
export interface PolicyRevisionsDeps {
  store: Pick<Store, 'get' | 'list'>;
  /** Where the revisions are kept (the process's `Applied.policies`). */
  docs: AppliedDocs;
  /** Publishes what the process serves (the registry's `publish`). */
  publish: () => Promise<void>;
  now: () => number;
  log: Pick<Logger, 'warn'>;
}

/** Reads the policies a process was told of, one batch at a time, and publishes their revisions. */
export class PolicyRevisions {
  readonly #deps: PolicyRevisionsDeps;
  #dirty = new Set<string>();
  #all = false;
  #running: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: PolicyRevisionsDeps) {
    this.#deps = deps;
  }

  /** Every stored policy (at start): read in the background, retried until the store answers. */
  loadAll(): void {
    this.#all = true;
    this.#kick();
  }

  /** The process forgot what it cached of policy `id`: its next read is the stored one. */
  changed(id: string): void {
    this.#dirty.add(id);
    this.#kick();
  }

  /** Resolves once everything noted so far is recorded and published (or failed). */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Stops reading. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
  }

  #kick(): void {
    if (this.#running !== undefined || this.#closed) return;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  async #drain(): Promise<void> {
    while (!this.#closed && (this.#all || this.#dirty.size > 0)) {
      const all = this.#all;
      const ids = this.#dirty;
      this.#all = false;
      this.#dirty = new Set();
      const { store, docs, now } = this.#deps;
      try {
        if (all) docs.swapped(await store.list('policies'), new Set(), now());
        else for (const id of ids) docs.set(id, await store.get('policies', id), now());
      } catch (err) {
        // Read again later: what this process applies is not known until then.
        this.#all ||= all;
        for (const id of ids) this.#dirty.add(id);
        this.#deps.log.warn('reading the applied policies failed', { error: errorMessage(err) });
        this.#retry = setTimeout(() => {
          this.#kick();
        }, RETRY_MS);
        this.#retry.unref();
        return;
      }
      await this.#deps.publish().catch((err: unknown) => {
        this.#deps.log.warn('publishing the applied revisions failed', { error: errorMessage(err) });
      });
    }
  }
}
