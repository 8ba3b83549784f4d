/**
 * The table of detailed records (details.ts) in the dashboard's database, the same SQL on SQLite
 * and PostgreSQL but for the sequence column.
 */
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import { whereOf } from './where.ts';

/** A connection as the store's drivers give one (store/sql.ts's SqlConn). */
interface Conn {
  all(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

/** The migration's statements (store/migrations.ts, version 3); `seq` is the dialect's sequence. */
export const detailTables = (seq: string): string[] => [
  `CREATE TABLE analytics_details (
     seq ${seq},
     org_id TEXT NOT NULL,
     api_id TEXT NOT NULL,
     at BIGINT NOT NULL,
     record TEXT NOT NULL)`,
  `CREATE INDEX analytics_details_api ON analytics_details (org_id, api_id, seq)`,
  `CREATE INDEX analytics_details_age ON analytics_details (at)`,
];

/** A stored detailed record: the record as received, with its sequence number. */
export interface DetailRow {
  id: number;
  record: AnalyticsRecord;
}

/**
 * Which records a list reads: the organisation's in [from, to), at most `limit`, optionally of
 * one API and older than the record `before` (paging).
 */
export interface DetailQuery {
  org: string;
  apiId?: string;
  from: number;
  to: number;
  limit: number;
  before?: number;
}

/** Detailed records in the store. */
export interface DetailStore {
  /** Adds records (those with a `detail`). */
  add(records: readonly AnalyticsRecord[]): Promise<void>;
  /**
   * The organisation's records in [from, to), newest first, at most `limit`, optionally of one
   * API and older than the record `before` (paging).
   */
  list(q: DetailQuery): Promise<DetailRow[]>;
  /** Deletes records older than `before`, and each API's beyond its newest `max`; returns how many. */
  prune(before: number, max: number): Promise<number>;
}

/** Records per INSERT statement. */
const CHUNK = 50;

/** Inserts detailed records on `c` (a connection, or a transaction of analytics' batch). */
export async function insertDetails(c: Conn, records: readonly AnalyticsRecord[]): Promise<void> {
  for (let i = 0; i < records.length; i += CHUNK) {
    const chunk = records.slice(i, i + CHUNK);
    await c.run(
      `INSERT INTO analytics_details (org_id, api_id, at, record) VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}`,
      chunk.flatMap((r) => [r.org_id, r.api_id, Math.round(r.time), JSON.stringify(r)]),
    );
  }
}

/** The detailed records of a SQL store. */
export class SqlDetails implements DetailStore {
  readonly #conn: Conn;

  constructor(conn: Conn) {
    this.#conn = conn;
  }

  add(records: readonly AnalyticsRecord[]): Promise<void> {
    return insertDetails(this.#conn, records);
  }

  async list(q: DetailQuery): Promise<DetailRow[]> {
    const { where, params } = whereOf([
      ['org_id = ?', q.org],
      ['at >= ?', q.from],
      ['at < ?', q.to],
      ['api_id = ?', q.apiId],
      ['seq < ?', q.before],
    ]);
    params.push(q.limit);
    const rows = await this.#conn.all(
      `SELECT seq, record FROM analytics_details WHERE ${where} ORDER BY seq DESC LIMIT ?`,
      params,
    );
    return rows.map((r) => ({ id: Number(r.seq), record: JSON.parse(String(r.record)) as AnalyticsRecord }));
  }

  async prune(before: number, max: number): Promise<number> {
    let n = await this.#conn.run('DELETE FROM analytics_details WHERE at < ?', [before]);
    const apis = await this.#conn.all(
      'SELECT org_id, api_id FROM analytics_details GROUP BY org_id, api_id HAVING COUNT(*) > ?',
      [max],
    );
    for (const a of apis) {
      const [edge] = await this.#conn.all(
        'SELECT seq FROM analytics_details WHERE org_id = ? AND api_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?',
        [a.org_id, a.api_id, max],
      );
      if (edge === undefined) continue;
      n += await this.#conn.run(
        'DELETE FROM analytics_details WHERE org_id = ? AND api_id = ? AND seq <= ?',
        [a.org_id, a.api_id, Number(edge.seq)],
      );
    }
    return n;
  }
}
