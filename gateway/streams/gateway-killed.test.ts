/**
 * A gateway that dies without stopping its Bento (SIGKILL: no handler runs, as with the OOM killer
 * or a crash): Bento must end with it and free its port, and a new gateway on the same data
 * directory must start and serve the streams; with one worker and with several.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { send } from '../testing/client.ts';
import { allWorkersServing, spawnGateway } from '../testing/harness.ts';
import { alive, bentoPorts, bentosUnder } from './process-testing.ts';
import { openSse, sseRelay, streamsDocument } from './testing.ts';

/** Whether a listener can bind `port` on 127.0.0.1 now (nothing holds it). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => {
      resolve(false);
    });
    srv.listen(port, '127.0.0.1', () => {
      srv.close(() => {
        resolve(true);
      });
    });
  });
}

const relay = streamsDocument('tethered', { relay: sseRelay() });

for (const workers of [1, 2]) {
  describe(`a gateway killed with SIGKILL (--workers ${workers})`, () => {
    test('its Bento exits within seconds, the ports are free, and a new gateway starts', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-streams-killed-'));
      const args = ['--workers', String(workers), '--data-dir', dataDir, '--streaming-enabled'];
      const gw = await spawnGateway(args);
      let bentos: number[] = [];
      try {
        if (workers > 1) await allWorkersServing(gw, 'every worker');
        const res = await gw.admin('POST', '/svc/apis/oas', relay);
        assert.equal(res.status, 200, res.text);
        const reload = await gw.admin('GET', '/svc/reload');
        assert.equal(reload.status, 200, reload.text);
        bentos = bentosUnder(gw.child.pid ?? 0);
        assert.equal(bentos.length, 1, `one Bento under the gateway: ${bentos.join(', ')}`);
        const ports = bentos.flatMap(bentoPorts);
        assert.equal(ports.length, 1);

        gw.child.kill('SIGKILL');
        await gw.exited;
        const t0 = performance.now();
        await waitFor('Bento gone', () => (bentos.every((pid) => !alive(pid)) ? true : undefined), 10_000);
        const took = performance.now() - t0;
        assert.ok(took < 5_000, `Bento ended ${Math.round(took)} ms after its gateway`);
        for (const port of [...ports, gw.port])
          assert.ok(
            await waitFor(`port ${port} free`, async () => ((await bindable(port)) ? true : undefined)),
          );
      } finally {
        // Whatever the outcome, leave nothing behind.
        for (const pid of bentos)
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone
          }
      }

      // The same data directory: the stored streams API comes back and runs.
      const next = await spawnGateway(args);
      try {
        await waitFor('the stream on the new gateway', async () => {
          const c = await openSse(next.port, '/tethered/sse');
          c.close();
          return c.status === 200 ? true : undefined;
        });
        const c = await openSse(next.port, '/tethered/sse');
        const pub = await send({
          port: next.port,
          method: 'POST',
          path: '/tethered/post',
          body: 'again',
          fresh: true,
        });
        assert.equal(pub.status, 200, pub.text);
        await waitFor('delivered', () => (c.events.includes('again') ? true : undefined));
        c.close();
      } finally {
        await next.stop();
      }
    });
  });
}
