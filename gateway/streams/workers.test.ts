/**
 * Streams on a gateway node with `--workers 2` (a real `node gateway/main.ts`): the primary
 * supervises the node's one Bento and the workers reach it over loopback; messages published
 * through either worker reach consumers on either; `/ready` and `/metrics` say Bento's state,
 * and a Bento killed is started again by the primary, streams back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { send } from '../testing/client.ts';
import { allWorkersServing, spawnWorkers, type GatewayProcess } from '../testing/harness.ts';
import { bentosUnder, children } from './process-testing.ts';
import { addStreams, openSse, sseRelay, streamsDocument, type SseConsumer } from './testing.ts';

async function metric(port: number, name: string): Promise<number | undefined> {
  const r = await send({ port, path: '/metrics', fresh: true });
  const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('streams with --workers 2', () => {
  let gw: GatewayProcess;
  before(async () => {
    gw = await spawnWorkers('svc-gw-streams-workers-', ['--streaming-enabled']);
    await allWorkersServing(gw);
  });
  after(async () => {
    await gw.stop();
  });

  test('one Bento for the node, supervised by the primary; every worker serves the streams', async () => {
    const primary = gw.child.pid ?? 0;
    assert.deepEqual(bentosUnder(primary), [], 'no Bento before an API with streams');
    await addStreams(gw, streamsDocument('wfeed', { relay: sseRelay() }));
    const bentos = bentosUnder(primary);
    assert.equal(bentos.length, 1, `one Bento on the node: ${bentos.join(', ')}`);
    assert.ok(
      children(primary).some((c) => c.command.startsWith('bento')),
      "Bento is the primary's child, not a worker's",
    );
    // Consumers and publishers on fresh connections land on both workers.
    const consumers: SseConsumer[] = [];
    for (let i = 0; i < 4; i++) consumers.push(await openSse(gw.port, '/wfeed/sse', { connection: 'close' }));
    for (const c of consumers) assert.equal(c.status, 200);
    const ids = Array.from({ length: 20 }, (_, i) => `w-${i}`);
    for (const id of ids) {
      const r = await send({ port: gw.port, method: 'POST', path: '/wfeed/post', body: id, fresh: true });
      assert.equal(r.status, 200, r.text);
    }
    const all = await waitFor(
      'every message',
      () => {
        const got = consumers.flatMap((c) => c.events);
        return got.length >= ids.length ? got : undefined;
      },
      20_000,
    );
    assert.deepEqual([...all].sort(), [...ids].sort());
    for (const c of consumers) c.close();
    assert.equal(await metric(gw.port, 'svc_gateway_streams_processor_up'), 1);
    assert.equal(await metric(gw.port, 'svc_gateway_streams'), 1);
  });

  test('Bento killed: /ready says so, the primary starts it again, streams back', async () => {
    const primary = gw.child.pid ?? 0;
    const [before] = bentosUnder(primary);
    assert.ok(before !== undefined);
    process.kill(before, 'SIGKILL');
    // While it is down, /ready names it (it may be back before a probe lands: then 200).
    const probe = await send({ port: gw.port, path: '/ready', fresh: true });
    if (probe.status === 503) assert.match(probe.text, /stream processor \(Bento\) is (down|starting)/);
    await waitFor(
      'Bento back',
      async () => {
        const now = bentosUnder(primary);
        if (now.length !== 1 || now[0] === before) return undefined;
        return (await metric(gw.port, 'svc_gateway_streams_processor_up')) === 1 ? true : undefined;
      },
      20_000,
    );
    assert.equal(await metric(gw.port, 'svc_gateway_streams_processor_restarts'), 1);
    for (let i = 0; i < 4; i++) {
      const ready = await send({ port: gw.port, path: '/ready', fresh: true });
      assert.equal(ready.status, 200, ready.text);
    }
    const c = await openSse(gw.port, '/wfeed/sse');
    await waitFor(
      'a message after the restart',
      async () => {
        const r = await send({
          port: gw.port,
          method: 'POST',
          path: '/wfeed/post',
          body: 'again',
          fresh: true,
        });
        return r.status === 200 && c.events.includes('again');
      },
      20_000,
      300,
    );
    c.close();
  });

  test('stopping the node stops its Bento', async () => {
    const primary = gw.child.pid ?? 0;
    const [bento] = bentosUnder(primary);
    assert.ok(bento !== undefined);
    assert.equal(await gw.stop(), 0);
    await waitFor(
      'Bento gone',
      () => {
        try {
          process.kill(bento, 0);
          return undefined;
        } catch {
          return true;
        }
      },
      10_000,
    );
  });
});
