/**
 * A relayed subscription (proxyOnly) whose client reads slowly: the gateway stops reading the
 * upstream while more than `HIGH_WATER` bytes wait for the client, so what the client has not read
 * stays with the upstream (its socket's send buffer grows) and not in the gateway's memory; once
 * the client reads again, every message arrives, in order, and the operation completes.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { waitFor } from '../../lib/testing/wait.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { HIGH_WATER } from './subscriptions.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

const SDL = 'type Query { ok: Boolean }\ntype Subscription { big: String }';
/** What the upstream sends for one subscription: 256 messages of 256 KiB, 64 MiB in all. */
const COUNT = 256;
const CHUNK = 'x'.repeat(256 * 1024);

let gw: InProcessGateway;
/** The upstream's socket of the relayed subscription. */
let upstreamSocket: WebSocket | undefined;
const server = createServer();
const wss = new WebSocketServer({ server, handleProtocols: () => 'graphql-transport-ws' });

before(async () => {
  wss.on('connection', (ws) => {
    upstreamSocket = ws;
    ws.on('message', (raw: Buffer) => {
      const m = JSON.parse(raw.toString()) as { type: string; id?: string };
      if (m.type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
      if (m.type === 'subscribe') {
        for (let i = 0; i < COUNT; i++)
          ws.send(
            JSON.stringify({ id: m.id, type: 'next', payload: { data: { big: `${String(i)}:${CHUNK}` } } }),
          );
        ws.send(JSON.stringify({ id: m.id, type: 'complete' }));
      }
    });
  });
  const url = await listenLocal(server);
  gw = await startGateway();
  await gw.addApi(
    keyless('big', '/big/', url, {
      graphql: { enabled: true, execution_mode: 'proxyOnly', schema: SDL },
    }),
  );
  await gw.reload();
});

after(async () => {
  for (const c of wss.clients) c.terminate();
  await stopAll(gw, {
    close: () => {
      wss.close();
      return closeServer(server);
    },
  });
});

/** A message the client got. */
interface Got {
  type: string;
  payload?: { data: { big: string } };
}

/**
 * A client of the gateway, acknowledged, that stops reading its socket and then subscribes to
 * `big`: the messages it got (once it reads again).
 */
async function pausedSubscriber(): Promise<{ ws: WebSocket; got: Got[] }> {
  const ws = new WebSocket(`ws://127.0.0.1:${String(gw.port)}/big/`, 'graphql-transport-ws');
  const got: Got[] = [];
  ws.on('message', (raw: Buffer) => got.push(JSON.parse(raw.toString()) as Got));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'connection_init' }));
  await waitFor('connection_ack', () => got.some((m) => m.type === 'connection_ack'), 10_000);
  ws.pause();
  ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { big }' } }));
  return { ws, got };
}

test('a client that stops reading holds the upstream back; reading again, it gets every message in order', async () => {
  const { ws, got } = await pausedSubscriber();
  await waitFor('the upstream subscribed', () => upstreamSocket !== undefined, 10_000);
  // Once nothing moves any more, most of the 64 MiB is still waiting at the upstream: the gateway
  // holds about HIGH_WATER for the client, and the kernel's buffers of the two connections take
  // at most a few MiB each (without the pause, the gateway reads all of it and nothing waits).
  let last = -1;
  await waitFor(
    'the upstream to stop sending',
    () => {
      const now = upstreamSocket?.bufferedAmount ?? 0;
      const still = now === last;
      last = now;
      return still;
    },
    20_000,
    500,
  );
  const waiting = upstreamSocket?.bufferedAmount ?? 0;
  assert.ok(
    waiting > (COUNT * CHUNK.length) / 2 && HIGH_WATER < (COUNT * CHUNK.length) / 8,
    `only ${String(waiting)} bytes wait at the upstream: the gateway read on for a client that did not`,
  );
  ws.resume();
  await waitFor('complete', () => got.some((m) => m.type === 'complete'), 30_000);
  const data = got.filter((m) => m.type === 'next').map((m) => m.payload?.data.big ?? '');
  assert.equal(data.length, COUNT);
  assert.deepEqual(
    data.map((d) => Number(d.slice(0, d.indexOf(':')))),
    Array.from({ length: COUNT }, (_, i) => i),
  );
  assert.ok(data.every((d) => d.endsWith(CHUNK)));
  ws.close();
});

// (A client that sends a close frame but never reads the answer holds its connection for the
// closing handshake's 30 s, as any WebSocket server does; the upstream's then closes with it.)
test('a client that is cut off while the upstream is held back: the upstream connection closes at once', async () => {
  upstreamSocket = undefined;
  const { ws } = await pausedSubscriber();
  // The upstream's socket of this subscription (the module's variable, set by its connection).
  const current = (): WebSocket | undefined => upstreamSocket;
  const upstream = await waitFor('the upstream subscribed', current, 10_000);
  const closed = new Promise<void>((resolve) => {
    upstream.once('close', () => {
      resolve();
    });
  });
  // Held back: the gateway has stopped reading the upstream.
  await waitFor(
    'the gateway to stop reading',
    () => upstream.bufferedAmount > (COUNT * CHUNK.length) / 2,
    20_000,
  );
  ws.terminate();
  const t0 = Date.now();
  await closed;
  assert.ok(Date.now() - t0 < 5_000, `the upstream connection closed after ${String(Date.now() - t0)} ms`);
});
