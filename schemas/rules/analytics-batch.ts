/**
 * The compact wire format of a batch of analytics records (`POST /system/analytics` with
 * `content-type: application/vnd.svc.analytics-columns+json`), written by the gateway
 * (gateway/analytics/record-buffer.ts) and read by the dashboard (dashboard/analytics/api.ts)
 * into the one record model of analytics.ts. A batch is a JSON object of columns, one array per
 * field with one entry per record, and every string of the batch (organisation, API, version,
 * key, alias, method, path template, refusal) is written once in `strings` and named by its
 * index: a batch of 1000 records of one API and key is about 40 bytes a record, against about
 * 340 in the records format (`{"sample_rate": r, "records": [{...}, ...]}`, which the dashboard
 * still takes from older gateways), and costs the gateway and the dashboard a fraction of its
 * `JSON.stringify` and `JSON.parse`.
 *
 * ```
 * {"sample_rate": 1, "count": 2, "strings": ["o1", "a1", "", "GET", "/a1/users/{id}"],
 *  "time_base": 1700000000000, "time": [0, 3],
 *  "org_id": [0, 0], "api_id": [1, 1], "api_version": [2, 2], "key": [2, 2], "alias": [2, 2],
 *  "method": [3, 3], "path": [4, 4], "refusal": [2, 2], "status": [200, 200],
 *  "latency_us": [1234, 980], "upstream_latency_us": [1001, 800],
 *  "request_bytes": [0, 0], "response_bytes": [2, 2], "details": [[1, {...}]]}
 * ```
 *
 * `time` is milliseconds after `time_base`; latencies are whole microseconds (the records format
 * has milliseconds to three decimals, the same precision); `details` (optional) pairs a record's
 * index with its detail (analytics-detail.ts). A record whose fields do not read (an index out of
 * `strings`, a number that is not one) is read by the same rules as in the records format
 * (`readAnalyticsRecord`): skipped when its time, organisation, API or status is missing, the
 * field empty (or 0) otherwise.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { readAnalyticsDetail, type AnalyticsDetail } from './analytics-detail.ts';
import { FIELD_RULES, readAnalyticsRecord, type AnalyticsRecord } from './analytics.ts';

/** The content type of a batch of columns. */
export const ANALYTICS_COLUMNS_TYPE = 'application/vnd.svc.analytics-columns+json';

/** The string columns, in the order of the writer's per-column caches. */
const STRING_COLUMNS = [
  'org_id',
  'api_id',
  'api_version',
  'key',
  'alias',
  'method',
  'path',
  'refusal',
] as const;
/** The number columns (besides `time`). */
const NUMBER_COLUMNS = [
  'status',
  'latency_us',
  'upstream_latency_us',
  'request_bytes',
  'response_bytes',
] as const;

type StringColumn = (typeof STRING_COLUMNS)[number];
type NumberColumn = (typeof NUMBER_COLUMNS)[number];

/** A batch of columns as sent (see the module comment). */
export type AnalyticsColumns = {
  sample_rate: number;
  count: number;
  strings: string[];
  time_base: number;
  time: number[];
  details?: [number, AnalyticsDetail][];
} & Record<StringColumn | NumberColumn, number[]>;

/**
 * Writes records into the columns of one batch, one `add` per record; `batch` gives them. No
 * object per record: numbers are pushed on arrays, and a string already in the batch costs one
 * comparison with the column's previous value (or, when it changed, one map lookup).
 */
export class AnalyticsColumnsWriter {
  readonly #strings: string[] = [];
  readonly #index = new Map<string, number>();
  /** Per string column: its previous value and that value's index. */
  readonly #lastValue: string[] = STRING_COLUMNS.map(() => '\u0000');
  readonly #lastIndex: number[] = STRING_COLUMNS.map(() => 0);
  readonly #columns: Record<StringColumn | NumberColumn, number[]> & { time: number[] };
  #details: [number, AnalyticsDetail][] | undefined;
  #timeBase = NaN;
  #count = 0;

