import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callHook, loadHook } from './load.ts';

test('loadHook says why a hook cannot be loaded', async () => {
  const outside = await mkdtemp(join(tmpdir(), 'svc-outside-'));
  const dir = await mkdtemp(join(tmpdir(), 'svc-plugins-'));
  await writeFile(join(outside, 'evil.mjs'), 'export function f() { return undefined; }');
  await writeFile(join(dir, 'ok.mjs'), 'export function f() { return { setHeaders: { a: "1" } }; }');
  await writeFile(join(dir, 'broken.mjs'), 'export function f( {');
  await symlink(join(outside, 'evil.mjs'), join(dir, 'link.mjs'));
  const rows: [string | undefined, string, string, RegExp][] = [
    [undefined, 'ok.mjs', 'f', /plugin_dir is not set/],
    [dir, 'missing.mjs', 'f', /at\.path: missing\.mjs can't be read in plugin_dir/],
    [dir, 'link.mjs', 'f', /leads out of plugin_dir/],
    [dir, '../evil.mjs', 'f', /stays inside/],
    [dir, 'broken.mjs', 'f', /failed to load/],
    [dir, 'ok.mjs', 'g', /exports no function g/],
  ];
  for (const [pluginDir, path, name, why] of rows) {
    await assert.rejects(loadHook({ name, path }, pluginDir, 'at'), why, path);
  }
  const ok = await loadHook({ name: 'f', path: 'ok.mjs' }, dir, 'at');
  assert.equal(ok.label, 'ok.mjs#f');
});

test('callHook answers what the hook returns, or fails on a throw or a timeout', async () => {
  const req = {} as Parameters<typeof callHook>[1];
  assert.deepEqual(await callHook({ label: 'a', fn: () => ({ x: 1 }) }, req, 100), { x: 1 });
  await assert.rejects(
    callHook(
      {
        label: 'b',
        fn: () => {
          throw new Error('sync');
        },
      },
      req,
      100,
    ),
    /sync/,
  );
  await assert.rejects(
    callHook({ label: 'c', fn: () => new Promise(() => undefined) }, req, 50),
    /within 50 ms/,
  );
});
