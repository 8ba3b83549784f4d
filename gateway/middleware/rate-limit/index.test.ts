/**
 * The key's rate limit with real listeners (the seed's "Throttled request" and "Limits" tables):
 * `rate` per `per` in a sliding window, -1 and `disable_rate_limit`, a per-API limit, a policy's
 * limit, the X-RateLimit-* headers under `--rate-limit-headers rate`, and throttling. Long
 * windows run on an injected clock; throttling runs on real timers (1 s intervals) and is timed
 * with a tolerance.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keyIdOf } from '../../sessions/credentials.ts';
import { useEcho } from '../../testing/echo.ts';
import { keyed, startGateway, useGateway } from '../../testing/harness.ts';
import { addKey, call, right, useClockedGateway, statuses } from '../../testing/limits.ts';

const echo = useEcho();

describe('rate limit on an injected clock', () => {
  let now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [
      keyed('rl', '/rl/', echo().url),
      keyed('rl2', '/rl2/', echo().url),
      keyed('norl', '/norl/', echo().url, { disable_rate_limit: true, disable_quota: true }),
    ],
  );

  test('rate limit: `rate` per `per`, then 429; sliding, not fixed', async () => {
    const gw = gateway();
    await addKey(gw, 'r1', { rate: 2, per: 10, access_rights: right('rl') });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 1), [200]);
    now += 5_000;
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 2), [200, 429]);
    const refused = await call(gw, '/rl/x', 'r1');
    assert.deepEqual([refused.status, refused.error], [429, 'Rate Limit Exceeded']);
    now += 5_001; // the first request has left the window; the second has not
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 2), [200, 429]);
    now += 5_000;
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 1), [200]);
  });

  test('rate limit: -1 disables it; disable_rate_limit on the API skips it', async () => {
    const gw = gateway();
    await addKey(gw, 'r-off', { rate: -1, per: -1, access_rights: right('rl') });
    await addKey(gw, 'r-api-off', { rate: 1, per: 60, access_rights: right('norl') });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r-off', 5), [200, 200, 200, 200, 200]);
    assert.deepEqual(await statuses(gw, '/norl/x', 'r-api-off', 3), [200, 200, 200]);
  });

  test("rate limit: a per-API limit counts apart from the key's own", async () => {
    const gw = gateway();
    await addKey(gw, 'r-per-api', {
      rate: 2,
      per: 60,
      access_rights: { ...right('rl', { limit: { rate: 1, per: 60 } }), ...right('rl2') },
    });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r-per-api', 2), [200, 429]);
    assert.deepEqual(await statuses(gw, '/rl2/x', 'r-per-api', 3), [200, 200, 429]);
  });

  test('rate limit from a policy', async () => {
    const gw = gateway();
    const p = await gw.admin('POST', '/svc/policies', {
      id: 'pol-rl',
      name: 'rl',
      rate: 1,
      per: 60,
      access_rights: right('rl2'),
    });
    assert.equal(p.status, 200, p.text);
    await addKey(gw, 'r-pol', { apply_policies: ['pol-rl'] });
    assert.deepEqual(await statuses(gw, '/rl2/x', 'r-pol', 2), [200, 429]);
  });
});

describe('rate limit headers', () => {
  test('--rate-limit-headers rate: the rate limit, on 200 and on 429', async () => {
    const gw = await startGateway({ argv: ['--rate-limit-headers', 'rate'] });
    try {
      await gw.addApi(keyed('h', '/h/', echo().url));
      await gw.reload();
      await addKey(gw, 'h1', {
        rate: 2,
        per: 60,
        quota_max: 100,
        quota_renewal_rate: 60,
        access_rights: right('h'),
      });
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push(await call(gw, '/h/x', 'h1'));
      assert.deepEqual(
        seen.map((r) => [r.status, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]),
        [
          [200, '2', '1'],
          [200, '2', '0'],
          [429, '2', '0'],
        ],
      );
      const reset = Number(seen[2]?.headers['x-ratelimit-reset']);
      assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61, `reset ${reset}`);
    } finally {
      await gw.stop();
    }
  });
});

describe('throttling (real timers)', () => {
  const gw = useGateway({}, async (g) => {
    await g.addApi(keyed('t', '/t/', echo().url));
    await g.reload();
  });

  const timed = async (key: string): Promise<{ status: number; ms: number }> => {
    const t0 = performance.now();
    const { status } = await call(gw(), '/t/x', key);
    return { status, ms: performance.now() - t0 };
  };

  test('over the limit with throttling: waits throttle_interval, then passes once there is room', async () => {
    await addKey(gw(), 't1', {
      rate: 1,
      per: 2,
      throttle_interval: 1,
      throttle_retry_limit: 3,
      access_rights: right('t'),
    });
    assert.equal((await timed('t1')).status, 200);
    const second = await timed('t1');
    assert.equal(second.status, 200);
    assert.ok(second.ms >= 950 && second.ms < 3_500, `waited ${second.ms} ms`);
  });

  test('retries used up: 429 after about throttle_interval x throttle_retry_limit', async () => {
    await addKey(gw(), 't2', {
      rate: 1,
      per: 60,
      throttle_interval: 1,
      throttle_retry_limit: 2,
      access_rights: right('t'),
    });
    assert.equal((await timed('t2')).status, 200);
    const refused = await timed('t2');
    assert.equal(refused.status, 429);
    assert.ok(refused.ms >= 1_900 && refused.ms < 4_000, `waited ${refused.ms} ms`);
  });

  test('throttling off (either value below 0): 429 at once', async () => {
    // Refused when written (the limits rule); stored anyway, throttling is off.
    await gw().store.put('keys', keyIdOf('t3'), {
      rate: 1,
      per: 60,
      throttle_interval: 1,
      throttle_retry_limit: -1,
      access_rights: right('t'),
    });
    assert.equal((await timed('t3')).status, 200);
    const refused = await timed('t3');
    assert.equal(refused.status, 429);
    assert.ok(refused.ms < 900, `answered in ${refused.ms} ms`);
  });
});
