/**
 * Relayed GraphQL subscriptions (gateway/graphql/subscriptions.ts) as an outside reviewer tries
 * them against a real gateway process (two workers) and a real WebSocket upstream speaking
 * graphql-transport-ws that sends a `next` every 50 ms to each subscription:
 *
 * - bad input, each class: not JSON, a binary frame, JSON that is not an object, an unknown type,
 *   a subscribe without an ID, without a payload or with a query that is not a string, a legacy
 *   `start` without an ID, a message over 1 MiB: the client's socket is closed (4400 "Invalid
 *   message received" as a graphql-transport-ws server closes it; 1009 for the size), the
 *   upstream's connection is closed too, and none of it reaches the upstream;
 * - clients leaving early: mid-subscription (the TCP connection destroyed, no close frame) and
 *   mid-upgrade: the upstream's connections close, the gateway's handles and file descriptors
 *   come back to where they were, nothing unhandled in its log;
 * - killed, not stopped: SIGKILL of the workers mid-subscription: the client sees its connection
 *   end, the upstream sees its connection end, the restarted workers relay a new subscription;
 * - the upstream ending its connection without a close frame: the client's connection ends too;
 * - a client that sends its close frame and stops reading: its relayed subscription ends within
 *   the gateway's close wait (seconds), not when the client gives up.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { waitFor, type GatewayProc } from '../harness/processes.ts';
import { alive, backToBaseline, openResources, request, startGw, workersOf } from './start.ts';

/** 'closed' when `p` settles within `ms`, else 'hung' (the wait keeps the test running). */
const within = (p: Promise<unknown>, ms: number): Promise<'closed' | 'hung'> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.then(() => 'closed' as const),
    new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => {
        resolve('hung');
      }, ms);
    }),
  ]).finally(() => {
    clearTimeout(timer);
  });
};

const dir = mkdtempSync(join(tmpdir(), 'svc-subscription-faults-'));
const SECRET = 'subsFaultsSecretT7qL2x';
const admin = { 'x-svc-authorization': SECRET, 'content-type': 'application/json' };
const PROTOCOL = 'graphql-transport-ws';

/** One connection the upstream accepted: every message it got, and whether it closed. */
interface UpstreamConn {
  messages: string[];
  closed: Promise<void>;
  socket: WebSocket;
}

const conns: UpstreamConn[] = [];
const server = createServer();
/** Upgrades wait this long before the upstream accepts them (the mid-upgrade case sets it). */
let acceptDelayMs = 0;
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (offered) =>
    offered.has(PROTOCOL) ? PROTOCOL : offered.has('graphql-ws') ? 'graphql-ws' : false,
});
/** Each upgrade request the upstream got, with its connection's close. */
const upgrades: Promise<void>[] = [];
server.on('upgrade', (req: IncomingMessage, socket, head) => {
  upgrades.push(
    new Promise((resolve) =>
      socket.once('close', () => {
        resolve();
      }),
    ),
  );
  setTimeout(() => {
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: UpstreamConn = {
        messages: [],
        socket: ws,
        closed: new Promise((resolve) =>
          ws.once('close', () => {
            resolve();
          }),
        ),
      };
      conns.push(conn);
      const timers = new Set<NodeJS.Timeout>();
      ws.once('close', () => {
        for (const t of timers) clearInterval(t);
      });
      ws.on('message', (raw: Buffer, binary) => {
        conn.messages.push(binary ? `<binary ${String(raw.length)}>` : raw.toString());
        let m: { type?: string; id?: string };
        try {
          m = JSON.parse(raw.toString()) as typeof m;
        } catch {
          return;
        }
        if (m.type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
        if (m.type === 'subscribe') {
          let n = 0;
          const t = setInterval(() => {
            ws.send(JSON.stringify({ id: m.id, type: 'next', payload: { data: { tick: ++n } } }));
          }, 50);
          timers.add(t);
        }
      });
    });
  }, acceptDelayMs);
});

