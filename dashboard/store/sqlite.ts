/**
 * The embedded store: one SQLite file under the data directory, through Node's built-in
 * node:sqlite (no native addon). WAL with `synchronous=FULL`: a committed write is on disk before
 * it is acknowledged. Traffic analytics' batches are the exception (relaxed transactions): they
 * commit with `synchronous=NORMAL` (no `fsync`; atomic and consistent all the same) and a
 * checkpoint puts them on disk at most RELAXED_SYNC_MS later, so a power cut loses at most about
 * the last second of analytics, and never a write of users, keys or other documents, whose
 * `fsync` also makes every analytics commit before them durable
 * (docs/design/analytics-durability.md). node:sqlite is synchronous and has one connection, so
 * every operation (a whole transaction included) takes its turn in one queue: a read never sees
 * a transaction that has not committed. Statements are prepared once per SQL text and reused.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { Migration } from './migrations.ts';
import { SqlStore, type Row, type SqlConn, type SqlDriver } from './sql.ts';

/** The file name of the database under the data directory. */
export const SQLITE_FILE = 'dashboard.sqlite';

/** A relaxed commit is on disk at most this long after it returned (a checkpoint then). */
export const RELAXED_SYNC_MS = 1000;

/** Prepared statements kept at most (the store's SQL texts are a few dozen). */
const STATEMENTS = 256;

class SqliteDriver implements SqlDriver {
  readonly kind = 'sqlite' as const;
  readonly conn: SqlConn;
  readonly #db: DatabaseSync;
  #queue: Promise<unknown> = Promise.resolve();
  /** Prepared statements by SQL text: preparing one costs more than running it. */
  readonly #statements = new Map<string, StatementSync>();
  /** The checkpoint due after relaxed commits not yet on disk. */
  #sync: NodeJS.Timeout | undefined;

  constructor(file: string) {
    this.#db = new DatabaseSync(file);
    this.#db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000');
    const direct = this.#direct();
    this.conn = {
      all: (sql, params) => this.#turn(() => direct.all(sql, params)),
      run: (sql, params) => this.#turn(() => direct.run(sql, params)),
    };
  }

  /** Statements run at once, for the holder of the queue's turn. */
  #direct(): SqlConn {
    const values = (params: readonly unknown[] | undefined): SQLInputValue[] =>
      (params ?? []) as SQLInputValue[];
    return {
      all: (sql, params) => Promise.resolve(this.#statement(sql).all(...values(params)) as Row[]),
      run: (sql, params) => Promise.resolve(Number(this.#statement(sql).run(...values(params)).changes)),
    };
  }

  /** The prepared statement of `sql`, prepared at its first use. */
  #statement(sql: string): StatementSync {
    let st = this.#statements.get(sql);
    if (st === undefined) {
      st = this.#db.prepare(sql);
      if (this.#statements.size >= STATEMENTS) this.#statements.clear();
      this.#statements.set(sql, st);
    }
    return st;
  }

  /** Runs `fn` when every operation queued before it has finished. */
  #turn<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  transaction<T>(
    _scope: string,
    fn: (conn: SqlConn) => Promise<T>,
    opts: { relaxed?: boolean } = {},
  ): Promise<T> {
    const relaxed = opts.relaxed === true;
    return this.#turn(async () => {
      // The setting is the connection's, read at commit: NORMAL for this transaction only.
      if (relaxed) this.#db.exec('PRAGMA synchronous = NORMAL');
      try {
        this.#db.exec('BEGIN IMMEDIATE');
        try {
          const out = await fn(this.#direct());
          this.#db.exec('COMMIT');
          return out;
        } catch (err) {
          this.#db.exec('ROLLBACK');
          throw err;
        }
      } finally {
        if (relaxed) {
          this.#db.exec('PRAGMA synchronous = FULL');
          this.#syncSoon();
        }
      }
    });
  }

  /**
   * Puts relaxed commits on disk within RELAXED_SYNC_MS: a passive checkpoint (in the queue's
   * turn) syncs the WAL, then copies it into the database file and syncs that. A commit that is
   * not relaxed syncs the WAL too, relaxed commits before it included.
   */
  #syncSoon(): void {
    if (this.#sync !== undefined) return;
    this.#sync = setTimeout(() => {
      void this.#turn(() => {
        this.#sync = undefined;
        if (this.#db.isOpen) this.#db.exec('PRAGMA wal_checkpoint(PASSIVE)');
        return Promise.resolve();
      }).catch(() => undefined);
    }, RELAXED_SYNC_MS);
    // A dashboard that stops closes the database, which checkpoints it.
    this.#sync.unref();
  }

  migrationTransaction<T>(fn: (conn: SqlConn) => Promise<T>): Promise<T> {
    return this.transaction('', fn);
  }

  statementsOf(m: Migration): readonly string[] {
    return m.sqlite;
  }

  close(): Promise<void> {
    return this.#turn(() => {
      clearTimeout(this.#sync);
      this.#sync = undefined;
      this.#statements.clear();
      if (this.#db.isOpen) this.#db.close();
      return Promise.resolve();
    });
  }
}

/** Opens (creating when missing) `<dataDir>/dashboard.sqlite` and migrates it. */
export function openSqliteStore(dataDir: string, opts: { now?: () => number } = {}): Promise<SqlStore> {
  mkdirSync(dataDir, { recursive: true });
  return SqlStore.open(new SqliteDriver(join(dataDir, SQLITE_FILE)), opts);
}
