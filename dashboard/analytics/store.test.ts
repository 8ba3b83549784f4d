/**
 * Analytics rollups on both storages: batches add up into the same rows (two batches, as from
 * two gateways), sums read per period, per API, per name and per organisation, the top lists are
 * bounded, and pruning deletes only what is older than a period's retention. The same batches
 * ingested as columns and as records give the same figures, their detailed records stored with
 * them; on SQLite, a batch's commit is in the database file within RELAXED_SYNC_MS.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sqliteFixture, storeFixtures } from '../testing/stores.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import {
  ANALYTICS_COLUMNS_TYPE,
  AnalyticsColumnsWriter,
  addRecord,
} from '../../schemas/rules/analytics-batch.ts';
import { recordedBody } from '../../schemas/rules/analytics-detail.ts';
import { RELAXED_SYNC_MS, SQLITE_FILE } from '../store/sqlite.ts';
import type { Store } from '../store/store.ts';
import { ingest } from './api.ts';
import { DIMS, MAX_NAMES, OTHER, quantile, rollUp } from './rollup.ts';

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 10, 0, 0);

const rec = (over: Partial<AnalyticsRecord>): AnalyticsRecord => ({
  time: T0,
  org_id: 'o1',
  api_id: 'a1',
  api_version: '',
  key: '',
  alias: '',
  method: 'GET',
  path: '/a1/x',
  status: 200,
  latency_ms: 4,
  upstream_latency_ms: 3,
  request_bytes: 0,
  response_bytes: 10,
  refusal: '',
  ...over,
});

for (const fx of storeFixtures()) {
  describe(`analytics on ${fx.name}`, () => {
    after(() => fx.stop());

    test('two batches add up; sums per minute, per API, per key and reason; scoped by organisation', async () => {
      const store = await fx.open(await fx.fresh());
      await store.analytics.add(
        rollUp(
          [
            rec({}),
            rec({ time: T0 + MIN, key: 'k1', alias: 'partner', status: 429, refusal: 'rate_limit' }),
            rec({ org_id: 'o2' }),
          ],
          1,
        ),
      );
      // The second batch was sampled at one in two: each record counts twice.
      await store.analytics.add(rollUp([rec({ key: 'k1', latency_ms: 250 })], 2));
      const q = { org: 'o1', period: 'minute' as const, from: T0, to: T0 + 10 * MIN };
      const series = await store.analytics.sum(q, 'api', 'at');
      assert.deepEqual(
        series.map((s) => [s.at, s.requests, s.errors]),
        [
          [T0, 3, 0],
          [T0 + MIN, 1, 1],
        ],
      );
      const api = (await store.analytics.sum(q, 'api', 'api')).at(0);
      assert.ok(api !== undefined);
      assert.equal(api.requests, 4);
      // Two requests took 4 ms, two 250 ms: percentiles read as the bounds of their buckets.
      assert.equal(quantile(api.hist, 0.5), 5);
      assert.equal(quantile(api.hist, 0.95), 300);
      const keys = await store.analytics.sum(q, 'key', 'name', 10);
      assert.deepEqual(
        keys.map((k) => [k.name, k.label, k.requests]),
        [['k1', 'partner', 3]],
      );
      const reasons = await store.analytics.sum(q, 'reason', 'name');
      assert.deepEqual(
        reasons.map((r) => [r.name, r.requests]),
        [['rate_limit', 1]],
      );
      const hours = await store.analytics.sum({ ...q, period: 'hour' }, 'api', 'at');
      assert.deepEqual(
        hours.map((s) => [s.at, s.requests]),
        [[T0, 4]],
      );
      const other = await store.analytics.sum({ ...q, org: 'o2' }, 'api', 'api');
      assert.equal(other[0]?.requests, 1);
      await store.close();
    });

    test('keys beyond the cap are summed as one; pruning deletes rows older than the retention', async () => {
      const store = await fx.open(await fx.fresh());
      const many = Array.from({ length: MAX_NAMES + 5 }, (_, i) => rec({ key: `k${String(i)}` }));
      await store.analytics.add(rollUp(many, 1));
      const q = { org: 'o1', period: 'minute' as const, from: T0, to: T0 + MIN };
      const top = await store.analytics.sum(q, 'key', 'name', 1000);
      assert.equal(top.length, MAX_NAMES + 1);
      assert.equal(top.find((k) => k.name === OTHER)?.requests, 5);
      assert.equal(await store.analytics.prune('minute', T0), 0);
      assert.ok((await store.analytics.prune('minute', T0 + MIN)) > 0);
      assert.deepEqual(await store.analytics.sum(q, 'api', 'at'), []);
      const hours = await store.analytics.sum({ ...q, period: 'hour', to: T0 + 60 * MIN }, 'api', 'at');
      assert.equal(hours[0]?.requests, MAX_NAMES + 5, 'the hour rows are kept');
      await store.close();
    });
  });
}

/** Batches of mixed traffic: endpoints taking turns, keys and aliases, refusals, a detailed record. */
function trafficBatches(): AnalyticsRecord[][] {
  const detail = {
    query: '',
    request: recordedBody(Buffer.from('{"in":1}'), 8, false),
    response: recordedBody(Buffer.from('ok'), 2, false),
  };
  return Array.from({ length: 6 }, (_, b) =>
    Array.from({ length: 700 }, (_, i) =>
      rec({
        time: T0 + b * 20_000 + i * 37.5,
        api_id: i % 5 === 0 ? 'a2' : 'a1',
        key: i % 7 === 0 ? '' : `k${String(i % 3)}`,
        alias: i % 7 === 0 ? '' : i % 3 === 1 ? 'partner' : '',
        method: i % 4 === 0 ? 'POST' : 'GET',
        path: `/a1/e${String(i % 4)}/{id}`,
        status: i % 11 === 0 ? 429 : i % 13 === 0 ? 500 : 200,
        refusal: i % 11 === 0 ? 'rate_limit' : '',
        latency_ms: (i % 90) * 1.337,
        upstream_latency_ms: (i % 50) * 0.5,
        request_bytes: i % 9,
        ...(b === 2 && i === 5 ? { detail } : {}),
      }),
    ),
  );
}

