/**
 * Traffic analytics over HTTP. Gateways in mode pro send their records to
 * `POST /system/analytics` (node secret), as columns or as records (`ingest`); the dashboard rolls them up (rollup.ts) and adds them
 * to its store. Users read them with `GET /api/analytics/traffic` (the `analytics` permission,
 * their own organisation only): totals, a time series, per API, refusals by reason, top keys and
 * top endpoints of a time range. Rows older than their period's retention are deleted every few
 * minutes.
 */
import { ANALYTICS_COLUMNS_TYPE, readAnalyticsColumnRecords } from '../../schemas/rules/analytics-batch.ts';
import { readAnalyticsRecord, type AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import {
  callerOf,
  json,
  ok,
  Refusal,
  timeParam,
  type Ctx,
  type DashboardDeps,
  type Reply,
} from '../api/http.ts';
import { addSums, emptySums, PERIODS, quantile, rollUp, type Period, type Sums } from './rollup.ts';
import type { Group, RangeQuery } from './store.ts';

/** Records in one batch at most (a gateway sends 1000). */
export const MAX_BATCH = 5000;
/** The longest range read per minute, and in all. */
const MAX_MINUTE_RANGE_MS = 48 * 3_600_000;
const MAX_RANGE_MS = 400 * 24 * 3_600_000;
/** Ranges up to this are read per minute unless `resolution` says otherwise. */
const AUTO_MINUTE_MS = 6 * 3_600_000;
/** Groups in each top list. */
const TOP = 10;
const PRUNE_EVERY_MS = 5 * 60_000;

/**
 * `POST /system/analytics`: rolls the records of a batch from the gateway's organisations
 * (`orgs`; empty: any) up and stores them. Answers how many were taken. The batch is columns
 * (schemas/rules/analytics-batch.ts) when its content type is
 * `application/vnd.svc.analytics-columns+json`, else the records format
 * `{"sample_rate": r, "records": [...]}` (of gateways older than columns); both are read into the
 * same records by the same rules (`readAnalyticsRecord`). The batch's rollup rows and its
 * detailed records go to the store in one transaction (one commit per batch).
 */
export async function ingest(
  deps: Pick<DashboardDeps, 'store'>,
  orgs: readonly string[],
  body: Record<string, unknown>,
  contentType = 'application/json',
): Promise<Reply> {
  let rate: unknown;
  let read: AnalyticsRecord[] | undefined;
  let raws: unknown[] = [];
  let skipped = 0;
  if (mediaType(contentType) === ANALYTICS_COLUMNS_TYPE) {
    const columns = readAnalyticsColumnRecords(body, MAX_BATCH);
    if ('problem' in columns) throw new Refusal(400, columns.problem);
    rate = columns.sample_rate;
    read = columns.records;
    skipped = columns.skipped;
  } else {
    if (!Array.isArray(body.records)) throw new Refusal(400, 'records: must be an array of records');
    rate = body.sample_rate;
    raws = body.records as unknown[];
  }
  if (rate === undefined) rate = 1;
  if (typeof rate !== 'number' || !(rate > 0 && rate <= 1))
    throw new Refusal(400, 'sample_rate: must be a number above 0 and at most 1');
  if (read === undefined) {
    if (raws.length > MAX_BATCH) throw new Refusal(400, `records: at most ${MAX_BATCH} records per batch`);
    read = [];
    for (const raw of raws) {
      const r = readAnalyticsRecord(raw);
      if (r === undefined) skipped++;
      else read.push(r);
    }
  }
  const taken = orgs.length === 0 ? read : read.filter((r) => orgs.includes(r.org_id));
  skipped += read.length - taken.length;
  // The rollup rows and the detailed records of the batch, in one transaction.
  await deps.store.analytics.add(rollUp(taken, 1 / rate), taken);
  return ok('Analytics recorded', { accepted: taken.length, skipped });
}

/** The media type of a Content-Type header, lower-cased, without its parameters. */
function mediaType(contentType: string): string {
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** Deletes rollups older than the retention settings now and every few minutes; returns the stop. */
export function pruneAnalytics(deps: DashboardDeps): () => void {
  const run = (): void => {
    const now = deps.now();
    const cfg = deps.config;
    Promise.all([
      deps.store.analytics.prune('minute', now - cfg.analytics_minute_retention_hours * 3_600_000),
      deps.store.analytics.prune('hour', now - cfg.analytics_hour_retention_days * 24 * 3_600_000),
    ]).then(
      ([m, h]) => {
        if (m + h > 0) deps.log.info('analytics pruned', { minute_rows: m, hour_rows: h });
      },
      (err: unknown) => {
        deps.log.warn('analytics prune failed', { error: err instanceof Error ? err.message : String(err) });
      },
    );
  };
  run();
  const timer = setInterval(run, PRUNE_EVERY_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}

function rounded(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The figures of a group of rows as the API shows them. */
function figures(s: Sums): Record<string, number> {
  return {
    requests: Math.round(s.requests),
    errors: Math.round(s.errors),
    latency_avg_ms: s.requests === 0 ? 0 : rounded(s.latency_ms / s.requests),
    latency_p50_ms: quantile(s.hist, 0.5),
    latency_p95_ms: quantile(s.hist, 0.95),
    latency_p99_ms: quantile(s.hist, 0.99),
    upstream_avg_ms: s.requests === 0 ? 0 : rounded(s.upstream_ms / s.requests),
    request_bytes: Math.round(s.request_bytes),
    response_bytes: Math.round(s.response_bytes),
  };
}

/** The sums of all the groups. */
function total(groups: readonly Group[]): Sums {
  const out = emptySums();
  for (const g of groups) addSums(out, g);
  return out;
}

/**
 * `GET /api/analytics/traffic?from=&to=&api_id=&key=&resolution=minute|hour`: the caller's
 * organisation's traffic in [from, to) (default: the last hour), per minute up to 6 hours and per
 * hour beyond unless `resolution` says otherwise; with `key` (a key's ID, as `top_keys` names it)
 * the totals and the series are that key's.
 */
export async function traffic(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const now = c.deps.now();
  const to = timeParam(c, 'to', now);
  const from = timeParam(c, 'from', to - 3_600_000);
  if (from >= to) throw new Refusal(400, 'from: must be before to');
  if (to - from > MAX_RANGE_MS) throw new Refusal(400, 'from: the range may cover at most 400 days');
  const res = c.url.searchParams.get('resolution');
  if (res !== null && res !== '' && res !== 'minute' && res !== 'hour')
    throw new Refusal(400, 'resolution: must be minute or hour');
  const period: Period =
    res === 'minute' || res === 'hour' ? res : to - from <= AUTO_MINUTE_MS ? 'minute' : 'hour';
  if (period === 'minute' && to - from > MAX_MINUTE_RANGE_MS)
    throw new Refusal(400, 'resolution: minute covers at most 48 hours: use hour');
  const apiId = c.url.searchParams.get('api_id') ?? '';
  const key = c.url.searchParams.get('key') ?? '';
  const step = PERIODS[period];
  const q: RangeQuery = {
    org: caller.org,
    period,
    from: Math.floor(from / step) * step,
    to,
    apiId: apiId === '' ? undefined : apiId,
  };
  const a = c.deps.store.analytics;
  // One key: its series and totals from its own rows; the rankings stay those of the range.
  const one = key === '' ? undefined : { ...q, name: key };
  const [series, apis, reasons, keys, endpoints, ofKey] = await Promise.all([
    one === undefined ? a.sum(q, 'api', 'at') : a.sum(one, 'key', 'at'),
    a.sum(q, 'api', 'api'),
    a.sum(q, 'reason', 'name'),
    a.sum(q, 'key', 'name', TOP),
    a.sum(q, 'endpoint', 'name', TOP),
    one === undefined ? Promise.resolve(undefined) : a.sum(one, 'key', 'name'),
  ]);
  return json({
    org_id: caller.org,
    from: q.from,
    to,
    resolution: period,
    step_ms: step,
    api_id: apiId === '' ? null : apiId,
    key: key === '' ? null : key,
    totals: figures(total(ofKey ?? apis)),
    series: series.map((g) => ({ at: g.at, ...figures(g) })),
    apis: apis.map((g) => ({ api_id: g.api_id, ...figures(g) })),
    refusals: reasons.map((g) => ({ reason: g.name, requests: Math.round(g.requests) })),
    top_keys: keys.map((g) => ({ key: g.name, alias: g.label, ...figures(g) })),
    top_endpoints: endpoints.map((g) => ({ api_id: g.api_id, endpoint: g.name, ...figures(g) })),
  });
}
