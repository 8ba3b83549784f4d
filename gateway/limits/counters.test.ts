/**
 * One suite for every counters backing: memory (with an injected clock), Redis (a redis-server
 * started for the test; its own clock, so windows are short), and the primary relay. Then
 * exactness: two clients on one Redis, 200 concurrent checks against a limit of 50.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { useRedis } from '../testing/redis-server.ts';
import type { Counters } from './counters.ts';
import { MemoryCounters } from './memory.ts';
import { RedisCounters } from './redis.ts';
import { RelayedCounters, runCounterOp } from './relay.ts';

const redis = useRedis();
let prefixN = 0;

/** A relay whose "primary" is a MemoryCounters in this process (answers on the next tick). */
function loopbackRelay(): Counters {
  const primary = new MemoryCounters();
  const relay: RelayedCounters = new RelayedCounters((m) => {
    setImmediate(() => {
      relay.answered(m.id, runCounterOp(primary, m.call));
    });
  });
  return relay;
}

const backends: { name: string; open(): Counters }[] = [
  { name: 'memory', open: () => new MemoryCounters() },
  { name: 'relay', open: loopbackRelay },
  {
    name: 'redis',
    open: () => {
      return new RedisCounters(redis().url, { prefix: `t${prefixN++}:`, log: silentLogger() });
    },
  },
];

for (const b of backends) {
  describe(`counters: ${b.name}`, () => {
    let c: Counters;
    before(() => {
      c = b.open();
    });
    after(async () => {
      await c.close();
    });

    test('sliding window: admits the limit, refuses without counting, frees a slot as the oldest leaves', async () => {
      const got = [];
      for (let i = 0; i < 4; i++) got.push(await c.rate('w', 3, 400));
      assert.deepEqual(
        got.map((v) => [v.allowed, v.remaining]),
        [
          [true, 2],
          [true, 1],
          [true, 0],
          [false, 0],
        ],
      );
      const refused = got[3];
      assert.ok(
        refused !== undefined && refused.resetMs > 0 && refused.resetMs <= 400,
        `reset ${refused?.resetMs}`,
      );
      await waitFor('a slot to free', async () => ((await c.rate('w', 3, 400)).allowed ? true : undefined));
    });

    test('peekRate: what a check would answer, without counting (kubectl svc explain)', async () => {
      assert.deepEqual(await c.peekRate('pw', 2, 60_000), { allowed: true, remaining: 1, resetMs: 60_000 });
      assert.equal((await c.peekRate('pw', 2, 60_000)).remaining, 1, 'the peek counted nothing');
      assert.equal((await c.rate('pw', 2, 60_000)).remaining, 1);
      const one = await c.peekRate('pw', 2, 60_000);
      assert.deepEqual([one.allowed, one.remaining], [true, 0]);
      assert.ok(one.resetMs > 0 && one.resetMs <= 60_000, `reset ${one.resetMs}`);
      assert.equal((await c.rate('pw', 2, 60_000)).allowed, true, 'the second request still fits');
      const spent = await c.peekRate('pw', 2, 60_000);
      assert.deepEqual([spent.allowed, spent.remaining], [false, 0]);
      assert.equal((await c.rate('pw', 2, 60_000)).allowed, false);
    });

    test('quota: a fixed period counted from the first request; peek; reset one; reset a group', async () => {
      assert.equal(await c.peekQuota('q1'), undefined);
      assert.equal((await c.quota('q1', 'k', 60_000)).used, 1);
      const second = await c.quota('q1', 'k', 60_000);
      assert.equal(second.used, 2);
      assert.ok(second.ttlMs > 0 && second.ttlMs <= 60_000);
      assert.equal((await c.peekQuota('q1'))?.used, 2);
      assert.equal((await c.quota('q1:api', 'k', 60_000)).used, 1);
      await c.resetQuota('q1');
      assert.equal(await c.peekQuota('q1'), undefined);
      assert.equal((await c.quota('q1', 'k', 60_000)).used, 1, 'a new period');
      await c.quota('q1:api', 'k', 60_000);
      await c.resetGroup('k');
      assert.equal(await c.peekQuota('q1'), undefined);
      assert.equal(await c.peekQuota('q1:api'), undefined);
      assert.equal((await c.quota('short', 'k2', 50)).used, 1);
      await waitFor('the period to end', async () =>
        (await c.quota('short', 'k2', 50)).used === 1 ? true : undefined,
      );
    });

    test('rate then quota: the quota counts only what the window admits, in the group of the key', async () => {
      const rate = { name: 'rq-w', limit: 2, windowMs: 60_000 };
      const quota = { name: 'rq-q', group: 'rq-k', periodMs: 60_000 };
      const got = [];
      for (let i = 0; i < 3; i++) got.push(await c.rateThenQuota(rate, quota));
      assert.deepEqual(
        got.map((v) => [v.rate.allowed, v.rate.remaining, v.quota?.used]),
        [
          [true, 1, 1],
          [true, 0, 2],
          [false, 0, undefined],
        ],
      );
      assert.equal((await c.peekQuota('rq-q'))?.used, 2, 'the refused request was not counted');
      assert.equal((await c.rate('rq-w', 2, 60_000)).allowed, false, 'one window with rate()');
      await c.resetGroup('rq-k');
      assert.equal(await c.peekQuota('rq-q'), undefined, 'the count joined the key group');
    });
  });
}