/** Every figure of the store for organisation o1 in the first hour: per period, dimension and grouping. */
async function figuresOf(store: Store): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const period of ['minute', 'hour'] as const) {
    const q = { org: 'o1', period, from: T0 - 3_600_000, to: T0 + 3 * 3_600_000 };
    for (const dim of DIMS)
      for (const by of ['at', 'api', 'name'] as const) {
        const groups = await store.analytics.sum(q, dim, by);
        // Sums of fractions round alike to a millionth (the order of additions differs).
        out.push(
          groups.map((g) => ({
            ...g,
            latency_ms: Math.round(g.latency_ms * 1e6),
            upstream_ms: Math.round(g.upstream_ms * 1e6),
          })),
        );
      }
  }
  return out;
}

for (const fx of storeFixtures()) {
  describe(`analytics ingest on ${fx.name}`, () => {
    after(() => fx.stop());

    test('the same batches as columns and as records: the same figures, and their detailed records stored', async () => {
      const asColumns = await fx.open(await fx.fresh());
      const asRecords = await fx.open(await fx.fresh());
      const batches = trafficBatches();
      for (const records of batches) {
        const w = new AnalyticsColumnsWriter();
        for (const r of records) addRecord(w, r);
        const columns = JSON.parse(JSON.stringify(w.batch(0.5))) as Record<string, unknown>;
        const reply = await ingest({ store: asColumns }, ['o1'], columns, ANALYTICS_COLUMNS_TYPE);
        assert.deepEqual((reply.body as { Meta: unknown }).Meta, { accepted: 700, skipped: 0 });
        const plain = JSON.parse(JSON.stringify({ sample_rate: 0.5, records })) as Record<string, unknown>;
        await ingest({ store: asRecords }, ['o1'], plain);
      }
      const figures = await figuresOf(asColumns);
      assert.deepEqual(figures, await figuresOf(asRecords));
      const [total] = await asColumns.analytics.sum(
        { org: 'o1', period: 'hour', from: T0 - 3_600_000, to: T0 + 3_600_000 },
        'api',
        'at',
      );
      assert.equal(total?.requests, 2 * 6 * 700, 'each record at a sample rate of 0.5 counts twice');
      for (const store of [asColumns, asRecords]) {
        const stored = await store.analytics.details.list({
          org: 'o1',
          from: T0,
          to: T0 + 3_600_000,
          limit: 10,
        });
        assert.deepEqual(
          stored.map((d) => [d.record.time, d.record.detail?.request.body]),
          [[T0 + 40_000 + 5 * 37.5, '{"in":1}']],
        );
      }
      await asColumns.close();
      await asRecords.close();
    });
  });
}

test('analytics on sqlite: a batch is in the database file, not only its WAL, within RELAXED_SYNC_MS', async () => {
  const fx = sqliteFixture();
  const dir = await fx.fresh();
  const store = await fx.open(dir);
  const copies = mkdtempSync(join(tmpdir(), 'svc-analytics-file-'));
  /** Requests in the rows of the database file alone (a copy of it without its WAL). */
  const inFile = (n: number): number => {
    const copy = join(copies, `c${String(n)}.sqlite`);
    copyFileSync(join(dir, SQLITE_FILE), copy);
    const db = new DatabaseSync(copy, { readOnly: true });
    try {
      // The tables themselves may still be in the WAL only (the migrations' commit).
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE name = 'analytics_rollups'").all();
      if (tables.length === 0) return 0;
      const [row] = db
        .prepare("SELECT SUM(requests) AS n FROM analytics_rollups WHERE period = 'minute' AND dim = 'api'")
        .all();
      return Number(row?.n ?? 0);
    } finally {
      db.close();
    }
  };
  try {
    await store.analytics.add(rollUp([rec({}), rec({ time: T0 + 1 })], 1));
    assert.equal(inFile(1), 0, 'just committed: in the WAL only');
    await new Promise((r) => setTimeout(r, RELAXED_SYNC_MS + 500));
    assert.equal(inFile(2), 2, 'checkpointed into the database file');
    assert.deepEqual(
      (await store.analytics.sum({ org: 'o1', period: 'minute', from: T0, to: T0 + MIN }, 'api', 'api')).map(
        (g) => g.requests,
      ),
      [2],
    );
  } finally {
    await store.close();
    await fx.stop();
    rmSync(copies, { recursive: true, force: true });
  }
});
