import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdleRelease, RELEASE_TURN_MS, releaseMemory } from './memory.ts';

/** This process's resident memory, MiB. */
function rssMiB(): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m?.[1] ?? NaN) / 1024;
}

/** A load's worth of short-lived objects (about 150 MiB of heap), unreachable once it returns. */
function churn(): number {
  const load: { n: number; s: string; a: number[] }[] = [];
  for (let i = 0; i < 1_000_000; i++) load.push({ n: i, s: `x${String(i)}`, a: [i] });
  return load.length;
}

test('releaseMemory gives what a large load freed back to the system, and leaves gc unexposed', () => {
  assert.equal(churn(), 1_000_000);
  const before = rssMiB();
  releaseMemory();
  const after = rssMiB();
  assert.ok(before - after > 50, `resident ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB after`);
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
});

test('IdleRelease releases once the routes have been quiet, each change starting the wait again', async () => {
  let released = 0;
  const idle = new IdleRelease({ quietMs: 80, release: () => released++ });
  idle.changed();
  await sleep(40);
  idle.changed();
  await sleep(50);
  assert.equal(released, 0, 'a change 40 ms in started the wait again');
  assert.equal(idle.pending, true);
  await sleep(60);
  assert.equal(released, 1);
  assert.equal(idle.pending, false);
  await sleep(120);
  assert.equal(released, 1, 'one release per quiet time');
});

test("IdleRelease: a worker's turn comes later, and a closed one never releases", async () => {
  let first = 0;
  let second = 0;
  const a = new IdleRelease({ quietMs: 20, turn: 0, release: () => first++ });
  const b = new IdleRelease({ quietMs: 20 - RELEASE_TURN_MS + 60, turn: 1, release: () => second++ });
  a.changed();
  b.changed();
  await sleep(45);
  assert.deepEqual([first, second], [1, 0]);
  await sleep(60);
  assert.deepEqual([first, second], [1, 1]);
  const closed = new IdleRelease({ quietMs: 10, release: () => first++ });
  closed.changed();
  closed.close();
  await sleep(40);
  assert.equal(first, 1);
});