let gw: GatewayProc;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const upstream = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
  gw = await startGw({
    name: 'subscriptions',
    secret: SECRET,
    dataDir: join(dir, 'gw'),
    logDir: dir,
    workers: 2,
    env: { SVC_GW_METRICS_ENABLED: 'true' },
  });
  const put = await request(`${gw.url}/svc/apis`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({
      api_id: 'live',
      name: 'live',
      use_keyless: true,
      proxy: { listen_path: '/live/', target_url: upstream, strip_listen_path: true },
      graphql: {
        enabled: true,
        execution_mode: 'proxyOnly',
        schema: 'type Query { ok: Boolean }\ntype Subscription { tick: Int }',
      },
    }),
  });
  assert.equal(put.status, 200, put.body);
  const reload = await request(`${gw.url}/svc/reload`, { headers: admin });
  assert.equal(reload.status, 200, reload.body);
  await waitFor('both workers serving', () => gw.log().includes('"message":"all workers serving"'));
});

after(async () => {
  for (const c of wss.clients) c.terminate();
  wss.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A client of `live` through the gateway, acknowledged; its messages and how it closed. */
async function client(protocol = PROTOCOL): Promise<{
  ws: WebSocket;
  got: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
  upstream: UpstreamConn;
}> {
  const before = conns.length;
  const ws = new WebSocket(`ws://127.0.0.1:${String(gw.port)}/live/`, protocol);
  const got: Record<string, unknown>[] = [];
  ws.on('message', (raw: Buffer) => got.push(JSON.parse(raw.toString()) as Record<string, unknown>));
  ws.on('error', () => undefined);
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
    }),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      resolve();
    });
    ws.once('unexpected-response', (_req, res) => {
      reject(new Error(`upgrade refused: ${String(res.statusCode)}`));
    });
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'connection_init' }));
  await waitFor('connection_ack', () => got.some((m) => m.type === 'connection_ack'), 10_000);
  const upstream = conns[before];
  assert.ok(upstream !== undefined, 'the upstream was connected');
  return { ws, got, closed, upstream };
}

const subscribe = (ws: WebSocket, id: string): void => {
  ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query: 'subscription { tick }' } }));
};

test('bad input, each class: the client is closed with 4400 (1009 over 1 MiB), the upstream too, and it never sees the message', async () => {
  const cases: [string, string | Buffer, number, string?][] = [
    ['not JSON', '{"type": "subscribe", ', 4400],
    ['a binary frame', Buffer.from('{"type":"ping"}'), 4400],
    ['a JSON array', '[{"type":"ping"}]', 4400],
    ['JSON null', 'null', 4400],
    ['an unknown type', '{"type":"start","id":"1","payload":{"query":"subscription { tick }"}}', 4400],
    ['a subscribe without an ID', '{"type":"subscribe","payload":{"query":"subscription { tick }"}}', 4400],
    [
      'a subscribe with an empty ID',
      '{"type":"subscribe","id":"","payload":{"query":"subscription { tick }"}}',
      4400,
    ],
    ['a subscribe without a payload', '{"type":"subscribe","id":"1"}', 4400],
    ['a subscribe whose query is not a string', '{"type":"subscribe","id":"1","payload":{"query":42}}', 4400],
    ['a message over 1 MiB', JSON.stringify({ type: 'ping', payload: { x: 'x'.repeat(1024 * 1024) } }), 1009],
    [
      'a legacy start without an ID',
      '{"type":"start","payload":{"query":"subscription { tick }"}}',
      4400,
      'graphql-ws',
    ],
  ];
  for (const [what, message, code, protocol] of cases) {
    const c = await client(protocol);
    const seen = c.upstream.messages.length;
    if (Buffer.isBuffer(message)) c.ws.send(message, { binary: true });
    else c.ws.send(message);
    assert.equal(await within(c.closed, 10_000), 'closed', `${what}: the client's socket was not closed`);
    const closed = await c.closed;
    assert.equal(closed.code, code, `${what}: ${JSON.stringify(closed)}`);
    if (code === 4400) assert.equal(closed.reason, 'Invalid message received', what);
    assert.equal(
      await within(c.upstream.closed, 5000),
      'closed',
      `${what}: the upstream's connection closed`,
    );
    assert.deepEqual(c.upstream.messages.slice(seen), [], `${what}: passed on to the upstream`);
  }
});

