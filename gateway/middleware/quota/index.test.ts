/**
 * The key's quota with real listeners (the seed's "Quota counter" table and quota rules):
 * `quota_max` per period, then 403, its headers and when the period renews; resets (manual, on
 * update, suppressed, `dont_set_quota_on_create`); changes of `quota_max` and of the period
 * mid-period; -1, `disable_quota`, a per-API quota; never throttled; keys sharing a `counter_id`. Periods run on an injected
 * clock.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyed } from '../../testing/harness.ts';
import { addKey, call, right, useClockedGateway, statuses } from '../../testing/limits.ts';

const echo = useEcho();

describe('quota on an injected clock', () => {
  let now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [
      keyed('norl', '/norl/', echo().url, { disable_rate_limit: true, disable_quota: true }),
      keyed('q', '/q/', echo().url),
      keyed('qkeep', '/qkeep/', echo().url, { dont_set_quota_on_create: true }),
    ],
  );

  test('quota: quota_max per period, then 403 Quota exceeded; headers; the period renews at the next request after it', async () => {
    const gw = gateway();
    await addKey(gw, 'q1', { quota_max: 3, quota_renewal_rate: 3600, access_rights: right('q') });
    const start = now;
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await call(gw, '/q/x', 'q1'));
    assert.deepEqual(
      seen.map((r) => [r.status, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]),
      [
        [200, '3', '2'],
        [200, '3', '1'],
        [200, '3', '0'],
        [403, '3', '0'],
      ],
    );
    assert.equal(seen[3]?.error, 'Quota exceeded');
    assert.equal(seen[0]?.headers['x-ratelimit-reset'], String(Math.ceil((start + 3_600_000) / 1000)));
    const key = (await gw.admin('GET', '/svc/keys/q1')).json as {
      quota_remaining: number;
      quota_renews: number;
    };
    assert.equal(key.quota_remaining, 0);
    assert.equal(key.quota_renews, Math.ceil((start + 3_600_000) / 1000));
    now += 3_599_999;
    assert.equal((await call(gw, '/q/x', 'q1')).status, 403);
    now += 1;
    // No scheduled reset: nothing changes until the next request, which starts a new period.
    const renewed = await call(gw, '/q/x', 'q1');
    assert.equal(renewed.status, 200);
    assert.equal(renewed.headers['x-ratelimit-remaining'], '2');
  });

  test('quota: manual reset, reset on update, ?suppress_reset=1 and dont_set_quota_on_create keep the count', async () => {
    const gw = gateway();
    await addKey(gw, 'q2', { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('q') });
    assert.deepEqual(await statuses(gw, '/q/x', 'q2', 2), [200, 403]);
    const reset = await gw.admin('POST', '/svc/keys/q2/reset');
    assert.equal((reset.json as { action: string }).action, 'reset');
    assert.deepEqual(await statuses(gw, '/q/x', 'q2', 2), [200, 403]);
    const body = { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('q') };
    assert.equal((await gw.admin('PUT', '/svc/keys/q2?suppress_reset=1', body)).status, 200);
    assert.equal((await call(gw, '/q/x', 'q2')).status, 403, 'suppressed: the count stays');
    assert.equal((await gw.admin('PUT', '/svc/keys/q2', body)).status, 200);
    assert.equal((await call(gw, '/q/x', 'q2')).status, 200, 'an update starts a new period');
    await addKey(gw, 'q3', { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('qkeep') });
    assert.deepEqual(await statuses(gw, '/qkeep/x', 'q3', 2), [200, 403]);
    assert.equal(
      (
        await gw.admin('PUT', '/svc/keys/q3', {
          quota_max: 1,
          quota_renewal_rate: 3600,
          access_rights: right('qkeep'),
        })
      ).status,
      200,
    );
    assert.equal((await call(gw, '/qkeep/x', 'q3')).status, 403, 'dont_set_quota_on_create: the count stays');
    assert.equal((await gw.admin('POST', '/svc/keys/nope/reset')).status, 404);
  });

  test('quota: raising quota_max keeps the count; lowering it below the count refuses; a new period length waits for the next period', async () => {
    const gw = gateway();
    const body = (max: number, renewal = 3600): Record<string, unknown> => ({
      quota_max: max,
      quota_renewal_rate: renewal,
      access_rights: right('q'),
    });
    await addKey(gw, 'q4', body(2));
    assert.deepEqual(await statuses(gw, '/q/x', 'q4', 3), [200, 200, 403]);
    await gw.admin('PUT', '/svc/keys/q4?suppress_reset=1', body(4));
    assert.deepEqual(await statuses(gw, '/q/x', 'q4', 2), [200, 403], '2 used (+1 refused) of 4: one more');
    await gw.admin('PUT', '/svc/keys/q4?suppress_reset=1', body(1, 60));
    assert.equal((await call(gw, '/q/x', 'q4')).status, 403);
    now += 60_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 403, 'the running period keeps its length');
    now += 3_600_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 200, 'a new period');
    now += 60_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 200, 'of the new length');
  });

  test('quota: -1 is unlimited; disable_quota skips it; a per-API quota counts apart', async () => {
    const gw = gateway();
    await addKey(gw, 'q5', { quota_max: -1, quota_renewal_rate: 60, access_rights: right('q') });
    assert.deepEqual(await statuses(gw, '/q/x', 'q5', 3), [200, 200, 200]);
    await addKey(gw, 'q6', { quota_max: 1, quota_renewal_rate: 60, access_rights: right('norl') });
    assert.deepEqual(await statuses(gw, '/norl/x', 'q6', 3), [200, 200, 200]);
    await addKey(gw, 'q7', {
      quota_max: 1,
      quota_renewal_rate: 3600,
      access_rights: {
        ...right('q', { limit: { quota_max: 2, quota_renewal_rate: 3600 } }),
        ...right('qkeep'),
      },
    });
    assert.deepEqual(await statuses(gw, '/q/x', 'q7', 3), [200, 200, 403]);
    assert.deepEqual(await statuses(gw, '/qkeep/x', 'q7', 2), [200, 403]);
    const key = (await gw.admin('GET', '/svc/keys/q7')).json as {
      quota_remaining: number;
      access_rights: { q: { limit: { quota_remaining: number } } };
    };
    assert.equal(key.quota_remaining, 0);
    assert.equal(key.access_rights.q.limit.quota_remaining, 0);
  });

  test('quota: never throttled', async () => {
    const gw = gateway();
    await addKey(gw, 'q8', {
      quota_max: 1,
      quota_renewal_rate: 60,
      throttle_interval: 5,
      throttle_retry_limit: 5,
      access_rights: right('q'),
    });
    assert.deepEqual(await statuses(gw, '/q/x', 'q8', 2), [200, 403]);
  });

  test('counter_id: two keys sharing it count against one quota and one rate limit, reset together', async () => {
    const gw = gateway();
    const limits = { quota_max: 3, quota_renewal_rate: 3600, access_rights: right('q') };
    await addKey(gw, 'old-value', { ...limits, counter_id: 'apikey-one' });
    assert.deepEqual(await statuses(gw, '/q/x', 'old-value', 2), [200, 200]);
    // The new value of a rotated key, written without resetting the shared counters.
    const created = await gw.admin('POST', '/svc/keys/new-value?suppress_reset=1', {
      ...limits,
      counter_id: 'apikey-one',
    });
    assert.equal(created.status, 200, created.text);
    const third = await call(gw, '/q/x', 'new-value');
    assert.deepEqual([third.status, third.headers['x-ratelimit-remaining']], [200, '0']);
    assert.equal((await call(gw, '/q/x', 'old-value')).status, 403, 'the old value is over the shared quota');
    assert.equal((await call(gw, '/q/x', 'new-value')).status, 403);
    const seen = (await gw.admin('GET', '/svc/keys/old-value')).json as { quota_remaining: number };
    assert.equal(seen.quota_remaining, 0);
    // A key without it counts on its own.
    await addKey(gw, 'other-value', limits);
    assert.equal((await call(gw, '/q/x', 'other-value')).status, 200);
    // Resetting one resets the allowance both count against.
    assert.equal((await gw.admin('POST', '/svc/keys/new-value/reset')).status, 200);
    assert.equal((await call(gw, '/q/x', 'old-value')).status, 200);
    assert.equal((await call(gw, '/q/x', 'new-value')).status, 200);

    await addKey(gw, 'rate-a', { rate: 2, per: 60, access_rights: right('q'), counter_id: 'apikey-two' });
    await addKey(gw, 'rate-b', { rate: 2, per: 60, access_rights: right('q'), counter_id: 'apikey-two' });
    assert.deepEqual(
      [
        await call(gw, '/q/x', 'rate-a'),
        await call(gw, '/q/x', 'rate-b'),
        await call(gw, '/q/x', 'rate-a'),
      ].map((r) => r.status),
      [200, 200, 429],
    );
    const bad = await gw.admin('POST', '/svc/keys/bad-counter', { ...limits, counter_id: 'a:b' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /counter_id/);
  });
});
