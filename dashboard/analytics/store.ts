/**
 * The rollup table (rollup.ts) in the dashboard's database, the same SQL on SQLite and
 * PostgreSQL: rows are added to (`INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x`, so
 * batches from many gateways and dashboards add up without reading first), read summed over a
 * range, and deleted once older than their period's retention.
 */
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import { insertDetails, SqlDetails, type DetailStore } from './details-store.ts';
import { whereOf } from './where.ts';
import { BUCKETS, emptySums, type Dim, type Period, type RollupRow, type Sums } from './rollup.ts';

/** A connection as the store's drivers give one (store/sql.ts's SqlConn). */
interface Conn {
  all(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

/** Sums of a group of rows: its name (and API, label) and its sums. */
export interface Group extends Sums {
  api_id: string;
  name: string;
  label: string;
  /** Start of the period (series only). */
  at: number;
}

/** What a read covers. */
export interface RangeQuery {
  org: string;
  period: Period;
  /** Inclusive start and exclusive end, milliseconds since the epoch. */
  from: number;
  to: number;
  /** One API only. */
  apiId?: string | undefined;
  /** One name only (a key's ID, for the series of one key). */
  name?: string | undefined;
}

/** Analytics in the store. */
export interface AnalyticsStore {
  /**
   * Adds rollup rows, and the detailed records of the same batch (those with a `detail`), in one
   * transaction: one commit per batch. Its commit is relaxed (store/sql.ts `SqlDriver`): a power
   * cut (or a crash of the database server) may lose the batches of about the last second.
   */
  add(rows: readonly RollupRow[], detailed?: readonly AnalyticsRecord[]): Promise<void>;
  /**
   * Rows of `dim` in the range, summed per group: `at` (a time series of the `api` rows), `api`
   * (per API), `name` (per key, endpoint or reason), largest first, at most `limit` groups.
   */
  sum(q: RangeQuery, dim: Dim, by: 'at' | 'api' | 'name', limit?: number): Promise<Group[]>;
  /** Deletes the rows of `period` that start before `before`; returns how many. */
  prune(period: Period, before: number): Promise<number>;
  /** The detailed records (bodies) of APIs with `enable_detailed_recording`. */
  readonly details: DetailStore;
}

const HIST = Array.from({ length: BUCKETS }, (_, i) => `h${i}`);
const SUMMED = [
  'requests',
  'errors',
  'latency_ms',
  'upstream_ms',
  'request_bytes',
  'response_bytes',
  ...HIST,
];
const KEY = ['org_id', 'period', 'dim', 'at', 'api_id', 'name'];

/** The migration's statements (store/migrations.ts, version 2); the same in both dialects. */
export const ANALYTICS_TABLES: readonly string[] = [
  `CREATE TABLE analytics_rollups (
     org_id TEXT NOT NULL,
     period TEXT NOT NULL,
     dim TEXT NOT NULL,
     at BIGINT NOT NULL,
     api_id TEXT NOT NULL,
     name TEXT NOT NULL,
     label TEXT NOT NULL,
     ${SUMMED.map((c) => `${c} DOUBLE PRECISION NOT NULL`).join(',\n     ')},
     PRIMARY KEY (${KEY.join(', ')}))`,
  `CREATE INDEX analytics_rollups_age ON analytics_rollups (period, at)`,
];

const COLUMNS = [...KEY, 'label', ...SUMMED];
/** Rows per INSERT statement. */
const CHUNK = 40;

const insertSqlOf = (n: number): string =>
  `INSERT INTO analytics_rollups (${COLUMNS.join(', ')}) VALUES ${Array.from(
    { length: n },
    () => `(${COLUMNS.map(() => '?').join(', ')})`,
  ).join(', ')}
   ON CONFLICT (${KEY.join(', ')}) DO UPDATE SET
   label = CASE WHEN excluded.label <> '' THEN excluded.label ELSE analytics_rollups.label END,
   ${SUMMED.map((c) => `${c} = analytics_rollups.${c} + excluded.${c}`).join(', ')}`;

/** The INSERT of n rows, built once per n (the same text each time: a driver reuses its statement). */
const INSERT_SQL = Array.from({ length: CHUNK + 1 }, (_, n) => (n === 0 ? '' : insertSqlOf(n)));

function valuesOf(r: RollupRow): unknown[] {
  return [
    r.org_id,
    r.period,
    r.dim,
    r.at,
    r.api_id,
    r.name,
    r.label,
    r.requests,
    r.errors,
    r.latency_ms,
    r.upstream_ms,
    r.request_bytes,
    r.response_bytes,
    ...r.hist,
  ];
}

function groupOf(r: Record<string, unknown>): Group {
  const s = emptySums();
  s.requests = Number(r.requests);
  s.errors = Number(r.errors);
  s.latency_ms = Number(r.latency_ms);
  s.upstream_ms = Number(r.upstream_ms);
  s.request_bytes = Number(r.request_bytes);
  s.response_bytes = Number(r.response_bytes);
  s.hist = HIST.map((h) => Number(r[h]));
  return {
    ...s,
    api_id: typeof r.api_id === 'string' ? r.api_id : '',
    name: typeof r.name === 'string' ? r.name : '',
    label: typeof r.label === 'string' ? r.label : '',
    at: r.at === undefined ? 0 : Number(r.at),
  };
}

/** The analytics of a SQL store, over its connection and its transactions. */
export class SqlAnalytics implements AnalyticsStore {
  readonly #conn: Conn;
  readonly #transaction: <T>(fn: (c: Conn) => Promise<T>) => Promise<T>;
  readonly details: DetailStore;

  constructor(conn: Conn, transaction: <T>(fn: (c: Conn) => Promise<T>) => Promise<T>) {
    this.#conn = conn;
    this.details = new SqlDetails(conn);
    this.#transaction = transaction;
  }

  async add(rows: readonly RollupRow[], detailed: readonly AnalyticsRecord[] = []): Promise<void> {
    const details = detailed.filter((r) => r.detail !== undefined);
    if (rows.length === 0 && details.length === 0) return;
    // Rows in a fixed order, so that two transactions adding to the same rows lock them in the
    // same order (PostgreSQL) and never deadlock.
    const sorted = rows
      .map((r) => [keyOf(r), r] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([, r]) => r);
    await this.#transaction(async (c) => {
      for (let i = 0; i < sorted.length; i += CHUNK) {
        const chunk = sorted.slice(i, i + CHUNK);
        await c.run(INSERT_SQL[chunk.length] ?? insertSqlOf(chunk.length), chunk.flatMap(valuesOf));
      }
      await insertDetails(c, details);
    });
  }

