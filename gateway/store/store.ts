/**
 * The document store of the gateway: APIs, policies and keys are JSON documents in named
 * collections, and group messages reach every gateway process that shares the store.
 * Implementations: `files` (embedded) and `redis`. Counters live apart, in `limits/`.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import type { NodeRegistry } from '../nodes/registry.ts';

/** Collections of documents. A new kind of object is a new name here, nothing else. */
export const COLLECTIONS = [
  'apis',
  'policies',
  'keys',
  'orgs',
  'certs',
  'oauth-clients',
  'oauth-codes',
] as const;
/** One of COLLECTIONS. */
export type Collection = (typeof COLLECTIONS)[number];

/**
 * A stored document as listed: its value (and the text it was parsed from, when the backing keeps
 * text: an unchanged text means an unchanged document), or why it could not be read.
 */
export type StoredEntry = { id: string; value: unknown; text?: string } | { id: string; problem: string };

/**
 * A listed document whose text parsed at the store's last list: parsed again only when its value
 * is read (once; each list hands out its own value).
 */
export function parsedLater(id: string, text: string): StoredEntry {
  let value: unknown;
  let parsed = false;
  return {
    id,
    text,
    get value(): unknown {
      if (!parsed) {
        value = JSON.parse(text) as unknown;
        parsed = true;
      }
      return value;
    },
  };
}

/**
 * How `put` treats an existing document: `upsert` (the mode when none is given) writes either way,
 * `create` only when absent, `update` only when present.
 */
export type PutMode = 'upsert' | 'create' | 'update';

/** What `put` did: `exists` (create refused) and `missing` (update refused) wrote nothing. */
export type PutOutcome = 'added' | 'modified' | 'exists' | 'missing';

/**
 * A message to every gateway process sharing the store: reload the routes, or forget what was
 * cached of one document (a key or policy changed, which takes effect without a reload).
 */
export type GroupMessage =
  | {
      type: 'reload';
      /** ID of the sending process, so it can skip its own message. */
      origin: string;
    }
  | {
      type: 'changed';
      origin: string;
      collection: Collection;
      id: string;
      /**
       * Set by a store on a write it made itself (never sent between processes): the gateway
       * tells every process that may cache the document, as for a write through its own API.
       */
      spread?: true;
    };

/** Store health, for `/hello`. */
export interface StoreHealth {
  ok: boolean;
  /** What failed, when not ok. */
  message?: string;
}

/** Where the gateway keeps what outlives a request. */
export interface Store {
  /** `files` or `redis`. */
  readonly kind: 'files' | 'redis';
  /** True when other gateway nodes share this store, so a group message reaches them. */
  readonly shared: boolean;

  /** Every document of a collection, sorted by ID; unreadable ones carry a problem. */
  list(collection: Collection): Promise<StoredEntry[]>;
  /** One document, or undefined. */
  get(collection: Collection, id: string): Promise<unknown>;
  /** Writes a document atomically (a reader sees the old or the new one, never a mix). */
  put(collection: Collection, id: string, value: unknown, mode?: PutMode): Promise<PutOutcome>;
  /** Removes a document; false when there was none. */
  delete(collection: Collection, id: string): Promise<boolean>;

  /**
   * Forgets what was cached of a document that another process changed (a store that caches
   * reads must then read it again).
   */
  forget(collection: Collection, id: string): void;

  /** Sends a message to every process subscribed through a store on the same backing. */
  publish(message: GroupMessage): Promise<void>;
  /** Receives group messages (own ones included); returns the unsubscribe function. */
  subscribe(handler: (message: GroupMessage) => void): () => void;
  /** Resolves once subscriptions made so far receive messages. */
  subscribed(): Promise<void>;

  /**
   * The registry of the gateway processes sharing this store (gateway/nodes/); absent when the
   * store is not shared, whose only process is the one asked.
   */
  nodeRegistry?(opts: { timeoutMs: number }): NodeRegistry;

  /** Whether the backing answers. */
  health(): Promise<StoreHealth>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}

/** Checks a group message received from outside the process. */
export function isGroupMessage(value: unknown): value is GroupMessage {
  if (!isPlainObject(value)) return false;
  const v = value;
  if (typeof v.origin !== 'string') return false;
  if (v.type === 'reload') return true;
  return (
    v.type === 'changed' &&
    typeof v.id === 'string' &&
    (COLLECTIONS as readonly unknown[]).includes(v.collection)
  );
}
