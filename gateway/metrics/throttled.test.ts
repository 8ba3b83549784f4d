/**
 * `ThrottledRequestsPS` (`svc_gateway_throttled_requests_per_second` on `/metrics`, with the
 * total `svc_gateway_throttled_total`) moved by real throttled requests through a real listener:
 * one request throttled once and then served, one throttled until its retries are used up and
 * refused with 429, on both request paths (fast path on and off).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../testing/echo.ts';
import { keyed, startGateway, type GatewayClient } from '../testing/harness.ts';
import { THROTTLE_WINDOW_SECONDS } from './metrics.ts';
import { scrape } from './testing.ts';

const access = { th: { api_id: 'th', api_name: 'th', versions: ['Default'] } };

/**
 * Two keys over their rate limit with throttling on: `passes` (1 per second) waits once and is
 * served, `gives-up` (1 per minute, 2 retries) waits twice and gets 429.
 */
async function throttle(gw: GatewayClient): Promise<void> {
  await gw.addApi(keyed('th', '/th/', echo().url));
  await gw.reload();
  const keys: [string, Record<string, unknown>][] = [
    ['passes', { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: 3 }],
    ['gives-up', { rate: 1, per: 60, throttle_interval: 1, throttle_retry_limit: 2 }],
  ];
  for (const [key, limits] of keys) {
    const res = await gw.admin('POST', `/svc/keys/${key}`, { ...limits, access_rights: access });
    assert.equal(res.status, 200, res.text);
  }
  const call = async (key: string): Promise<number> =>
    (await gw.request({ path: '/th/x', headers: { authorization: key }, fresh: true })).status;
  const before = await scrape(gw.adminPort);
  assert.equal(before.get('svc_gateway_throttled_total'), 0);
  assert.equal(before.get('svc_gateway_throttled_requests_per_second'), 0);
  assert.deepEqual(await Promise.all([call('passes'), call('gives-up')]), [200, 200]);
  assert.deepEqual(await Promise.all([call('passes'), call('gives-up')]), [200, 429]);
}

function assertThrottled(m: Map<string, number>): void {
  // Two waits of the request that gave up, one (two if its window was a millisecond late) of the
  // one served.
  const waits = m.get('svc_gateway_throttled_total') ?? 0;
  assert.ok(waits === 3 || waits === 4, `each wait counts: ${waits}`);
  assert.equal(m.get('svc_gateway_throttled_requests_per_second'), waits / THROTTLE_WINDOW_SECONDS);
  assert.equal(m.get('svc_gateway_refused_total{reason="throttle"}'), 1, 'the request that gave up');
  assert.equal(m.get('svc_gateway_refused_total{reason="rate_limit"}'), 0);
}

const echo = useEcho();

describe('ThrottledRequestsPS', () => {
  for (const fastPath of [true, false]) {
    test(`moved by throttled requests (fast path ${fastPath ? 'on' : 'off'})`, async () => {
      const gw = await startGateway({ argv: [`--fast-path=${String(fastPath)}`] });
      try {
        await throttle(gw);
        assertThrottled(await scrape(gw.adminPort));
      } finally {
        await gw.stop();
      }
    });
  }
});
