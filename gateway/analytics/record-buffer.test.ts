/**
 * The buffer of analytics records: what a request leaves in it comes out as its record when the
 * batch is taken (path template, `track_endpoints` entry, latencies rounded, refusal, sizes), in
 * the order the requests ended, through wrap-around and growth; a full buffer keeps nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AnalyticsDetail } from '../../schemas/rules/analytics-detail.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { DETAIL_CHARS_PER_BATCH, RecordBuffer } from './record-buffer.ts';
import { analyticsRoute, endedRequest } from './testing.ts';

const route = analyticsRoute('acme');

const ctx = (path: string, init?: (c: RequestContext) => void): RequestContext =>
  endedRequest(route, path, init);

const base: AnalyticsRecord = {
  time: 1_700_000_000_000,
  org_id: 'acme',
  api_id: 'orders',
  api_version: '',
  key: '',
  alias: '',
  method: 'POST',
  path: '/shop/orders/{id}',
  status: 200,
  latency_ms: 0,
  upstream_latency_ms: 0,
  request_bytes: 12,
  response_bytes: 0,
  refusal: '',
};

const cases: [name: string, c: RequestContext, status: number, endpoint: string, want: AnalyticsRecord][] = [
  ['a routed request: template, sizes', ctx('/shop/orders/12345'), 200, '', base],
  [
    'latencies rounded to the microsecond, key, version',
    ctx('/shop/orders/12345', (c) => {
      c.state.startedAt = 1000;
      c.state.upstreamStartedAt = 1000.5;
      c.state.upstreamRespondedAt = 1002.1234567;
      c.state.keyId = 'hash-of-key';
      c.state.version = 'v2';
      c.state.responseBytes = 29;
    }),
    201,
    '',
    {
      ...base,
      key: 'hash-of-key',
      api_version: 'v2',
      status: 201,
      latency_ms: 3.333,
      upstream_latency_ms: 1.623,
      response_bytes: 29,
    },
  ],
  [
    'a track_endpoints entry names the path',
    ctx('/shop/orders/12345'),
    200,
    'orders/{id}/lines',
    { ...base, path: '/shop/orders/{id}/lines' },
  ],
  [
    'a refusal by a quota',
    ctx('/shop/orders', (c) => {
      c.refusal = { rejected: GatewayError.quotaExceeded() };
    }),
    403,
    '',
    { ...base, path: '/shop/orders', status: 403, refusal: 'quota' },
  ],
];

for (const [name, c, status, endpoint, want] of cases) {
  test(`record buffer: ${name}`, () => {
    const buffer = new RecordBuffer(10);
    assert.equal(buffer.push(c, status, endpoint, want.time, 1003.3333), true);
    assert.equal(buffer.length, 1);
    assert.deepEqual(buffer.take(1000), [want]);
    assert.equal(buffer.length, 0);
  });
}

test('record buffer: records come out in order through wrap-around and growth; full keeps nothing', () => {
  const buffer = new RecordBuffer(3000);
  let pushed = 0;
  let taken = 0;
  const push = (n: number): void => {
    for (let i = 0; i < n; i++, pushed++)
      assert.equal(buffer.push(ctx(`/shop/p${String(pushed)}`), 200, '', pushed, 0), true);
  };
  const take = (n: number): void => {
    for (const r of buffer.take(n)) {
      assert.equal(r.time, taken);
      assert.equal(r.path, `/shop/p${String(taken)}`);
      taken++;
    }
  };
  push(1000);
  take(700);
  push(900); // wraps around the first 1024 slots
  push(1100); // grows while wrapped
  take(1);
  push(701);
  assert.equal(buffer.length, 3000);
  assert.equal(buffer.push(ctx('/shop/x'), 200, '', 0, 0), false);
  take(5000);
  assert.equal(taken, pushed);
  assert.equal(buffer.length, 0);
});

test('record buffer: a batch holds detailed records up to DETAIL_CHARS_PER_BATCH of bodies; the rest wait', () => {
  const buffer = new RecordBuffer(100);
  const body = 'x'.repeat(DETAIL_CHARS_PER_BATCH / 4 + 1);
  const detail: AnalyticsDetail = {
    query: '',
    request: { body, encoding: 'utf8', size: body.length, truncated: false },
    response: { body: '', encoding: 'utf8', size: 0, truncated: false },
  };
  for (let i = 0; i < 10; i++) {
    const c = ctx(`/shop/d${String(i)}`, (x) => {
      x.state.detail = { read: () => detail };
    });
    assert.equal(buffer.push(c, 200, '', i, 0), true);
  }
  const first = buffer.takeColumns(5000, 1);
  assert.equal(first.count, 4, 'the fourth body reaches the limit');
  assert.deepEqual(
    first.details?.map(([k]) => k),
    [0, 1, 2, 3],
  );
  assert.equal(buffer.length, 6);
  assert.deepEqual(
    buffer.take(5000).map((r) => r.path),
    ['/shop/d4', '/shop/d5', '/shop/d6', '/shop/d7'],
  );
  assert.equal(buffer.take(5000).length, 2);
});
