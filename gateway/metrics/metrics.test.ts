import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../testing/echo.ts';
import {
  keyless,
  spawnWorkers,
  startGateway,
  type GatewayClient,
  allWorkersServing,
} from '../testing/harness.ts';
import { Metrics, THROTTLE_WINDOW_SECONDS } from './metrics.ts';
import { samples, scrapeAnswer } from './testing.ts';

/** A scrape of `/metrics` on `port`, without the secret, on a new connection. */
async function scrape(port: number): Promise<Map<string, number>> {
  const r = await scrapeAnswer(port);
  assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  return samples(r.text);
}

const requests = (api: string, method: string, cls: string): string =>
  `svc_gateway_requests_total{api_id="${api}",method="${method}",status_class="${cls}"}`;

/** Requests to `a1` and `a2` on `gw`, each on a new connection. */
async function traffic(gw: GatewayClient): Promise<void> {
  for (let i = 0; i < 3; i++) assert.equal((await gw.request({ path: '/a1/x', fresh: true })).status, 200);
  assert.equal(
    (await gw.request({ method: 'POST', path: '/a1/status/503', body: 'x', fresh: true })).status,
    503,
  );
  assert.equal((await gw.request({ path: '/a2/status/404', fresh: true })).status, 404);
  assert.equal((await gw.request({ method: 'PROPFIND', path: '/a2/x', fresh: true })).status, 200);
}

function assertTraffic(m: Map<string, number>, times = 1): void {
  assert.equal(m.get(requests('a1', 'GET', '2xx')), 3 * times);
  assert.equal(m.get(requests('a1', 'POST', '5xx')), 1 * times);
  assert.equal(m.get(requests('a2', 'GET', '4xx')), 1 * times);
  assert.equal(m.get(requests('a2', 'OTHER', '2xx')), 1 * times, 'unknown methods are OTHER');
  assert.equal(m.get('svc_gateway_request_duration_seconds_count{api_id="a1"}'), 4 * times);
  assert.equal(m.get('svc_gateway_request_duration_seconds_bucket{api_id="a1",le="+Inf"}'), 4 * times);
  assert.ok((m.get('svc_gateway_request_duration_seconds_sum{api_id="a1"}') ?? 0) > 0);
}

