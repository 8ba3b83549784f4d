/**
 * Plugins run off the gateway's event loop (gateway/plugins/runner.ts): a hook that loops gets
 * its request 500 with an error ID once `plugin_timeout_ms` has passed, while requests to other
 * APIs, with plugins or without, are answered meanwhile; the looping API answers again after it.
 * A hook of a busy loop that would end after 5 s (in the gateway's process, before plugins ran in
 * workers, the other API's answer waited for it) and one that never ends. Files and Redis stores,
 * fast path on and off.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pluginDirWith } from '../../testing/plugin-dir.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyless } from '../../testing/harness.ts';
import { describeEachSetup, provision } from '../../testing/tables.ts';

const TIMEOUT_MS = 1000;
const LOOPS = `
export function spin() { const end = Date.now() + 5000; while (Date.now() < end) {} }
export function forever() { while (true) {} }
export function tag() { return { setHeaders: { 'x-tag': 'tagged' } }; }
`;

let echo: Echo;
let pluginDir: string;
before(async () => {
  echo = await startEcho('echo');
  pluginDir = await pluginDirWith('svc-plugins-', { 'loops.mjs': LOOPS });
});
after(async () => {
  await echo.close();
});

const pre = (name: string): Record<string, unknown> => ({
  custom_middleware: { driver: 'svc', pre: [{ name, path: 'loops.mjs' }] },
});
const INTERNAL = /^\{"error":"Internal error \(ID [0-9a-f-]{36}\)"\}$/;

describeEachSetup(
  'plugin isolation',
  () => ({ argv: ['--plugin-dir', pluginDir, '--plugin-timeout-ms', String(TIMEOUT_MS)] }),
  ({ gw }) => {
    before(async () => {
      await provision(gw(), [
        keyless('spin', '/spin/', echo.url, pre('spin')),
        keyless('forever', '/forever/', echo.url, pre('forever')),
        keyless('tag', '/tag/', echo.url, pre('tag')),
        keyless('plain', '/plain/', echo.url),
      ]);
    });

    for (const looping of ['spin', 'forever']) {
      test(`a ${looping} hook times out while other APIs keep answering`, async () => {
        const started = performance.now();
        const stuck = gw().request({ fresh: true, path: `/${looping}/x` });
        // The looping request reaches its worker first.
        await new Promise((r) => setTimeout(r, 100));
        const others = await Promise.all(
          ['/plain/x', '/tag/x'].map(async (path) => {
            const res = await gw().request({ fresh: true, path });
            return { path, status: res.status, at: performance.now() - started };
          }),
        );
        const res = await stuck;
        const took = performance.now() - started;
        for (const o of others) {
          assert.equal(o.status, 200, o.path);
          assert.ok(
            o.at < took,
            `${o.path} answered after the looping request, ${String(Math.round(o.at))} ms`,
          );
        }
        assert.equal(res.status, 500);
        assert.match(res.text, INTERNAL);
        assert.ok(took >= TIMEOUT_MS - 20 && took < 3000, `answered after ${String(Math.round(took))} ms`);
        // The worker was replaced: the API answers (and times out) again, the others still serve.
        const again = await gw().request({ fresh: true, path: `/${looping}/y` });
        assert.equal(again.status, 500);
        assert.equal((await gw().request({ fresh: true, path: '/tag/y' })).status, 200);
      });
    }
  },
);
