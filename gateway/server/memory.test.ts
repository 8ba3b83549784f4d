import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { releaseMemory } from './memory.ts';

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
