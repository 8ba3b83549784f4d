import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { withNodeLock } from './lock.ts';

const quiet = (): void => undefined;

test('two starts at once run one after the other', async () => {
  const dir = path.join(await mkdtemp(path.join(tmpdir(), 'svc-node-lock-')), 'node');
  const events: string[] = [];
  const job = (name: string) => async (): Promise<string> => {
    events.push(`${name} in`);
    await delay(300);
    events.push(`${name} out`);
    return name;
  };
  const results = await Promise.all([withNodeLock(dir, job('a'), quiet), withNodeLock(dir, job('b'), quiet)]);
  assert.deepEqual(results, ['a', 'b']);
  // Either may take the lock first (their mkdirs race in libuv's pool); they never overlap.
  const first = events[0] === 'b in' ? 'b' : 'a';
  const second = first === 'a' ? 'b' : 'a';
  assert.deepEqual(events, [`${first} in`, `${first} out`, `${second} in`, `${second} out`]);
  assert.equal(existsSync(`${dir}.lock`), false, 'released');
});

test('a lock left by a process that died is taken over', async () => {
  const dir = path.join(await mkdtemp(path.join(tmpdir(), 'svc-node-lock-')), 'node');
  await mkdir(`${dir}.lock`);
  // A pid that is not running (pid_max is below 2^22 on Linux).
  await writeFile(path.join(`${dir}.lock`, 'pid'), '4194303');
  assert.equal(await withNodeLock(dir, () => Promise.resolve('ran'), quiet, 5_000), 'ran');
});

test('a live holder makes the caller wait, then fail at its deadline naming the pid', async () => {
  const dir = path.join(await mkdtemp(path.join(tmpdir(), 'svc-node-lock-')), 'node');
  await mkdir(`${dir}.lock`);
  await writeFile(path.join(`${dir}.lock`, 'pid'), String(process.pid));
  await assert.rejects(
    withNodeLock(dir, () => Promise.resolve('ran'), quiet, 1_500),
    new RegExp(`still held by pid ${String(process.pid)}`),
  );
});