test('clients leaving early, mid-subscription and mid-upgrade: the upstream connections close, nothing leaks', async () => {
  // Warm up, then the baseline.
  const warm = await client();
  subscribe(warm.ws, 'w');
  await waitFor('a tick', () => warm.got.some((m) => m.type === 'next'), 10_000);
  warm.ws.close();
  await within(warm.upstream.closed, 5000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const baseline = await openResources(gw);

  for (let i = 0; i < 10; i++) {
    // Mid-subscription: ticks flowing, the TCP connection destroyed without a close frame.
    const c = await client();
    subscribe(c.ws, 's');
    await waitFor('a tick', () => c.got.some((m) => m.type === 'next'), 10_000);
    c.ws.terminate();
    assert.equal(
      await within(c.upstream.closed, 5000),
      'closed',
      `round ${String(i)}: the upstream's connection`,
    );
  }
  // Mid-upgrade: the client goes while the upstream has not accepted yet.
  acceptDelayMs = 300;
  try {
    for (let i = 0; i < 5; i++) {
      const seen = upgrades.length;
      const socket = net.connect(gw.port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) =>
        socket.once('connect', () => {
          resolve();
        }),
      );
      socket.write(
        `GET /live/ HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${Buffer.from('0123456789abcdef').toString('base64')}\r\nsec-websocket-protocol: ${PROTOCOL}\r\n\r\n`,
      );
      // The gateway asked the upstream, which has not accepted yet: the client goes.
      await waitFor('the upgrade at the upstream', () => upgrades.length > seen, 10_000);
      socket.destroy();
      const pending = upgrades[seen];
      assert.ok(pending !== undefined);
      assert.equal(
        await within(pending, 5000),
        'closed',
        `upgrade ${String(i)}: the gateway's connection to the upstream`,
      );
    }
  } finally {
    acceptDelayMs = 0;
  }
  // Still serving.
  const after = await client();
  subscribe(after.ws, 'a');
  await waitFor('a tick', () => after.got.some((m) => m.type === 'next'), 10_000);
  after.ws.close();
  await within(after.upstream.closed, 5000);
  await backToBaseline(gw, baseline);
  assert.doesNotMatch(gw.log(), /unhandled|uncaught/i);
});

test('a client that sends its close frame and stops reading: the upstream connection closes within seconds, not after 30', async () => {
  const c = await client();
  subscribe(c.ws, 'p');
  await waitFor('a tick', () => c.got.some((m) => m.type === 'next'), 10_000);
  // The close frame goes out; the client then reads nothing, so it never sees the gateway's
  // close frame and never ends its TCP connection (it would give up after 30 s).
  c.ws.close(1000, 'bye');
  c.ws.pause();
  assert.equal(await within(c.upstream.closed, 6000), 'closed', "the upstream's connection");
  c.ws.terminate();
});

test('the upstream ending its connection without a close frame: the client sees its connection end', async () => {
  const c = await client();
  subscribe(c.ws, 'u');
  await waitFor('a tick', () => c.got.some((m) => m.type === 'next'), 10_000);
  c.upstream.socket.terminate();
  assert.equal(await within(c.closed, 5000), 'closed', "the client's connection ended, not hung");
  assert.equal((await c.closed).code, 1006);
});

test('SIGKILL of the workers mid-subscription: the client and the upstream see their connections end; new workers relay again', async () => {
  const clients = [await client(), await client()];
  for (const [i, c] of clients.entries()) subscribe(c.ws, String(i));
  await waitFor('ticks on both', () => clients.every((c) => c.got.some((m) => m.type === 'next')), 10_000);
  const workers = workersOf(gw.pid);
  assert.equal(workers.length, 2, `workers of ${String(gw.pid)}`);
  for (const w of workers) process.kill(w, 'SIGKILL');
  for (const [i, c] of clients.entries()) {
    assert.equal(
      await within(c.closed, 5000),
      'closed',
      `client ${String(i)}: its connection ended, not hung`,
    );
    assert.equal(
      await within(c.upstream.closed, 5000),
      'closed',
      `client ${String(i)}: the upstream's connection`,
    );
  }
  await waitFor('the workers gone', () => workers.every((w) => !alive(w)));
  await waitFor('new workers', () => {
    const now = workersOf(gw.pid);
    return now.length === 2 && now.every((w) => !workers.includes(w));
  });
  await waitFor(
    'a subscription relayed again',
    async () => {
      try {
        const c = await client();
        subscribe(c.ws, 'again');
        await waitFor('a tick', () => c.got.some((m) => m.type === 'next'), 5_000);
        c.ws.close();
        return true;
      } catch {
        return false;
      }
    },
    60_000,
    500,
  );
});
