/**
 * What the dashboard keeps of traffic: not the gateways' records, but their sums per minute and
 * per hour (a rollup), per API and, within an API, per key, per endpoint (method and path
 * template) and per refusal reason. A rollup row holds weighted counts (a sampled record counts
 * as the inverse of its sample rate), latency sums and a latency histogram on fixed bounds, so
 * percentiles of any range are read from summed histograms. Its size depends on time and on how
 * many keys and endpoints an API has, not on traffic: at most MAX_NAMES keys and endpoints per
 * API in one batch, the rest summed under OTHER.
 */
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';

/** Upper bounds (milliseconds) of the latency histogram's buckets; a last bucket holds the rest. */
export const LATENCY_BOUNDS_MS = [
  1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000,
  30000, 60000,
] as const;
/** Number of histogram buckets (one per bound, and the last). */
export const BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** The periods rolled up. */
export const PERIODS = { minute: 60_000, hour: 3_600_000 } as const;
/** One of PERIODS. */
export type Period = keyof typeof PERIODS;

/** Dimensions of a rollup row (`api`: the API as a whole, `name` empty). */
export const DIMS = ['api', 'key', 'endpoint', 'reason'] as const;
/** One of DIMS. */
export type Dim = (typeof DIMS)[number];

/** Keys or endpoints of one API in one batch beyond this are summed under OTHER. */
export const MAX_NAMES = 200;
/** The name of the rest. */
export const OTHER = '(other)';

/** The sums of one rollup row. */
export interface Sums {
  requests: number;
  errors: number;
  latency_ms: number;
  upstream_ms: number;
  request_bytes: number;
  response_bytes: number;
  /** BUCKETS counts. */
  hist: number[];
}

/** One rollup row: where it belongs and its sums. */
export interface RollupRow extends Sums {
  org_id: string;
  period: Period;
  /** Start of the period, milliseconds since the epoch. */
  at: number;
  api_id: string;
  dim: Dim;
  /** Key ID, `METHOD /path`, or refusal reason; `''` for `api`. */
  name: string;
  /** The key's alias (`key` rows), else `''`. */
  label: string;
}

/** The histogram bucket of a latency. */
export function bucketOf(ms: number): number {
  let b = 0;
  while (b < LATENCY_BOUNDS_MS.length && ms > (LATENCY_BOUNDS_MS[b] ?? Infinity)) b++;
  return b;
}

/** Empty sums. */
export function emptySums(): Sums {
  return {
    requests: 0,
    errors: 0,
    latency_ms: 0,
    upstream_ms: 0,
    request_bytes: 0,
    response_bytes: 0,
    hist: new Array<number>(BUCKETS).fill(0),
  };
}

/** Adds `b` into `a`. */
export function addSums(a: Sums, b: Sums): void {
  a.requests += b.requests;
  a.errors += b.errors;
  a.latency_ms += b.latency_ms;
  a.upstream_ms += b.upstream_ms;
  a.request_bytes += b.request_bytes;
  a.response_bytes += b.response_bytes;
  for (let i = 0; i < BUCKETS; i++) a.hist[i] = (a.hist[i] ?? 0) + (b.hist[i] ?? 0);
}

/**
 * The `p` quantile (0..1) of a histogram, in milliseconds: the upper bound of the bucket it
 * falls in (the last bucket reads as its lower bound); 0 for an empty histogram.
 */
export function quantile(hist: readonly number[], p: number): number {
  const total = hist.reduce((s, n) => s + n, 0);
  if (total === 0) return 0;
  const rank = p * total;
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i] ?? 0;
    if (seen >= rank && (hist[i] ?? 0) > 0)
      return LATENCY_BOUNDS_MS[i] ?? LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1] ?? 0;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1] ?? 0;
}

/** An error, for analytics: the client got 400 or more, or nothing (connection cut). */
export function isError(status: number): boolean {
  return status >= 400 || status === 0;
}

/** Adds one record, weighing `weight` requests, into sums (addSums of its sums, written out). */
function addRecord(row: Sums, r: AnalyticsRecord, weight: number, bucket: number, error: boolean): void {
  row.requests += weight;
  row.errors += error ? weight : 0;
  row.latency_ms += r.latency_ms * weight;
  row.upstream_ms += r.upstream_latency_ms * weight;
  row.request_bytes += r.request_bytes * weight;
  row.response_bytes += r.response_bytes * weight;
  row.hist[bucket] = (row.hist[bucket] ?? 0) + weight;
}

/**
 * The records of a batch that go to the same rollup rows (same organisation, API, key, alias,
 * method, path template, refusal and minute, hence hour), summed: a batch is mostly a few keys
 * and endpoints, so its records make a few cells, and rows are built per cell, not per record.
 */
interface Cell {
  /** The first record of the cell: its fields name the cell. */
  r: AnalyticsRecord;
  /** Start of the record's minute. */
  minute: number;
  /** Index of the cell's last record in the batch (the last alias of a key wins). */
  last: number;
  sums: Sums;
}

function sameCell(c: Cell, r: AnalyticsRecord, minute: number): boolean {
  const a = c.r;
  return (
    c.minute === minute &&
    a.api_id === r.api_id &&
    a.key === r.key &&
    a.path === r.path &&
    a.method === r.method &&
    a.org_id === r.org_id &&
    a.alias === r.alias &&
    a.refusal === r.refusal
  );
}

