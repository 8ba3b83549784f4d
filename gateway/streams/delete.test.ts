/**
 * Deleting a streams API on a real gateway process with its real Bento, with one worker and with
 * several: Bento 1.16.2's `DELETE /streams/{id}` never answers for a stream with an `http_server`
 * output (its graceful stop waits for a server it does not own in streams mode). The delete must
 * take effect within about a second: the API's routes 404, Bento runs nothing of it (asked through
 * its own `/streams`), the reload says nothing false about the APIs left in place (no "left out",
 * no error-level log line), and the other API keeps serving.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { send } from '../testing/client.ts';
import { allWorkersServing, spawnGateway, type GatewayProcess } from '../testing/harness.ts';
import { bentoPorts, bentosUnder } from './process-testing.ts';
import { openSse, sseRelay, streamsDocument } from './testing.ts';

/** Bento's own list of the streams it runs. */
async function bentoStreams(gw: GatewayProcess): Promise<string[]> {
  const [pid] = bentosUnder(gw.child.pid ?? 0);
  assert.ok(pid !== undefined, 'a Bento runs under the gateway');
  const [port] = bentoPorts(pid);
  assert.ok(port !== undefined, `the port of Bento ${pid}`);
  const r = await send({ port, path: '/streams', fresh: true });
  assert.equal(r.status, 200, r.text);
  return Object.keys(JSON.parse(r.text) as object).sort();
}

/** Log lines (JSON) the gateway wrote after `from` characters of its stderr. */
function linesSince(gw: GatewayProcess, from: number): Record<string, unknown>[] {
  return gw
    .stderr()
    .slice(from)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

for (const workers of [1, 2]) {
  describe(`deleting a streams API (--workers ${workers})`, () => {
    let gw: GatewayProcess;
    before(async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-streams-delete-'));
      gw = await spawnGateway(['--workers', String(workers), '--data-dir', dataDir, '--streaming-enabled']);
      if (workers > 1) await allWorkersServing(gw, 'every worker');
    });
    after(async () => {
      await (gw as GatewayProcess | undefined)?.stop();
    });

    test('takes effect within a second; the other API keeps serving; the reload and logs are true', async () => {
      // `gone` has an http_server output (the kind Bento's DELETE hangs on); `kept` does not.
      const gone = streamsDocument('gone', { relay: sseRelay() });
      const kept = streamsDocument('kept', {
        relay: sseRelay(),
        sink: { input: { http_server: { path: '/sink', ws_path: '' } }, output: { drop: {} } },
      });
      for (const doc of [gone, kept]) {
        const res = await gw.admin('POST', '/svc/apis/oas', doc);
        assert.equal(res.status, 200, res.text);
      }
      const loaded = await gw.admin('GET', '/svc/reload');
      assert.equal(loaded.status, 200, loaded.text);
      assert.deepEqual(await bentoStreams(gw), ['gone.relay', 'kept.relay', 'kept.sink']);
      // No consumer on the stream that goes (Bento's DELETE then never answers); one on the kept
      // stream all along, which must not notice.
      const c = await openSse(gw.port, '/kept/sse');
      assert.equal(c.status, 200);

      const from = gw.stderr().length;
      const t0 = performance.now();
      const del = await gw.admin('DELETE', '/svc/apis/oas/gone');
      assert.equal(del.status, 200, del.text);
      const reload = await gw.admin('GET', '/svc/reload');
      const took = performance.now() - t0;
      assert.equal(reload.status, 200, reload.text);
      assert.deepEqual(
        reload.json,
        { status: 'ok', message: '' },
        'nothing to report: every API left is served',
      );
      assert.ok(took < 1500, `the delete and its reload took ${Math.round(took)} ms`);

      const route = await send({ port: gw.port, method: 'POST', path: '/gone/post', body: 'x', fresh: true });
      assert.equal(route.status, 404, route.text);
      assert.deepEqual(await bentoStreams(gw), ['kept.relay', 'kept.sink'], 'nothing of gone runs in Bento');

      const pub = await send({
        port: gw.port,
        method: 'POST',
        path: '/kept/post',
        body: 'still here',
        fresh: true,
      });
      assert.equal(pub.status, 200, pub.text);
      await waitFor('the kept stream delivers', () => (c.events.includes('still here') ? true : undefined));
      c.close();

      const lines = linesSince(gw, from);
      const errors = lines.filter((l) => l.level === 'error');
      assert.deepEqual(errors, [], 'no error-level line');
      const bentoSays = lines.filter((l) => l.message === 'stream processor says');
      assert.deepEqual(bentoSays, [], 'Bento reported nothing wrong');
      assert.ok(!lines.some((l) => JSON.stringify(l).includes('left out')), 'no API reported left out');
      assert.ok(
        lines.some((l) => l.message === 'stream deleted' && l.stream === 'gone.relay'),
        'the deletion is logged',
      );
    });
  });
}