  constructor() {
    const columns: Record<string, number[]> = { time: [] };
    for (const c of STRING_COLUMNS) columns[c] = [];
    for (const c of NUMBER_COLUMNS) columns[c] = [];
    this.#columns = columns as Record<StringColumn | NumberColumn, number[]> & { time: number[] };
  }

  /** Records written. */
  get count(): number {
    return this.#count;
  }

  /** The index of `s` in `strings` (column `c` of STRING_COLUMNS). */
  #code(c: number, s: string): number {
    if (this.#lastValue[c] === s) return this.#lastIndex[c] ?? 0;
    let i = this.#index.get(s);
    if (i === undefined) {
      i = this.#strings.length;
      this.#strings.push(s);
      this.#index.set(s, i);
    }
    this.#lastValue[c] = s;
    this.#lastIndex[c] = i;
    return i;
  }

  /**
   * Writes one record (the fields of `AnalyticsRecord`, in its order; latencies in milliseconds,
   * written as whole microseconds).
   */
  add(
    time: number,
    orgId: string,
    apiId: string,
    apiVersion: string,
    key: string,
    alias: string,
    method: string,
    path: string,
    status: number,
    latencyMs: number,
    upstreamLatencyMs: number,
    requestBytes: number,
    responseBytes: number,
    refusal: string,
    detail: AnalyticsDetail | undefined,
  ): void {
    const c = this.#columns;
    if (this.#count === 0) this.#timeBase = time;
    c.time.push(time - this.#timeBase);
    c.org_id.push(this.#code(0, orgId));
    c.api_id.push(this.#code(1, apiId));
    c.api_version.push(this.#code(2, apiVersion));
    c.key.push(this.#code(3, key));
    c.alias.push(this.#code(4, alias));
    c.method.push(this.#code(5, method));
    c.path.push(this.#code(6, path));
    c.refusal.push(this.#code(7, refusal));
    c.status.push(status);
    c.latency_us.push(Math.round(latencyMs * 1000));
    c.upstream_latency_us.push(Math.round(upstreamLatencyMs * 1000));
    c.request_bytes.push(requestBytes);
    c.response_bytes.push(responseBytes);
    if (detail !== undefined) (this.#details ??= []).push([this.#count, detail]);
    this.#count++;
  }

  /** The batch written so far, sent at `sampleRate`. */
  batch(sampleRate: number): AnalyticsColumns {
    return {
      sample_rate: sampleRate,
      count: this.#count,
      strings: this.#strings,
      time_base: this.#count === 0 ? 0 : this.#timeBase,
      ...this.#columns,
      ...(this.#details === undefined ? {} : { details: this.#details }),
    };
  }
}

/** A batch of records as the records format holds them, for the rules of `readAnalyticsRecord`. */
export interface ColumnsRead {
  sample_rate: unknown;
  /** Each record with its fields, as a record of the records format would have them. */
  records: Record<string, unknown>[];
}

/** The columns of a batch, checked for their shape (each an array of `count` entries). */
interface Columns {
  count: number;
  strings: unknown[];
  timeBase: number;
  time: unknown[];
  /** STRING_COLUMNS' arrays, in their order. */
  strs: [unknown[], unknown[], unknown[], unknown[], unknown[], unknown[], unknown[], unknown[]];
  /** NUMBER_COLUMNS' arrays, in their order. */
  nums: [unknown[], unknown[], unknown[], unknown[], unknown[]];
}

/**
 * The columns of `body`, or why it is not a batch of columns: a count that is not a whole number
 * from 0 to `maxCount`, a column that is not an array of `count` entries, `strings` that is not
 * an array.
 */
function columnsOf(body: Record<string, unknown>, maxCount: number): Columns | { problem: string } {
  const count = body.count;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0)
    return { problem: 'count: must be the number of records of the batch' };
  if (count > maxCount) return { problem: `count: at most ${String(maxCount)} records per batch` };
  const strings = body.strings;
  if (!Array.isArray(strings)) return { problem: 'strings: must be an array of strings' };
  const timeBase = typeof body.time_base === 'number' ? body.time_base : NaN;
  const column = (name: string): unknown[] | string => {
    const v = body[name];
    return Array.isArray(v) && v.length === count
      ? v
      : `${name}: must be an array of ${String(count)} entries`;
  };
  const time = column('time');
  if (typeof time === 'string') return { problem: time };
  const strs: unknown[][] = [];
  for (const name of STRING_COLUMNS) {
    const c = column(name);
    if (typeof c === 'string') return { problem: c };
    strs.push(c);
  }
  const nums: unknown[][] = [];
  for (const name of NUMBER_COLUMNS) {
    const c = column(name);
    if (typeof c === 'string') return { problem: c };
    nums.push(c);
  }
  return {
    count,
    strings: strings as unknown[],
    timeBase,
    time,
    strs: strs as Columns['strs'],
    nums: nums as Columns['nums'],
  };
}

/** The detail of each record that has one (`details`: pairs of a record's index and its detail). */
function detailsOf(body: Record<string, unknown>, count: number): Map<number, Record<string, unknown>> {
  const out = new Map<number, Record<string, unknown>>();
  if (!Array.isArray(body.details)) return out;
  for (const d of body.details as unknown[]) {
    if (!Array.isArray(d) || d.length !== 2) continue;
    const [k, detail] = d as [unknown, unknown];
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 0 || k >= count || !isPlainObject(detail))
      continue;
    out.set(k, detail);
  }
  return out;
}

/**
 * The records of a batch of columns, each a plain object with the fields of a record of the
 * records format (for `readAnalyticsRecord`, which checks each field), or why the batch is not
 * one (`columnsOf`). The dashboard reads batches with `readAnalyticsColumnRecords`, which gives
 * the same records for less; this is the plain form, for the gateway and the tests.
 */
export function readAnalyticsColumns(
  body: Record<string, unknown>,
  maxCount: number,
): ColumnsRead | { problem: string } {
  const cols = columnsOf(body, maxCount);
  if ('problem' in cols) return cols;
  const { count, strings, timeBase, time } = cols;
  const str = (col: unknown[], k: number): unknown => {
    const i = col[k];
    return typeof i === 'number' ? strings[i] : undefined;
  };
  const micros = (col: unknown[], k: number): unknown => {
    const v = col[k];
    return typeof v === 'number' ? v / 1000 : undefined;
  };
  const [org, api, version, key, alias, method, path, refusal] = cols.strs;
  const [status, latency, upstream, requestBytes, responseBytes] = cols.nums;
  const records = new Array<Record<string, unknown>>(count);
  for (let k = 0; k < count; k++) {
    const t = time[k];
    records[k] = {
      time: typeof t === 'number' ? timeBase + t : undefined,
      org_id: str(org, k),
      api_id: str(api, k),
      api_version: str(version, k),
      key: str(key, k),
      alias: str(alias, k),
      method: str(method, k),
      path: str(path, k),
      status: status[k],
      latency_ms: micros(latency, k),
      upstream_latency_ms: micros(upstream, k),
      request_bytes: requestBytes[k],
      response_bytes: responseBytes[k],
      refusal: str(refusal, k),
    };
  }
  for (const [k, detail] of detailsOf(body, count)) {
    const r = records[k];
    if (r !== undefined) r.detail = detail;
  }
  return { sample_rate: body.sample_rate, records };
}

/** The records of a batch of columns that read, and how many did not. */
export interface ColumnRecords {
  sample_rate: unknown;
  records: AnalyticsRecord[];
  skipped: number;
}

/**
 * The records of a batch of columns read by the rules of `readAnalyticsRecord` (FIELD_RULES),
 * those that do not read counted as skipped: the same records as `readAnalyticsColumns` then
 * `readAnalyticsRecord` give, for a fraction of their work (the dashboard's ingest, issue 34
 * item 5). Each string of the batch is read once per column, not once per record, and every
 * record of the batch refers to the same string values (so comparing two records' fields is
 * comparing references); no intermediate object per record.
 */
export function readAnalyticsColumnRecords(
  body: Record<string, unknown>,
  maxCount: number,
): ColumnRecords | { problem: string } {
  const cols = columnsOf(body, maxCount);
  if ('problem' in cols) return cols;
  const { count, strings, timeBase, time } = cols;
  const n = strings.length;
  /** A column's values read by `rule`, each string index read once (cache per column). */
  const reader = <T>(col: unknown[], rule: (v: unknown) => T): ((k: number) => T) => {
    const cache = new Array<T | undefined>(n);
    const done = new Uint8Array(n);
    return (k) => {
      const i = col[k];
      if (typeof i !== 'number') return rule(undefined);
      if (!Number.isInteger(i) || i < 0 || i >= n) return rule(strings[i]);
      if (done[i] === 1) return cache[i] as T;
      const v = rule(strings[i]);
      cache[i] = v;
      done[i] = 1;
      return v;
    };
  };
  const [org, api, version, key, alias, method, path, refusal] = cols.strs;
  const [status, latency, upstream, requestBytes, responseBytes] = cols.nums;
  const orgOf = reader(org, FIELD_RULES.id);
  const apiOf = reader(api, FIELD_RULES.id);
  const versionOf = reader(version, FIELD_RULES.name);
  const keyOf = reader(key, FIELD_RULES.name);
  const aliasOf = reader(alias, FIELD_RULES.name);
  const methodOf = reader(method, FIELD_RULES.method);
  const pathOf = reader(path, FIELD_RULES.path);
  const refusalOf = reader(refusal, FIELD_RULES.refusal);
  const num = FIELD_RULES.number;
  const micros = (v: unknown): number => (typeof v === 'number' ? (num(v / 1000) ?? 0) : 0);
  const details = detailsOf(body, count);
  const records: AnalyticsRecord[] = [];
  let skipped = 0;
  for (let k = 0; k < count; k++) {
    const t = time[k];
    const at = typeof t === 'number' ? num(timeBase + t) : undefined;
    const orgId = orgOf(k);
    const apiId = apiOf(k);
    const st = num(status[k]);
    if (at === undefined || orgId === undefined || apiId === undefined || st === undefined) {
      skipped++;
      continue;
    }
    const r: AnalyticsRecord = {
      time: at,
      org_id: orgId,
      api_id: apiId,
      api_version: versionOf(k),
      key: keyOf(k),
      alias: aliasOf(k),
      method: methodOf(k),
      path: pathOf(k),
      status: st,
      latency_ms: micros(latency[k]),
      upstream_latency_ms: micros(upstream[k]),
      request_bytes: num(requestBytes[k]) ?? 0,
      response_bytes: num(responseBytes[k]) ?? 0,
      refusal: refusalOf(k),
    };
    const detail = details.get(k);
    if (detail !== undefined) r.detail = readAnalyticsDetail(detail);
    records.push(r);
  }
  return { sample_rate: body.sample_rate, records, skipped };
}

/** The fields of a record, as `AnalyticsColumnsWriter.add` takes them (for tests and fallbacks). */
export function addRecord(w: AnalyticsColumnsWriter, r: AnalyticsRecord): void {
  w.add(
    r.time,
    r.org_id,
    r.api_id,
    r.api_version,
    r.key,
    r.alias,
    r.method,
    r.path,
    r.status,
    r.latency_ms,
    r.upstream_latency_ms,
    r.request_bytes,
    r.response_bytes,
    r.refusal,
    r.detail,
  );
}

/**
 * The records of a batch of columns, read by the rules of `readAnalyticsRecord` (those that do
 * not read left out); none when the batch is not one.
 */
export function recordsOfColumns(batch: AnalyticsColumns): AnalyticsRecord[] {
  const read = readAnalyticsColumns(batch, Infinity);
  if ('problem' in read) return [];
  const out: AnalyticsRecord[] = [];
  for (const raw of read.records) {
    const r = readAnalyticsRecord(raw);
    if (r !== undefined) out.push(r);
  }
  return out;
}
