/**
 * Detailed records: the analytics records of APIs with `enable_detailed_recording`, kept whole
 * (with their bodies, schemas/rules/analytics-detail.ts) as each API's request log, beside the
 * rollups. Bounded twice: records older than `analytics_detail_retention_hours` are deleted, and
 * an API keeps its newest `analytics_detail_max_records` at most (each body is at most
 * DETAIL_BODY_LIMIT bytes, so an API's log stays under max x 2 x that). Users read them with
 * `GET /api/analytics/requests` (the `analytics` permission, their own organisation only).
 * Their table: details-store.ts; they are stored with the rollups of their batch, in one
 * transaction (store.ts `add`).
 */
import { callerOf, json, Refusal, timeParam, type Ctx, type DashboardDeps, type Reply } from '../api/http.ts';

/** Records per page at most. */
const MAX_LIMIT = 200;
const DEFAULT_LIMIT = 50;

function intParam(c: Ctx, name: string): number | undefined {
  const raw = c.url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new Refusal(400, `${name}: must be a whole number`);
  return Number(raw);
}

/**
 * `GET /api/analytics/requests?api_id=&from=&to=&limit=&before=`: the caller's organisation's
 * detailed records (of APIs with `enable_detailed_recording`) in [from, to) (default: the last
 * day), newest first, `limit` per page (at most 200); `next_before` pages on (null: no more).
 */
export async function requests(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const now = c.deps.now();
  const to = timeParam(c, 'to', now + 1);
  const from = timeParam(c, 'from', to - 24 * 3_600_000);
  if (from >= to) throw new Refusal(400, 'from: must be before to');
  const limit = intParam(c, 'limit') ?? DEFAULT_LIMIT;
  if (limit < 1 || limit > MAX_LIMIT) throw new Refusal(400, `limit: must be from 1 to ${MAX_LIMIT}`);
  const before = intParam(c, 'before');
  const apiId = c.url.searchParams.get('api_id') ?? '';
  const rows = await c.deps.store.analytics.details.list({
    org: caller.org,
    ...(apiId === '' ? {} : { apiId }),
    from,
    to,
    limit,
    ...(before === undefined ? {} : { before }),
  });
  return json({
    org_id: caller.org,
    api_id: apiId === '' ? null : apiId,
    from,
    to,
    records: rows.map((r) => ({ id: r.id, ...r.record })),
    next_before: rows.length === limit ? (rows.at(-1)?.id ?? null) : null,
  });
}

/** Deletes detailed records past their retention now and every few minutes; returns the stop. */
export function pruneDetails(deps: DashboardDeps, everyMs = 5 * 60_000): () => void {
  const run = (): void => {
    const cfg = deps.config;
    deps.store.analytics.details
      .prune(deps.now() - cfg.analytics_detail_retention_hours * 3_600_000, cfg.analytics_detail_max_records)
      .then(
        (n) => {
          if (n > 0) deps.log.info('analytics details pruned', { records: n });
        },
        (err: unknown) => {
          deps.log.warn('analytics details prune failed', {
            error: err instanceof Error ? err.message : String(err),
          });
        },
      );
  };
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}
