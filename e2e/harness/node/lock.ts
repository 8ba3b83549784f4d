/**
 * One start or stop of the node at a time on the machine: several test processes (a person's,
 * CI's, another engineer's) may call startNode() together on a node that is not running, and two
 * starts racing would each launch an etcd, an apiserver and a kubelet on the same ports and
 * directory. The lock is a directory made atomically beside the node's, holding its owner's pid;
 * a lock whose owner died is taken over.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { alive } from './processes.ts';

/** Runs `fn` holding the node's start/stop lock; waits up to `timeoutMs` for another holder. */
export async function withNodeLock<T>(
  dir: string,
  fn: () => Promise<T>,
  log: (m: string) => void,
  timeoutMs = 20 * 60_000,
): Promise<T> {
  const lock = `${dir}.lock`;
  const owner = path.join(lock, 'pid');
  await mkdir(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  let said = false;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(owner, String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(await readFile(owner, 'utf8').catch(() => ''));
      // No pid yet: its owner is between mkdir and writeFile, or died there (taken over later).
      if (pid > 0 && !alive(pid)) {
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`node: ${lock} still held by pid ${String(pid)}`, { cause: err });
      if (!said) log(`waiting for another start or stop of the node (pid ${String(pid)})`);
      said = true;
      await delay(1000);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
