/**
 * The part of the store both databases share: the SQL of every operation, over a small driver
 * (sqlite.ts, postgres.ts) that runs statements with `?` placeholders and owns transactions and
 * migrations. Keeping one copy of the queries is what lets one test suite vouch for both.
 */
import type { AuditEntry, Doc, Kind, Org, Page, Slice, Store, StoreReader, StoreTx } from './store.ts';
import { LookupTakenError } from './store.ts';
import { MIGRATIONS, MIGRATIONS_TABLE, type Migration } from './migrations.ts';
import { SqlAnalytics, type AnalyticsStore } from '../analytics/store.ts';

/** A row as a driver returns it (numbers may come back as strings from PostgreSQL). */
export type Row = Record<string, unknown>;

/** A connection, or a transaction on one. */
export interface SqlConn {
  all(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Runs a statement; returns the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

/** What each database provides. */
export interface SqlDriver {
  readonly kind: 'sqlite' | 'postgres';
  /** For reads outside a transaction. */
  readonly conn: SqlConn;
  /**
   * Runs `fn` in a transaction holding the write lock of `scope` (an organisation ID). Its commit
   * is on disk before it returns, unless `relaxed` (traffic analytics only): then it is atomic
   * and consistent as any, but made durable within about a second (RELAXED_SYNC_MS) rather than
   * before it returns, so a power cut (or a crash of the machine or of the database server, not
   * of the dashboard) may lose the relaxed commits of that last second; never a commit that is
   * not relaxed, nor the database's consistency. docs/design/analytics-durability.md says why.
   */
  transaction<T>(scope: string, fn: (conn: SqlConn) => Promise<T>, opts?: { relaxed?: boolean }): Promise<T>;
  /** Runs `fn` in a transaction holding the lock that serializes migrations between processes. */
  migrationTransaction<T>(fn: (conn: SqlConn) => Promise<T>): Promise<T>;
  /** The statements of a migration in this dialect. */
  statementsOf(m: Migration): readonly string[];
  close(): Promise<void>;
}

const ALL = Number.MAX_SAFE_INTEGER;

function bounds(slice: Slice | undefined): [number, number] {
  return [slice?.limit ?? ALL, slice?.offset ?? 0];
}

function parseBody(text: unknown): Record<string, unknown> {
  return JSON.parse(String(text)) as Record<string, unknown>;
}

function docOf(r: Row): Doc {
  return {
    id: String(r.id),
    body: parseBody(r.body),
    created: Number(r.created_at),
    updated: Number(r.updated_at),
  };
}

function auditOf(r: Row): AuditEntry {
  return {
    seq: Number(r.seq),
    org_id: String(r.org_id),
    at: Number(r.at),
    actor: String(r.actor),
    action: String(r.action) as AuditEntry['action'],
    kind: String(r.kind) as AuditEntry['kind'],
    object_id: String(r.object_id),
    before_hash: typeof r.before_hash === 'string' ? r.before_hash : null,
    after_hash: typeof r.after_hash === 'string' ? r.after_hash : null,
  };
}

class SqlReader implements StoreReader {
  protected readonly c: SqlConn;
  constructor(conn: SqlConn) {
    this.c = conn;
  }

  async getOrg(id: string): Promise<Org | undefined> {
    const [r] = await this.c.all('SELECT id, body, created_at, updated_at FROM organisations WHERE id = ?', [
      id,
    ]);
    return r === undefined ? undefined : docOf(r);
  }

  async listOrgs(slice?: Slice): Promise<Page<Org>> {
    const [n] = await this.c.all('SELECT COUNT(*) AS n FROM organisations');
    const rows = await this.c.all(
      'SELECT id, body, created_at, updated_at FROM organisations ORDER BY created_at, id LIMIT ? OFFSET ?',
      bounds(slice),
    );
    return { items: rows.map(docOf), total: Number(n?.n ?? 0) };
  }

  async get(org: string, kind: Kind, id: string): Promise<Doc | undefined> {
    const [r] = await this.c.all(
      'SELECT id, body, created_at, updated_at FROM documents WHERE org_id = ? AND kind = ? AND id = ?',
      [org, kind, id],
    );
    return r === undefined ? undefined : docOf(r);
  }

  async list(org: string, kind: Kind, slice?: Slice): Promise<Page<Doc>> {
    const [n] = await this.c.all('SELECT COUNT(*) AS n FROM documents WHERE org_id = ? AND kind = ?', [
      org,
      kind,
    ]);
    const rows = await this.c.all(
      'SELECT id, body, created_at, updated_at FROM documents WHERE org_id = ? AND kind = ? ORDER BY created_at, id LIMIT ? OFFSET ?',
      [org, kind, ...bounds(slice)],
    );
    return { items: rows.map(docOf), total: Number(n?.n ?? 0) };
  }

  async findByLookup(
    kind: Kind,
    lookup: string,
  ): Promise<{ org: string; doc: Doc; lookup: string } | undefined> {
    const [r] = await this.c.all(
      'SELECT org_id, id, body, lookup, created_at, updated_at FROM documents WHERE kind = ? AND lookup = ?',
      [kind, lookup],
    );
    return r === undefined ? undefined : { org: String(r.org_id), doc: docOf(r), lookup: String(r.lookup) };
  }

  async listAudit(org: string, slice?: Slice): Promise<Page<AuditEntry>> {
    const [n] = await this.c.all('SELECT COUNT(*) AS n FROM audit_log WHERE org_id = ?', [org]);
    const rows = await this.c.all(
      'SELECT seq, org_id, at, actor, action, kind, object_id, before_hash, after_hash FROM audit_log WHERE org_id = ? ORDER BY seq LIMIT ? OFFSET ?',
      [org, ...bounds(slice)],
    );
    return { items: rows.map(auditOf), total: Number(n?.n ?? 0) };
  }
}

class SqlTx extends SqlReader implements StoreTx {
  readonly #now: () => number;
  constructor(conn: SqlConn, now: () => number) {
    super(conn);
    this.#now = now;
  }

  async putOrg(id: string, body: Record<string, unknown>): Promise<void> {
    const t = this.#now();
    await this.c.run(
      `INSERT INTO organisations (id, body, created_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
      [id, JSON.stringify(body), t, t],
    );
  }

  async deleteOrg(id: string): Promise<boolean> {
    await this.c.run('DELETE FROM documents WHERE org_id = ?', [id]);
    await this.c.run('DELETE FROM audit_log WHERE org_id = ?', [id]);
    return (await this.c.run('DELETE FROM organisations WHERE id = ?', [id])) > 0;
  }

  async put(
    org: string,
    kind: Kind,
    id: string,
    body: Record<string, unknown>,
    lookup?: string,
  ): Promise<void> {
    if (lookup !== undefined) {
      const taken = await this.c.all(
        'SELECT 1 AS x FROM documents WHERE kind = ? AND lookup = ? AND NOT (org_id = ? AND id = ?)',
        [kind, lookup, org, id],
      );
      if (taken.length > 0) throw new LookupTakenError(kind);
    }
    const t = this.#now();
    await this.c.run(
      `INSERT INTO documents (org_id, kind, id, body, lookup, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (org_id, kind, id) DO UPDATE SET body = excluded.body, lookup = COALESCE(excluded.lookup, documents.lookup), updated_at = excluded.updated_at`,
      [org, kind, id, JSON.stringify(body), lookup ?? null, t, t],
    );
  }

  async delete(org: string, kind: Kind, id: string): Promise<boolean> {
    return (
      (await this.c.run('DELETE FROM documents WHERE org_id = ? AND kind = ? AND id = ?', [org, kind, id])) >
      0
    );
  }

  async audit(e: Omit<AuditEntry, 'seq'>): Promise<void> {
    await this.c.run(
      'INSERT INTO audit_log (org_id, at, actor, action, kind, object_id, before_hash, after_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [e.org_id, e.at, e.actor, e.action, e.kind, e.object_id, e.before_hash, e.after_hash],
    );
  }
}

/** A Store over a driver: applies the pending migrations, then serves. */
export class SqlStore extends SqlReader implements Store {
  readonly kind: 'sqlite' | 'postgres';
  readonly analytics: AnalyticsStore;
  readonly #driver: SqlDriver;
  readonly #now: () => number;

  private constructor(driver: SqlDriver, now: () => number) {
    super(driver.conn);
    this.kind = driver.kind;
    // One lock for analytics writes (organisations' document writes are not held up by them),
    // and relaxed commits: a power cut may lose the last second of analytics, never a write of
    // users, keys or any document (docs/design/analytics-durability.md).
    this.analytics = new SqlAnalytics(driver.conn, (fn) =>
      driver.transaction('svc-analytics', fn, { relaxed: true }),
    );
    this.#driver = driver;
    this.#now = now;
  }

  /** Opens the store on `driver`, migrating it to the latest version first. */
  static async open(driver: SqlDriver, opts: { now?: () => number } = {}): Promise<SqlStore> {
    const now = opts.now ?? Date.now;
    try {
      await driver.migrationTransaction(async (c) => {
        await c.run(MIGRATIONS_TABLE);
        const done = new Set(
          (await c.all('SELECT version FROM schema_migrations')).map((r) => Number(r.version)),
        );
        for (const m of MIGRATIONS) {
          if (done.has(m.version)) continue;
          for (const sql of driver.statementsOf(m)) await c.run(sql);
          await c.run('INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)', [
            m.version,
            m.description,
            now(),
          ]);
        }
      });
    } catch (err) {
      await driver.close();
      throw err;
    }
    return new SqlStore(driver, now);
  }

  write<T>(scope: string, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.#driver.transaction(scope, (c) => fn(new SqlTx(c, this.#now)));
  }

  async schemaVersion(): Promise<number> {
    const [r] = await this.c.all('SELECT MAX(version) AS v FROM schema_migrations');
    return Number(r?.v ?? 0);
  }

  async health(): Promise<{ ok: boolean; message?: string }> {
    try {
      await this.c.all('SELECT 1 AS x');
      return { ok: true };
    } catch (err) {
      return { ok: false, message: err instanceof Error ? err.message : String(err) };
    }
  }

  close(): Promise<void> {
    return this.#driver.close();
  }
}
