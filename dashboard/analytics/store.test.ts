/**
 * Analytics rollups on both storages: batches add up into the same rows (two batches, as from
 * two gateways), sums read per period, per API, per name and per organisation, the top lists are
 * bounded, and pruning deletes only what is older than a period's retention.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storeFixtures } from '../testing/stores.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import { MAX_NAMES, OTHER, quantile, rollUp } from './rollup.ts';

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
