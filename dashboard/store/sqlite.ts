/**
 * The embedded store: one SQLite file under the data directory, through Node's built-in
 * node:sqlite (no native addon). WAL with `synchronous=FULL`: a committed write is on disk before
 * it is acknowledged. node:sqlite is synchronous and has one connection, so every operation
 * (a whole transaction included) takes its turn in one queue: a read never sees a transaction
 * that has not committed.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import type { Migration } from './migrations.ts';
import { SqlStore, type Row, type SqlConn, type SqlDriver } from './sql.ts';

/** The file name of the database under the data directory. */
export const SQLITE_FILE = 'dashboard.sqlite';

class SqliteDriver implements SqlDriver {
  readonly kind = 'sqlite' as const;
  readonly conn: SqlConn;
  readonly #db: DatabaseSync;
  #queue: Promise<unknown> = Promise.resolve();

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
      all: (sql, params) => Promise.resolve(this.#db.prepare(sql).all(...values(params)) as Row[]),
      run: (sql, params) => Promise.resolve(Number(this.#db.prepare(sql).run(...values(params)).changes)),
    };
  }

  /** Runs `fn` when every operation queued before it has finished. */
  #turn<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  transaction<T>(_scope: string, fn: (conn: SqlConn) => Promise<T>): Promise<T> {
    return this.#turn(async () => {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn(this.#direct());
        this.#db.exec('COMMIT');
        return out;
      } catch (err) {
        this.#db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  migrationTransaction<T>(fn: (conn: SqlConn) => Promise<T>): Promise<T> {
    return this.transaction('', fn);
  }

  statementsOf(m: Migration): readonly string[] {
    return m.sqlite;
  }

  close(): Promise<void> {
    return this.#turn(() => {
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
