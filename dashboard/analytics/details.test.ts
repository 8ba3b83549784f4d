/**
 * Detailed records on both storages: stored with their bodies, listed newest first per
 * organisation and API with paging, and pruned by age and by the count kept per API.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storeFixtures } from '../testing/stores.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import { recordedBody } from '../../schemas/rules/analytics-detail.ts';

const T0 = Date.UTC(2026, 0, 1, 10, 0, 0);

const rec = (time: number, api_id: string, org_id = 'o1'): AnalyticsRecord => ({
  time,
  org_id,
  api_id,
  api_version: '',
  key: '',
  alias: '',
  method: 'POST',
  path: `/${api_id}/x`,
  status: 200,
  latency_ms: 4,
  upstream_latency_ms: 3,
  request_bytes: 2,
  response_bytes: 2,
  refusal: '',
  detail: {
    query: '',
    request: recordedBody(Buffer.from(`in ${String(time)}`), 5, false),
    response: recordedBody(Buffer.from([0xff, 0xfe]), 2, false),
  },
});

for (const fx of storeFixtures()) {
  describe(`detailed records on ${fx.name}`, () => {
    after(() => fx.stop());

    test('listed newest first per organisation and API, with their bodies, in pages', async () => {
      const store = await fx.open(await fx.fresh());
      const d = store.analytics.details;
      await d.add([rec(T0, 'a1'), rec(T0 + 1, 'a2'), rec(T0 + 2, 'a1'), rec(T0 + 3, 'a1', 'o2')]);
      const a1 = await d.list({ org: 'o1', apiId: 'a1', from: T0, to: T0 + 10, limit: 10 });
      assert.deepEqual(
        a1.map((r) => r.record.time),
        [T0 + 2, T0],
      );
      const detail = a1[0]?.record.detail;
      assert.ok(detail !== undefined);
      assert.equal(detail.request.body, `in ${String(T0 + 2)}`);
      assert.deepEqual(detail.response, {
        body: '//4=',
        encoding: 'base64',
        size: 2,
        truncated: false,
      });
      const all = await d.list({ org: 'o1', from: T0, to: T0 + 10, limit: 2 });
      assert.equal(all.length, 2);
      const rest = await d.list({ org: 'o1', from: T0, to: T0 + 10, limit: 2, before: all[1]?.id ?? 0 });
      assert.deepEqual(
        rest.map((r) => r.record.time),
        [T0],
      );
      await store.close();
    });

    test('pruned by age, and to the newest records of each API', async () => {
      const store = await fx.open(await fx.fresh());
      const d = store.analytics.details;
      await d.add([0, 1, 2, 3, 4].map((i) => rec(T0 + i, 'a1')));
      await d.add([rec(T0 - 10, 'a2'), rec(T0 + 1, 'a2')]);
      // Older than T0 (one of a2), then a1 beyond its newest 2 (three): four.
      assert.equal(await d.prune(T0, 2), 4);
      const left = await d.list({ org: 'o1', from: 0, to: T0 + 10, limit: 10 });
      assert.deepEqual(
        left.map((r) => `${r.record.api_id}@${String(r.record.time - T0)}`),
        ['a2@1', 'a1@4', 'a1@3'],
      );
      await store.close();
    });
  });
}
