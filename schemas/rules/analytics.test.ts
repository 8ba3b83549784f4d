/** What the dashboard takes of a gateway's analytics record (`POST /system/analytics`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readAnalyticsRecord } from './analytics.ts';

const whole = {
  time: 1_700_000_000_000,
  org_id: 'o1',
  api_id: 'a1',
  api_version: 'v2',
  key: 'k1',
  alias: 'partner',
  method: 'get',
  path: '/a1/users/{id}',
  status: 429,
  latency_ms: 4.5,
  upstream_latency_ms: 0,
  request_bytes: 12,
  response_bytes: 30,
  refusal: 'rate_limit',
};

const refused: [string, unknown][] = [
  ['not an object', [whole]],
  ['null', null],
  ['no time', { ...whole, time: undefined }],
  ['a negative time', { ...whole, time: -1 }],
  ['no organisation', { ...whole, org_id: undefined }],
  ['an organisation too long', { ...whole, org_id: 'o'.repeat(257) }],
  ['an API ID that is not a string', { ...whole, api_id: 7 }],
  ['no status', { ...whole, status: undefined }],
  ['a status that is not finite', { ...whole, status: Infinity }],
];
for (const [name, raw] of refused) {
  test(`not a record: ${name}`, () => {
    assert.equal(readAnalyticsRecord(raw), undefined);
  });
}

test('a whole record is read as sent, the method upper-cased', () => {
  assert.deepEqual(readAnalyticsRecord(whole), { ...whole, method: 'GET' });
});

test('optional fields missing or malformed read as empty', () => {
  assert.deepEqual(
    readAnalyticsRecord({
      time: 1,
      org_id: 'o1',
      api_id: 'a1',
      status: 0,
      key: 5,
      method: 'X'.repeat(17),
      latency_ms: -3,
      request_bytes: '12',
      refusal: 'tired',
    }),
    {
      time: 1,
      org_id: 'o1',
      api_id: 'a1',
      api_version: '',
      key: '',
      alias: '',
      method: 'OTHER',
      path: '/',
      status: 0,
      latency_ms: 0,
      upstream_latency_ms: 0,
      request_bytes: 0,
      response_bytes: 0,
      refusal: '',
    },
  );
});