/**
 * A map keyed by a few strings joined with newlines, which strings may hold: each entry is kept
 * with its own fields and checked against them, so two keys joining alike never share an entry.
 */
class JoinedMap<V> {
  readonly #map = new Map<string, V[]>();

  find(id: string, same: (v: V) => boolean): V | undefined {
    const list = this.#map.get(id);
    if (list === undefined) return undefined;
    for (const v of list) if (same(v)) return v;
    return undefined;
  }

  add(id: string, v: V): void {
    const list = this.#map.get(id);
    if (list === undefined) this.#map.set(id, [v]);
    else list.push(v);
  }
}

/** Cells compared one by one before the map is looked up. */
const RECENT = 16;
const MINUTE = PERIODS.minute;
const HOUR = PERIODS.hour;

/**
 * The rollup rows of a batch of records, each weighing `weight` requests. Records are first
 * summed per cell (a record like the one before it, as most are, is added to its cell without
 * a lookup), then each cell's sums are added to its rows: per minute and per hour, of its API,
 * of its key, of its endpoint and of its refusal reason. The rows are those of adding each
 * record to its rows in turn (keys and endpoints beyond MAX_NAMES per API summed under OTHER in
 * the order they first appear; a key's label its last alias), but for the rounding of sums of
 * fractions, added in another order (issue 34 item 5: the ingest of a gateway's batches costs
 * the dashboard little).
 */
export function rollUp(records: readonly AnalyticsRecord[], weight: number): RollupRow[] {
  const cells = new JoinedMap<Cell>();
  const order: Cell[] = [];
  let previous: Cell | undefined;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (r === undefined) continue;
    const minute = Math.floor(r.time / MINUTE) * MINUTE;
    let cell = previous;
    if (cell === undefined || !sameCell(cell, r, minute)) {
      // The cells made last first (a batch's records take turns among a few endpoints), then
      // the map of all.
      cell = undefined;
      for (let j = order.length - 1; j >= 0 && j >= order.length - RECENT; j--) {
        const c = order[j];
        if (c !== undefined && sameCell(c, r, minute)) {
          cell = c;
          break;
        }
      }
      const id =
        cell === undefined
          ? `${r.org_id}\n${r.api_id}\n${r.key}\n${r.alias}\n${r.method}\n${r.path}\n${r.refusal}\n${String(minute)}`
          : '';
      cell ??= cells.find(id, (c) => sameCell(c, r, minute));
      if (cell === undefined) {
        cell = { r, minute, last: i, sums: emptySums() };
        cells.add(id, cell);
        order.push(cell);
      }
      previous = cell;
    }
    cell.last = i;
    addRecord(cell.sums, r, weight, bucketOf(r.latency_ms), isError(r.status));
  }
  return rowsOf(order);
}

/** The rows of cells, in the order the cells first appeared. */
function rowsOf(cells: readonly Cell[]): RollupRow[] {
  const rows = new JoinedMap<RollupRow>();
  const out: RollupRow[] = [];
  /** Per row, the index of the last record whose alias is its label. */
  const labelAt = new Map<RollupRow, number>();
  /** Distinct names per (org, api, dim) in this batch, to cap them at MAX_NAMES. */
  const names = new Map<string, Set<string>>();
  const capped = (org: string, api: string, dim: Dim, name: string): string => {
    if (dim === 'api' || dim === 'reason') return name;
    const k = `${org}\n${api}\n${dim}`;
    let seen = names.get(k);
    if (seen === undefined) {
      seen = new Set();
      names.set(k, seen);
    }
    if (seen.has(name)) return name;
    if (seen.size >= MAX_NAMES) return OTHER;
    seen.add(name);
    return name;
  };
  for (const cell of cells) {
    const r = cell.r;
    const targets: [Dim, string, string][] = [['api', '', '']];
    if (r.key !== '') targets.push(['key', r.key, r.alias]);
    targets.push(['endpoint', `${r.method} ${r.path}`, '']);
    if (r.refusal !== '') targets.push(['reason', r.refusal, '']);
    const named = targets.map(
      ([dim, raw, label]) => [dim, capped(r.org_id, r.api_id, dim, raw), label] as const,
    );
    for (const period of ['minute', 'hour'] as const) {
      const at = period === 'minute' ? cell.minute : Math.floor(cell.minute / HOUR) * HOUR;
      for (const [dim, name, label] of named) {
        const id = `${r.org_id}\n${period}\n${String(at)}\n${r.api_id}\n${dim}\n${name}`;
        const same = (row: RollupRow): boolean =>
          row.org_id === r.org_id &&
          row.period === period &&
          row.at === at &&
          row.api_id === r.api_id &&
          row.dim === dim &&
          row.name === name;
        let row = rows.find(id, same);
        if (row === undefined) {
          row = { org_id: r.org_id, period, at, api_id: r.api_id, dim, name, label: '', ...emptySums() };
          rows.add(id, row);
          out.push(row);
        }
        if (label !== '' && cell.last > (labelAt.get(row) ?? -1)) {
          row.label = label;
          labelAt.set(row, cell.last);
        }
        addSums(row, cell.sums);
      }
    }
  }
  return out;
}
