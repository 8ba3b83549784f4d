/**
 * The dashboard's storage: one interface, two implementations (sqlite.ts, the embedded default on
 * node:sqlite; postgres.ts for production), one shared test suite (store.test.ts). Everything an
 * organisation owns is a document of a kind, keyed by (organisation, kind, ID), so no query can
 * reach another organisation's rows without naming it. Every write runs in a transaction that
 * also appends its audit entries: a write is acknowledged only after both are durable.
 */
import type { AnalyticsStore } from '../analytics/store.ts';
import { PORTAL_KINDS } from '../portal/kinds.ts';

/** The kinds of documents an organisation owns. */
export const KINDS = [
  'apis',
  'policies',
  'keys',
  'certs',
  'users',
  'groups',
  'oauth-clients',
  // Records of the access tokens gateways issue (api/oauth-tokens.ts); the tokens are theirs.
  'oauth-tokens',
  // The last quota reset of each key (api/keys.ts): its change tells the gateways to reset
  // their counters, which they keep themselves.
  'quota-resets',
  ...PORTAL_KINDS,
] as const;
/** One of KINDS. */
export type Kind = (typeof KINDS)[number];

/** A stored document. */
export interface Doc {
  id: string;
  body: Record<string, unknown>;
  /** Milliseconds since the epoch. */
  created: number;
  updated: number;
}

/** An organisation: ID, name and domain, plus whatever else its body holds. */
export interface Org {
  id: string;
  body: Record<string, unknown>;
  created: number;
  updated: number;
}

/** One page of a list and the number of items in all pages. */
export interface Page<T> {
  items: T[];
  total: number;
}

/** Which slice of a list to read: `limit` undefined reads to the end. */
export interface Slice {
  offset?: number;
  limit?: number;
}

/** One write as the audit log keeps it. */
export interface AuditEntry {
  /** Order of the entry in the whole log (assigned by the store). */
  seq: number;
  org_id: string;
  /** Milliseconds since the epoch. */
  at: number;
  /** `user:<id>` or `admin` (the admin secret). */
  actor: string;
  action: 'create' | 'update' | 'delete';
  kind: Kind | 'organisations';
  object_id: string;
  /** SHA-256 of the canonical JSON of the object before and after the write; null when absent. */
  before_hash: string | null;
  after_hash: string | null;
}

/** Reads, in a transaction or outside one. */
export interface StoreReader {
  getOrg(id: string): Promise<Org | undefined>;
  listOrgs(slice?: Slice): Promise<Page<Org>>;
  get(org: string, kind: Kind, id: string): Promise<Doc | undefined>;
  list(org: string, kind: Kind, slice?: Slice): Promise<Page<Doc>>;
  /** The document of `kind` whose lookup value is `lookup`, in any organisation. */
  findByLookup(kind: Kind, lookup: string): Promise<{ org: string; doc: Doc; lookup: string } | undefined>;
  listAudit(org: string, slice?: Slice): Promise<Page<AuditEntry>>;
}

/** Reads and writes inside one transaction. */
export interface StoreTx extends StoreReader {
  /** Creates or replaces the organisation. */
  putOrg(id: string, body: Record<string, unknown>): Promise<void>;
  /** Deletes the organisation and everything it owns (documents and audit log). */
  deleteOrg(id: string): Promise<boolean>;
  /**
   * Creates or replaces a document. `lookup` is a value unique per kind across organisations
   * (the hash of a user's key); a clash throws a LookupTakenError. Without `lookup`, a replaced
   * document keeps the one it had.
   */
  put(org: string, kind: Kind, id: string, body: Record<string, unknown>, lookup?: string): Promise<void>;
  delete(org: string, kind: Kind, id: string): Promise<boolean>;
  audit(entry: Omit<AuditEntry, 'seq'>): Promise<void>;
}

/** The storage of one dashboard process. */
export interface Store extends StoreReader {
  readonly kind: 'sqlite' | 'postgres';
  /** Traffic analytics of the gateways (dashboard/analytics/): rollups, not documents. */
  readonly analytics: AnalyticsStore;
  /**
   * Runs `fn` in a transaction: committed when it returns, rolled back when it throws. Writes of
   * one organisation (`scope`) are serialized, so a check made inside (a slug in use) holds
   * until the commit.
   */
  write<T>(scope: string, fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** The highest migration applied. */
  schemaVersion(): Promise<number>;
  health(): Promise<{ ok: boolean; message?: string }>;
  close(): Promise<void>;
}

/** A lookup value (a key's hash) that another document already holds. */
export class LookupTakenError extends Error {
  constructor(kind: Kind) {
    super(`${kind}: lookup value already in use`);
    this.name = 'LookupTakenError';
  }
}

/** The slice of page `page` (1-based) of `size` items. */
export function pageSlice(page: number, size: number): Slice {
  return { offset: (page - 1) * size, limit: size };
}