  async sum(q: RangeQuery, dim: Dim, by: 'at' | 'api' | 'name', limit?: number): Promise<Group[]> {
    const { where, params } = whereOf([
      ['org_id = ?', q.org],
      ['period = ?', q.period],
      ['dim = ?', dim],
      ['at >= ?', q.from],
      ['at < ?', q.to],
      ['api_id = ?', q.apiId],
      ['name = ?', q.name],
    ]);
    const group = by === 'at' ? 'at' : by === 'api' ? 'api_id' : dim === 'endpoint' ? 'api_id, name' : 'name';
    const order = by === 'at' ? 'at' : `SUM(requests) DESC, ${group}`;
    const sums = SUMMED.map((c) => `SUM(${c}) AS ${c}`).join(', ');
    const sql = `SELECT ${group}, MAX(label) AS label, ${sums} FROM analytics_rollups WHERE ${where} GROUP BY ${group} ORDER BY ${order}${limit === undefined ? '' : ' LIMIT ?'}`;
    if (limit !== undefined) params.push(limit);
    return (await this.#conn.all(sql, params)).map(groupOf);
  }

  prune(period: Period, before: number): Promise<number> {
    return this.#conn.run('DELETE FROM analytics_rollups WHERE period = ? AND at < ?', [period, before]);
  }
}

function keyOf(r: RollupRow): string {
  return `${r.org_id}\n${r.period}\n${r.dim}\n${String(r.at).padStart(15, '0')}\n${r.api_id}\n${r.name}`;
}