describe('/metrics', () => {
  const echo = useEcho();

  for (const fastPath of [true, false]) {
    test(`counts requests by API, method and status class (fast path ${fastPath ? 'on' : 'off'})`, async () => {
      const gw = await startGateway({ argv: [`--fast-path=${String(fastPath)}`] });
      try {
        await gw.addApi(keyless('a1', '/a1/', echo().url));
        await gw.addApi(keyless('a2', '/a2/', echo().url));
        await gw.reload();
        await traffic(gw);
        const m = await scrape(gw.port);
        assertTraffic(m);
        assert.equal(
          m.get('svc_gateway_refused_total{reason="quota"}'),
          0,
          'every reason shows before it counts',
        );
        assert.equal(m.get('svc_gateway_events_total{event="QuotaExceeded",outcome="delivered"}'), 0);
        assert.ok(m.has('process_cpu_user_seconds_total'), 'process metrics');
        assert.equal(m.get(requests('a1', 'GET', '2xx')), 3, 'scrapes are not counted as API requests');
      } finally {
        await gw.stop();
      }
    });
  }

  test('on the control port when there is one; the gateway port leaves /metrics to APIs', async () => {
    const gw = await startGateway({ argv: ['--control-port', '0'] });
    try {
      await gw.addApi(keyless('m', '/metrics/', echo().url));
      await gw.reload();
      await gw.request({ path: '/metrics' });
      const m = await scrape(gw.adminPort);
      assert.equal(m.get(requests('m', 'GET', '2xx')), 1);
      const onGatewayPort = await gw.request({ path: '/metrics' });
      assert.equal((onGatewayPort.json as { upstream?: string }).upstream, 'echo');
    } finally {
      await gw.stop();
    }
  });

  test('on a shared port /metrics itself is the gateway’s, the paths below it the API’s', async () => {
    const gw = await startGateway();
    try {
      await gw.addApi(keyless('m', '/metrics/', echo().url));
      await gw.reload();
      assert.equal((await gw.request({ path: '/metrics/x' })).status, 200);
      const m = await scrape(gw.port);
      assert.equal(m.get(requests('m', 'GET', '2xx')), 1);
    } finally {
      await gw.stop();
    }
  });

  test('--metrics-enabled=false: no metrics, /metrics is an ordinary path', async () => {
    const gw = await startGateway({ argv: ['--metrics-enabled=false'] });
    try {
      assert.equal(gw.gw.metrics, undefined);
      const none = await gw.request({ path: '/metrics' });
      assert.equal(none.status, 404);
      assert.deepEqual(none.json, { error: 'Not Found' });
      await gw.addApi(keyless('m', '/metrics/', echo().url));
      await gw.reload();
      assert.equal(((await gw.request({ path: '/metrics' })).json as { upstream?: string }).upstream, 'echo');
    } finally {
      await gw.stop();
    }
  });

  test('with --workers 2 any worker reports the whole node', async () => {
    const gw = await spawnWorkers('svc-gw-metrics-');
    try {
      await gw.addApi(keyless('a1', '/a1/', echo().url));
      await gw.addApi(keyless('a2', '/a2/', echo().url));
      await gw.reload();
      await allWorkersServing(gw);
      // New connections take turns between the workers (round robin): each serves part of it.
      await traffic(gw);
      await traffic(gw);
      for (let i = 0; i < 4; i++) assertTraffic(await scrape(gw.port), 2);
      assert.equal(await gw.stop(), 0);
    } finally {
      await gw.stop();
    }
  });
});

describe('Metrics', () => {
  test('refusals, throttling and ThrottledRequestsPS over a sliding window', async () => {
    let clock = 1_000_000;
    const m = new Metrics({ now: () => clock, processMetrics: false });
    m.refused('quota');
    m.refused('rate_limit');
    m.refused('rate_limit');
    m.upstreamError();
    for (let i = 0; i < 20; i++) m.throttled();
    let s = samples(await m.text());
    assert.equal(s.get('svc_gateway_refused_total{reason="quota"}'), 1);
    assert.equal(s.get('svc_gateway_refused_total{reason="rate_limit"}'), 2);
    assert.equal(s.get('svc_gateway_refused_total{reason="api_rate_limit"}'), 0);
    assert.equal(s.get('svc_gateway_upstream_errors_total'), 1);
    assert.equal(s.get('svc_gateway_throttled_total'), 20);
    assert.equal(s.get('svc_gateway_throttled_requests_per_second'), 20 / THROTTLE_WINDOW_SECONDS);
    clock += 3_000;
    for (let i = 0; i < 10; i++) m.throttled();
    s = samples(await m.text());
    assert.equal(s.get('svc_gateway_throttled_requests_per_second'), 30 / THROTTLE_WINDOW_SECONDS);
    clock += (THROTTLE_WINDOW_SECONDS - 2) * 1000; // the first 20 left the window
    s = samples(await m.text());
    assert.equal(s.get('svc_gateway_throttled_requests_per_second'), 10 / THROTTLE_WINDOW_SECONDS);
    clock += 60_000;
    s = samples(await m.text());
    assert.equal(s.get('svc_gateway_throttled_requests_per_second'), 0);
    assert.equal(s.get('svc_gateway_throttled_total'), 30, 'the total keeps counting');
  });

  test('every event and outcome is a series', async () => {
    const m = new Metrics({ processMetrics: false });
    m.event('RateLimitExceeded', 'suppressed');
    const s = samples(await m.text());
    assert.equal(s.get('svc_gateway_events_total{event="RateLimitExceeded",outcome="suppressed"}'), 1);
    assert.equal(s.get('svc_gateway_events_total{event="KeyExpired",outcome="failed"}'), 0);
  });
});
