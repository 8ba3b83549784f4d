/**
 * A relayed subscription (proxyOnly) to an HTTPS upstream goes out with the API's upstream TLS
 * settings, as its queries do (conformance/upstream-tls.test.ts): `upstream_certificates`
 * presents the stored client certificate, `pinned_public_keys` refuses an upstream whose public
 * key matches none of the pins before anything is sent to it, `ssl_insecure_skip_verify` is what
 * lets a self-signed upstream through, and without it the upstream's chain is verified. The
 * upstream (node:https with a `ws` server) requires the client certificate.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { stopAll } from '../../lib/testing/teardown.ts';
import { pinOf, selfSignedCert, type TestCert } from '../testing/certs.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { provision } from '../testing/tables.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

const SDL = 'type Query { ok: Boolean }\ntype Subscription { who: String }';

/** What a subscriber saw: the upgrade's refusal, or the messages of an operation to its end. */
type Outcome = { refused: number; body: string } | { messages: { type: string; payload?: unknown }[] };

/** Subscribes to `who` through `path` of the gateway and waits for the end of it. */
async function subscribe(port: number, path: string): Promise<Outcome> {
  const ws = new WebSocket(`ws://127.0.0.1:${String(port)}${path}`, 'graphql-transport-ws');
  return new Promise<Outcome>((resolve, reject) => {
    const messages: { type: string; payload?: unknown }[] = [];
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve({ refused: res.statusCode ?? 0, body });
      });
    });
    ws.once('error', reject);
    ws.once('open', () => {
      ws.send(JSON.stringify({ type: 'connection_init' }));
    });
    ws.on('message', (raw: Buffer) => {
      const m = JSON.parse(raw.toString()) as { type: string; payload?: unknown };
      messages.push(m);
      if (m.type === 'connection_ack')
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { who }' } }));
      if (m.type === 'complete' || m.type === 'error') {
        ws.close();
        resolve({ messages });
      }
    });
  });
}

describe('relayed subscriptions: the upstream TLS settings of the API', () => {
  let gw: InProcessGateway;
  let upstream: Server;
  let upstreamCert: TestCert;
  let clientCert: MadeCert;
  let other: MadeCert;
  /** The upgrades the upstream was sent (a path each). */
  const upgrades: string[] = [];
  const insecure = { transport: { ssl_insecure_skip_verify: true } };

  before(async () => {
    upstreamCert = selfSignedCert();
    clientCert = await makeCert('gateway-client');
    other = await makeCert('other-client');
    upstream = createServer({
      cert: upstreamCert.cert,
      key: upstreamCert.key,
      requestCert: true,
      rejectUnauthorized: true,
      ca: clientCert.cert,
    });
    const wss = new WebSocketServer({ server: upstream, handleProtocols: () => 'graphql-transport-ws' });
    wss.on('connection', (ws, req) => {
      upgrades.push(req.url ?? '');
      const socket = req.socket;
      const peer = socket instanceof TLSSocket ? socket.getPeerX509Certificate() : undefined;
      ws.on('message', (raw: Buffer) => {
        const m = JSON.parse(raw.toString()) as { type: string; id?: string };
        if (m.type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
        if (m.type === 'subscribe') {
          ws.send(
            JSON.stringify({ id: m.id, type: 'next', payload: { data: { who: peer?.subject ?? '' } } }),
          );
          ws.send(JSON.stringify({ id: m.id, type: 'complete' }));
        }
      });
    });
    const target = await listenLocal(upstream, 'https');
    gw = await startGateway();
    for (const body of [clientCert.cert + clientCert.key, other.cert + other.key]) {
      const res = await gw.admin('POST', '/svc/certs?org_id=org1', body);
      assert.equal(res.status, 200, res.text);
    }
    const graphql = { graphql: { enabled: true, execution_mode: 'proxyOnly', schema: SDL } };
    const withClient = { upstream_certificates: { '127.0.0.1': `org1${clientCert.fingerprint}` } };
    const apis = [
      keyless(
        'pin-ok',
        '/pin-ok/',
        target,
        { ...graphql, ...withClient, pinned_public_keys: { '*': pinOf(upstreamCert.cert) } },
        insecure,
      ),
      keyless(
        'pin-wrong',
        '/pin-wrong/',
        target,
        { ...graphql, ...withClient, pinned_public_keys: { '*': pinOf(other.cert) } },
        insecure,
      ),
      keyless('no-cert', '/no-cert/', target, graphql, insecure),
      keyless('verified', '/verified/', target, { ...graphql, ...withClient }),
    ];
    await provision(gw, apis);
  });
  after(async () => {
    await stopAll(gw, { close: () => closeServer(upstream) });
  });

  test('with the client certificate and a matching pin: relayed, the upstream sees the certificate', async () => {
    const out = await subscribe(gw.port, '/pin-ok/');
    assert.ok('messages' in out, JSON.stringify(out));
    assert.deepEqual(
      out.messages.map((m) => m.type),
      ['connection_ack', 'next', 'complete'],
    );
    assert.deepEqual(out.messages[1]?.payload, { data: { who: 'CN=gateway-client' } });
  });

  test('a pin the upstream does not match: 502 naming the pins, and the upstream is sent nothing', async () => {
    const before = upgrades.length;
    const out = await subscribe(gw.port, '/pin-wrong/');
    assert.ok('refused' in out, JSON.stringify(out));
    assert.equal(out.refused, 502);
    assert.match(out.body, /matches none of the pinned public keys/);
    assert.equal(upgrades.length, before);
  });

  test('without the client certificate the upstream refuses the connection: 502', async () => {
    const out = await subscribe(gw.port, '/no-cert/');
    assert.ok('refused' in out, JSON.stringify(out));
    assert.equal(out.refused, 502);
  });

  test("without ssl_insecure_skip_verify the upstream's self-signed certificate is refused: 502", async () => {
    const before = upgrades.length;
    const out = await subscribe(gw.port, '/verified/');
    assert.ok('refused' in out, JSON.stringify(out));
    assert.equal(out.refused, 502);
    assert.match(out.body, /self[- ]signed certificate/i);
    assert.equal(upgrades.length, before);
  });
});
