/**
 * The production store: PostgreSQL through `pg` (pure JavaScript). Writes of one organisation are
 * serialized by a transaction-scoped advisory lock on its ID, so checks made inside a write
 * (a slug in use) hold until the commit without serializable retries; migrations take a lock of
 * their own so that dashboards starting together apply each version once.
 */
import pg from 'pg';
import type { Migration } from './migrations.ts';
import { SqlStore, type Row, type SqlConn, type SqlDriver } from './sql.ts';

/** The advisory lock that serializes migrations (an arbitrary constant: "svcdb"). */
const MIGRATION_LOCK = 0x73766364;

/** `?` placeholders to `$1`, `$2`, ... (no query of the store has a `?` inside a literal). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

function connOf(client: pg.Pool | pg.PoolClient): SqlConn {
  return {
    all: async (sql, params) =>
      (await client.query<Row>(numbered(sql), params as unknown[] | undefined)).rows,
    run: async (sql, params) =>
      (await client.query(numbered(sql), params as unknown[] | undefined)).rowCount ?? 0,
  };
}

class PostgresDriver implements SqlDriver {
  readonly kind = 'postgres' as const;
  readonly conn: SqlConn;
  readonly #pool: pg.Pool;

  constructor(url: string) {
    this.#pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    this.#pool.on('error', () => undefined);
    this.conn = connOf(this.#pool);
  }

  async #inTransaction<T>(
    lock: (c: SqlConn) => Promise<void>,
    fn: (conn: SqlConn) => Promise<T>,
  ): Promise<T> {
    const client = await this.#pool.connect();
    const c = connOf(client);
    try {
      await client.query('BEGIN');
      await lock(c);
      const out = await fn(c);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  transaction<T>(
    scope: string,
    fn: (conn: SqlConn) => Promise<T>,
    opts: { relaxed?: boolean } = {},
  ): Promise<T> {
    return this.#inTransaction(async (c) => {
      // A relaxed commit does not wait for its WAL record to reach the disk: PostgreSQL's
      // asynchronous commit, for this transaction only; the WAL writer flushes it within
      // 3 x wal_writer_delay (600 ms by default), and a crash of the server loses at most that.
      if (opts.relaxed === true) await c.run('SET LOCAL synchronous_commit = off');
      await c.all('SELECT pg_advisory_xact_lock(hashtext(?)) AS locked', [scope]);
    }, fn);
  }

  migrationTransaction<T>(fn: (conn: SqlConn) => Promise<T>): Promise<T> {
    return this.#inTransaction(async (c) => {
      await c.all('SELECT pg_advisory_xact_lock(?) AS locked', [MIGRATION_LOCK]);
    }, fn);
  }

  statementsOf(m: Migration): readonly string[] {
    return m.postgres;
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}

/** Connects to the database of `url` and migrates it. */
export function openPostgresStore(url: string, opts: { now?: () => number } = {}): Promise<SqlStore> {
  return SqlStore.open(new PostgresDriver(url), opts);
}
