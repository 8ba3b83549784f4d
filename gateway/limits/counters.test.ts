/** Counters, in memory and on a redis-server started for the test: one suite for both. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import type { Counters } from './counters.ts';
import { MemoryCounters } from './memory.ts';
import { RedisCounters } from './redis.ts';

let redis: TestRedis | undefined;

const backends: { name: string; open(): Counters }[] = [
  { name: 'memory', open: () => new MemoryCounters() },
  {
    name: 'redis',
    open: () => {
      assert.ok(redis);
      return new RedisCounters(redis.url, { prefix: 't:', log: silentLogger() });
    },
  },
];

before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

for (const b of backends) {
  describe(`counters: ${b.name}`, () => {
    test('count, expire and reset', async () => {
      const c = b.open();
      try {
        assert.equal((await c.incr('n', 60_000)).value, 1);
        const second = await c.incr('n', 60_000);
        assert.equal(second.value, 2);
        assert.ok(second.ttlMs > 0 && second.ttlMs <= 60_000, `ttl ${second.ttlMs}`);
        await c.reset('n');
        assert.equal((await c.incr('n', 60_000)).value, 1);
        assert.equal((await c.incr('short', 30)).value, 1);
        await waitFor('the counter to expire', async () =>
          (await c.incr('short', 30)).value === 1 ? true : undefined,
        );
      } finally {
        await c.close();
      }
    });
  });
}
