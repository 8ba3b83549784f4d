/**
 * Limit counters shared beyond one process: two gateway processes on one Redis admit exactly the
 * limit between them, a restart keeps the counts held in Redis, the workers of `--workers 2` on
 * the files store share one counter, and with Redis away limited requests get 503 (or pass with
 * `--limits-fail-open`) while unlimited ones are served. Each suite starts its own redis-server.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { RedisCounters } from '../limits/redis.ts';
import { useEcho } from '../testing/echo.ts';
import { keyed, spawnGateway, spawnWorkers, startGateway } from '../testing/harness.ts';
import { addKey, call, right, statuses } from '../testing/limits.ts';
import { onRedis, startRedis, useRedis } from '../testing/redis-server.ts';

const echo = useEcho();

describe('limits across nodes and workers', () => {
  const redis = useRedis();

  test('two gateway processes on one Redis: 200 concurrent requests against rate 50 admit exactly 50; the same for a quota', async () => {
    const args = onRedis(redis(), 'two:');
    const a = await spawnGateway(args);
    const b = await spawnGateway(args);
    try {
      await a.addApi(keyed('x', '/x/', echo().url));
      assert.equal((await a.admin('GET', '/svc/reload/group')).status, 200);
      await waitFor('the API on the second process', async () =>
        (await b.request({ path: '/x/y' })).status === 401 ? true : undefined,
      );
      await addKey(a, 'exact-rate', { rate: 50, per: 60, access_rights: right('x') });
      await addKey(a, 'exact-quota', { quota_max: 50, quota_renewal_rate: 60, access_rights: right('x') });
      for (const key of ['exact-rate', 'exact-quota']) {
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            (i % 2 === 0 ? a : b).request({ path: '/x/y', headers: { authorization: key } }),
          ),
        );
        assert.equal(results.filter((r) => r.status === 200).length, 50, key);
      }
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('a gateway restart keeps the counters held in Redis', async () => {
    const args = onRedis(redis(), 'restart:');
    const first = await spawnGateway(args);
    await first.addApi(keyed('rs', '/rs/', echo().url));
    await first.reload();
    await addKey(first, 'kept-count', { quota_max: 2, quota_renewal_rate: 3600, access_rights: right('rs') });
    assert.deepEqual(await statuses(first, '/rs/x', 'kept-count', 2), [200, 200]);
    await first.stop();
    const second = await spawnGateway(args);
    try {
      assert.equal((await call(second, '/rs/x', 'kept-count')).status, 403);
    } finally {
      await second.stop();
    }
  });

  test('--workers 2 on the files store: the workers share one counter', async () => {
    const gw = await spawnWorkers('svc-gw-limits-');
    try {
      await gw.addApi(keyed('w', '/w/', echo().url));
      await gw.reload();
      await addKey(gw, 'shared', { rate: 5, per: 60, access_rights: right('w') });
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          gw.request({ path: '/w/x', fresh: true, headers: { authorization: 'shared' } }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 5);
    } finally {
      await gw.stop();
    }
  });

  test('Redis away: limited requests get 503 (or pass with --limits-fail-open); unlimited ones are served', async () => {
    const r = await startRedis();
    const closed = await startGateway({
      counters: new RedisCounters(r.url, { prefix: 'away:', log: silentLogger() }),
    });
    const open = await startGateway({
      argv: ['--limits-fail-open'],
      counters: new RedisCounters(r.url, { prefix: 'away2:', log: silentLogger() }),
    });
    try {
      for (const gw of [closed, open]) {
        await gw.addApi(keyed('z', '/z/', echo().url));
        await gw.reload();
        await addKey(gw, 'limited', { rate: 100, per: 60, access_rights: right('z') });
        await addKey(gw, 'free', { access_rights: right('z') });
        assert.equal((await call(gw, '/z/x', 'limited')).status, 200);
      }
      await r.stop();
      const refused = await call(closed, '/z/x', 'limited');
      assert.deepEqual([refused.status, refused.error], [503, 'Limits are unavailable, try again later']);
      assert.equal((await call(closed, '/z/x', 'free')).status, 200);
      assert.equal((await call(open, '/z/x', 'limited')).status, 200);
    } finally {
      await closed.stop();
      await open.stop();
    }
  });
});
