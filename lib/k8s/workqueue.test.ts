import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, WorkQueue } from './workqueue.ts';

/** A promise with its resolver, to hold a handler in work. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function until(cond: () => boolean, what: string, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

test('backoff doubles from the base and stops at the cap', () => {
  assert.deepEqual(
    [0, 1, 2, 3, 4, 10, 100].map((n) => backoffMs(n, 100, 1000)),
    [0, 100, 200, 400, 800, 1000, 1000],
  );
});

test('a key added many times while waiting is worked on once', async () => {
  const seen: string[] = [];
  const gate = deferred();
  const q = new WorkQueue(
    async (key) => {
      seen.push(key);
      await gate.promise;
      return {};
    },
    { workers: 1 },
  );
  q.add('a'); // in work, holding the only worker
  q.add('b');
  q.add('b');
  q.add('b');
  assert.equal(q.depth, 1);
  gate.resolve();
  await q.drained();
  assert.deepEqual(seen, ['a', 'b']);
});

test('a key is never worked on twice at once; added during work, it runs again after', async () => {
  let inWork = 0;
  let maxInWork = 0;
  let calls = 0;
  const gate = deferred();
  const q = new WorkQueue(
    async () => {
      calls++;
      inWork++;
      maxInWork = Math.max(maxInWork, inWork);
      if (calls === 1) await gate.promise;
      inWork--;
      return {};
    },
    { workers: 4 },
  );
  q.add('k');
  await until(() => calls === 1, 'first call');
  q.add('k');
  q.add('k');
  assert.equal(calls, 1, 'not started again while in work');
  gate.resolve();
  await until(() => calls === 2, 'second call');
  await q.drained();
  assert.equal(maxInWork, 1);
  assert.equal(calls, 2);
});

test('failures are retried with backoff and forgotten after a success', async () => {
  let calls = 0;
  const q = new WorkQueue(
    () => {
      calls++;
      if (calls < 3) return Promise.reject(new Error('boom'));
      return Promise.resolve({});
    },
    { workers: 1, baseBackoffMs: 1, maxBackoffMs: 5 },
  );
  q.add('k');
  await until(() => calls === 3, 'third call');
  await q.drained();
  assert.equal(q.failures('k'), 0);
});

test('requeueAfterMs brings a key back without counting a failure', async () => {
  let calls = 0;
  const q = new WorkQueue(
    () => {
      calls++;
      return Promise.resolve(calls === 1 ? { requeueAfterMs: 1 } : {});
    },
    { workers: 1 },
  );
  q.add('k');
  await until(() => calls === 2, 'requeued call');
  assert.equal(q.failures('k'), 0);
  await q.stop();
});

test('workers run different keys in parallel up to the limit', async () => {
  let inWork = 0;
  let maxInWork = 0;
  const gate = deferred();
  const q = new WorkQueue(
    async () => {
      inWork++;
      maxInWork = Math.max(maxInWork, inWork);
      await gate.promise;
      inWork--;
      return {};
    },
    { workers: 2 },
  );
  for (const k of ['a', 'b', 'c', 'd']) q.add(k);
  await until(() => inWork === 2, 'two in work');
  gate.resolve();
  await q.drained();
  assert.equal(maxInWork, 2);
});

test('a paused queue holds keys until started', async () => {
  const seen: string[] = [];
  const q = new WorkQueue(
    (key) => {
      seen.push(key);
      return Promise.resolve({});
    },
    { workers: 1, paused: true },
  );
  q.add('a');
  q.add('b');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen, []);
  q.start();
  await q.drained();
  assert.deepEqual(seen, ['a', 'b']);
});

test('options left undefined keep the default backoff (the manager passes its own, often unset)', async () => {
  let attempts = 0;
  const q = new WorkQueue(
    () => {
      attempts++;
      return Promise.reject(new Error('down'));
    },
    { workers: 1, baseBackoffMs: undefined, maxBackoffMs: undefined },
  );
  q.add('k');
  // The first retry is due after the default 500 ms; an undefined base made it NaN (1 ms).
  await new Promise((r) => setTimeout(r, 200));
  await q.stop();
  assert.equal(attempts, 1);
});
