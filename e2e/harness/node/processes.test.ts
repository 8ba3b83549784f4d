import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { processIdentity } from './processes.ts';

test('a process is named by its pid and start time, the same while it runs, none once it is gone', async () => {
  const own = processIdentity(process.pid);
  assert.match(own ?? '', new RegExp(`^${process.pid}@\\d+$`));
  assert.equal(processIdentity(process.pid), own);
  // A command name with spaces and parentheses does not shift the fields.
  const child = spawn(process.execPath, ['-e', 'process.title = "a (b) c"; setTimeout(() => {}, 10000)']);
  const pid = child.pid ?? 0;
  await new Promise((r) => setTimeout(r, 300));
  const id = processIdentity(pid);
  assert.match(id ?? '', new RegExp(`^${pid}@\\d+$`));
  assert.notEqual(id, own);
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal(processIdentity(pid), undefined);
});
