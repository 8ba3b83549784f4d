/**
 * The analytics wire between the parts: a gateway's records, sent as columns
 * (schemas/rules/analytics-batch.ts) by its analytics (gateway/analytics/analytics.ts) to a real
 * dashboard's `POST /system/analytics`, are counted by the dashboard's analytics API per key,
 * endpoint and refusal, and by the gateway as sent; the records format of older gateways is still
 * taken and counted with them. In process: the gateway's analytics and a dashboard over SQLite.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { orgAdmin, startFreshDashboard, type FreshDashboard } from '../../dashboard/testing/dashboard.ts';
import { ANALYTICS_COLUMNS_TYPE } from '../../schemas/rules/analytics-batch.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import {
  NODE_SECRET,
  analyticsRoute as route,
  analyticsTo,
  counted,
  keyedRequest as request,
} from '../../gateway/analytics/testing.ts';

let dash: FreshDashboard;
let admin: string;

before(async () => {
  dash = await startFreshDashboard(undefined, { node_secret: NODE_SECRET });
  admin = await orgAdmin(dash.d, 'acme');
});

after(async () => {
  await dash.close();
});

interface Traffic {
  totals: { requests: number; errors: number };
  refusals: { reason: string; requests: number }[];
  top_keys: { key: string; requests: number }[];
  top_endpoints: { endpoint: string; requests: number }[];
}

async function traffic(): Promise<Traffic> {
  const r = await dash.d.call('GET', '/api/analytics/traffic', { auth: admin });
  assert.equal(r.status, 200, r.text);
  return r.body as unknown as Traffic;
}

test('records sent as columns by the gateway are counted by the dashboard, per key, endpoint and refusal', async () => {
  const registry = new Registry();
  const a = analyticsTo(dash.d.url, registry);
  const acme = route('acme');
  for (let i = 0; i < 2000; i++) a.onResponse(request(acme, `/shop/orders/${String(10000 + i)}`, 'k1'), 200);
  for (let i = 0; i < 500; i++) a.onResponse(request(acme, '/shop/orders', 'k2', true), 429);
  // Another organisation's record: the dashboard takes it (a gateway in mode ce names any).
  a.onResponse(request(route('other'), '/shop/orders/1', 'k3'), 200);
  await a.close();
  assert.equal(await counted(registry, 'sent'), 2501);
  assert.equal(await counted(registry, 'dropped_send_failed'), 0);
  const t = await traffic();
  assert.equal(t.totals.requests, 2500);
  assert.equal(t.totals.errors, 500);
  assert.deepEqual(t.refusals, [{ reason: 'rate_limit', requests: 500 }]);
  assert.deepEqual(
    t.top_keys.map((k) => [k.key, k.requests]),
    [
      ['k1', 2000],
      ['k2', 500],
    ],
  );
  assert.deepEqual(
    t.top_endpoints.map((e) => [e.endpoint, e.requests]),
    [
      ['POST /shop/orders/{id}', 2000],
      ['POST /shop/orders', 500],
    ],
  );
});

test('the records format of older gateways is still taken, and counted with the columns', async () => {
  const before = (await traffic()).totals.requests;
  const record: AnalyticsRecord = {
    time: Date.now(),
    org_id: 'acme',
    api_id: 'orders',
    api_version: '',
    key: 'k1',
    alias: '',
    method: 'GET',
    path: '/shop/orders',
    status: 200,
    latency_ms: 1.5,
    upstream_latency_ms: 1,
    request_bytes: 0,
    response_bytes: 2,
    refusal: '',
  };
  const r = await fetch(`${dash.d.url}/system/analytics`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-node-secret': NODE_SECRET },
    body: JSON.stringify({ sample_rate: 0.5, records: [record] }),
  });
  assert.equal(r.status, 200, await r.text());
  assert.equal((await traffic()).totals.requests, before + 2, 'one record at a sample rate of 0.5');
  const bad = await fetch(`${dash.d.url}/system/analytics`, {
    method: 'POST',
    headers: { 'content-type': ANALYTICS_COLUMNS_TYPE, 'x-svc-node-secret': NODE_SECRET },
    body: JSON.stringify({ sample_rate: 1, records: [record] }),
  });
  assert.equal(bad.status, 400, 'records sent as columns');
  assert.match(await bad.text(), /count: /);
});