describe('counters: the memory clock', () => {
  test('a long window and period, moved through with an injected clock', async () => {
    let now = 1_000_000;
    const c = new MemoryCounters({ now: () => now });
    try {
      assert.equal((await c.rate('w', 1, 3_600_000)).allowed, true);
      now += 3_599_999;
      assert.equal((await c.rate('w', 1, 3_600_000)).allowed, false);
      now += 1;
      assert.equal((await c.rate('w', 1, 3_600_000)).allowed, true, 'sliding: the hour has passed');
      assert.equal((await c.quota('q', 'k', 86_400_000)).used, 1);
      now += 86_399_999;
      assert.equal((await c.quota('q', 'k', 86_400_000)).used, 2);
      now += 1;
      assert.equal(
        (await c.quota('q', 'k', 86_400_000)).used,
        1,
        'renewed by the first request after the period',
      );
    } finally {
      await c.close();
    }
  });
});

describe('counters: exact across clients of one Redis', () => {
  test('200 concurrent checks from two clients against rate 50: exactly 50 admitted', async () => {
    const a = new RedisCounters(redis().url, { prefix: 'exact:', log: silentLogger() });
    const b = new RedisCounters(redis().url, { prefix: 'exact:', log: silentLogger() });
    try {
      const verdicts = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).rate('shared', 50, 60_000)),
      );
      assert.equal(verdicts.filter((v) => v.allowed).length, 50);
      const quotas = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).quota('shared-q', 'g', 60_000)),
      );
      assert.deepEqual(
        quotas.map((q) => q.used).sort((x, y) => x - y),
        Array.from({ length: 200 }, (_, i) => i + 1),
        'every increment is counted once',
      );
      const both = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 === 0 ? a : b).rateThenQuota(
            { name: 'shared-rq', limit: 50, windowMs: 60_000 },
            { name: 'shared-rq-q', group: 'g2', periodMs: 60_000 },
          ),
        ),
      );
      assert.equal(both.filter((v) => v.rate.allowed).length, 50);
      assert.deepEqual(
        both.flatMap((v) => (v.quota === undefined ? [] : [v.quota.used])).sort((x, y) => x - y),
        Array.from({ length: 50 }, (_, i) => i + 1),
        'rate and quota together: the 50 admitted counted once each',
      );
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('counters: one Redis batch', () => {
  test('checks sent together are decided in order, as one by one, and the next batch sees them', async () => {
    const c = new RedisCounters(redis().url, { prefix: 'batch:', log: silentLogger() });
    try {
      // One turn of the event loop: interleaved windows, quota counts and both at once.
      const [a, b, q, rq] = await Promise.all([
        Promise.all(Array.from({ length: 5 }, () => c.rate('a', 3, 60_000))),
        Promise.all(Array.from({ length: 4 }, () => c.rate('b', 10, 60_000))),
        Promise.all(Array.from({ length: 3 }, () => c.quota('q', 'g', 60_000))),
        Promise.all(
          Array.from({ length: 4 }, () =>
            c.rateThenQuota(
              { name: 'rq', limit: 2, windowMs: 60_000 },
              { name: 'rq-q', group: 'g', periodMs: 60_000 },
            ),
          ),
        ),
      ]);
      assert.deepEqual(
        a.map((v) => [v.allowed, v.remaining]),
        [
          [true, 2],
          [true, 1],
          [true, 0],
          [false, 0],
          [false, 0],
        ],
      );
      assert.deepEqual(
        b.map((v) => v.remaining),
        [9, 8, 7, 6],
      );
      for (const v of [...a, ...b]) assert.ok(v.resetMs > 59_000 && v.resetMs <= 60_000, String(v.resetMs));
      assert.deepEqual(
        q.map((u) => u.used),
        [1, 2, 3],
      );
      for (const u of q) assert.ok(u.ttlMs > 59_000 && u.ttlMs <= 60_000, String(u.ttlMs));
      assert.deepEqual(
        rq.map((v) => [v.rate.allowed, v.quota?.used]),
        [
          [true, 1],
          [true, 2],
          [false, undefined],
          [false, undefined],
        ],
      );
      // The next batch starts from what this one wrote.
      assert.equal((await c.rate('a', 3, 60_000)).allowed, false);
      assert.equal((await c.rate('b', 10, 60_000)).remaining, 5);
      assert.equal((await c.quota('q', 'g', 60_000)).used, 4);
      assert.deepEqual(await c.peekQuota('rq-q').then((u) => u?.used), 2);
      // A reset of the group ends both quota periods; windows are not quotas and stay.
      await c.resetGroup('g');
      assert.equal((await c.quota('q', 'g', 60_000)).used, 1);
      assert.equal((await c.rate('a', 3, 60_000)).allowed, false);
    } finally {
      await c.close();
    }
  });

  test('interleaved checks of two windows, and one window checked with two limits, in order', async () => {
    const c = new RedisCounters(redis().url, { prefix: 'interleaved:', log: silentLogger() });
    try {
      const order = ['x', 'y', 'x', 'y', 'x', 'x'] as const;
      const got = await Promise.all(order.map((n) => c.rate(n, n === 'x' ? 2 : 1, 60_000)));
      assert.deepEqual(
        got.map((v, i) => `${order[i] ?? ''}:${v.allowed ? 'ok' : 'no'}:${String(v.remaining)}`),
        ['x:ok:1', 'y:ok:0', 'x:ok:0', 'y:no:0', 'x:no:0', 'x:no:0'],
      );
      // One window, two limits in one batch: the first run counts before the second is decided.
      const mixed = await Promise.all([
        c.rate('z', 3, 60_000),
        c.rate('z', 1, 60_000),
        c.rate('z', 3, 60_000),
      ]);
      assert.deepEqual(
        mixed.map((v) => v.allowed),
        [true, false, true],
      );
    } finally {
      await c.close();
    }
  });
});
