/**
 * Upstream TLS settings of an API, against a real HTTPS upstream that requires a client
 * certificate (node:https, `requestCert` and `rejectUnauthorized`, the client certificate as its
 * CA): `upstream_certificates` presents a stored certificate, `pinned_public_keys` refuses an
 * upstream whose public key matches none of the pins (502), by hash or by certificate ID.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { pinOf, selfSignedCert, type TestCert } from '../testing/certs.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { provision } from '../testing/tables.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

describe('upstream TLS: client certificates and pinning', () => {
  let gw: InProcessGateway;
  let upstream: Server;
  let upstreamCert: TestCert;
  let clientCert: MadeCert;
  let other: MadeCert;
  let target = '';
  const id = (fingerprint: string): string => `org1${fingerprint}`;
  // The upstream's certificate is self-signed: the gateway does not verify its chain here, so the
  // pins are what authenticates it (they are checked whatever ssl_insecure_skip_verify says).
  const insecure = { transport: { ssl_insecure_skip_verify: true } };

  before(async () => {
    upstreamCert = selfSignedCert();
    clientCert = await makeCert('gateway-client');
    other = await makeCert('other-client');
    upstream = createServer(
      {
        cert: upstreamCert.cert,
        key: upstreamCert.key,
        requestCert: true,
        rejectUnauthorized: true,
        ca: clientCert.cert,
      },
      (req, res) => {
        const socket = req.socket;
        const peer = socket instanceof TLSSocket ? socket.getPeerX509Certificate() : undefined;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ client: peer?.subject ?? '' }));
      },
    );
    target = await listenLocal(upstream, 'https');
    gw = await startGateway();
    for (const body of [
      clientCert.cert + clientCert.key,
      other.cert + other.key,
      upstreamCert.cert.toString(),
    ]) {
      const res = await gw.admin('POST', '/svc/certs?org_id=org1', body);
      assert.equal(res.status, 200, res.text);
    }
    const upstreamId = id(
      new X509Certificate(upstreamCert.cert).fingerprint256.replaceAll(':', '').toLowerCase(),
    );
    const withClient = { upstream_certificates: { '127.0.0.1': id(clientCert.fingerprint) } };
    const apis = [
      keyless('no-cert', '/no-cert/', target, {}, insecure),
      keyless('cert', '/cert/', target, withClient, insecure),
      keyless(
        'wrong-cert',
        '/wrong-cert/',
        target,
        { upstream_certificates: { '*': id(other.fingerprint) } },
        insecure,
      ),
      keyless(
        'pin-ok',
        '/pin-ok/',
        target,
        { ...withClient, pinned_public_keys: { '*': pinOf(upstreamCert.cert) } },
        insecure,
      ),
      keyless(
        'pin-wrong',
        '/pin-wrong/',
        target,
        { ...withClient, pinned_public_keys: { '127.0.0.1': pinOf(other.cert) } },
        insecure,
      ),
      keyless(
        'pin-id',
        '/pin-id/',
        target,
        { ...withClient, pinned_public_keys: { '*': `${pinOf(other.cert)}, ${upstreamId}` } },
        insecure,
      ),
      keyless(
        'pin-other-host',
        '/pin-other-host/',
        target,
        { ...withClient, pinned_public_keys: { 'elsewhere.example.com': pinOf(other.cert) } },
        insecure,
      ),
    ];
    await provision(gw, apis);
  });
  after(async () => {
    try {
      await stopAll(gw);
    } finally {
      await new Promise<void>((resolve) => {
        upstream.close(() => {
          resolve();
        });
      });
    }
  });

  test('without the upstream certificate the upstream refuses: 502', async () => {
    const res = await gw.request({ path: '/no-cert/x' });
    assert.equal(res.status, 502);
    assert.deepEqual(res.json, { error: 'There was a problem proxying the request' });
  });

  test('with it, the upstream sees the stored certificate: 200', async () => {
    const res = await gw.request({ path: '/cert/x' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { client: 'CN=gateway-client' });
  });

  test('a certificate the upstream does not trust: 502', async () => {
    const res = await gw.request({ path: '/wrong-cert/x' });
    assert.equal(res.status, 502);
  });

  test('pinning: the right pin 200, a wrong pin 502, a pin by certificate ID 200', async () => {
    const ok = await gw.request({ path: '/pin-ok/x' });
    assert.equal(ok.status, 200, ok.text);
    const wrong = await gw.request({ path: '/pin-wrong/x' });
    assert.equal(wrong.status, 502);
    assert.deepEqual(wrong.json, {
      error: "The upstream's certificate does not match the pinned public keys",
    });
    const byId = await gw.request({ path: '/pin-id/x' });
    assert.equal(byId.status, 200, byId.text);
    const otherHost = await gw.request({ path: '/pin-other-host/x' });
    assert.equal(otherHost.status, 200, 'a pin for another host does not apply');
  });

  test('routes with upstream TLS settings are not on the fast path', () => {
    for (const r of gw.gw.table.routes) assert.equal(r.fastPath, false, r.id);
  });

  test('a missing upstream certificate leaves the API out, and the reload says why', async () => {
    const missing = id('c'.repeat(64));
    await gw.addApi(
      keyless('missing', '/missing/', target, { upstream_certificates: { '*': missing } }, insecure),
    );
    await gw.addApi(
      keyless('missing-pin', '/missing-pin/', target, { pinned_public_keys: { '*': missing } }, insecure),
    );
    const reload = await gw.admin('GET', '/svc/reload');
    assert.equal(reload.status, 200, reload.text);
    const message = (reload.json as { message: string }).message;
    assert.match(
      message,
      new RegExp(`API missing: upstream_certificates: certificate ${missing} for 127.0.0.1 is not stored`),
    );
    assert.match(
      message,
      new RegExp(`API missing-pin: pinned_public_keys: certificate ${missing} for 127.0.0.1 is not stored`),
    );
    assert.equal((await gw.request({ path: '/missing/x' })).status, 404);
    assert.equal((await gw.request({ path: '/cert/x' })).status, 200, 'the other APIs are served');
    for (const path of ['missing', 'missing-pin'])
      assert.equal((await gw.admin('DELETE', `/svc/apis/${path}`)).status, 200);
    await gw.reload();
  });

  test('hosts, certificate IDs and pins are checked at write time', async () => {
    const res = await gw.admin(
      'POST',
      '/svc/apis',
      keyless('bad', '/bad/', target, {
        upstream_certificates: { 'https://x:1': 'cert-1' },
        pinned_public_keys: { '*': 'sha256/short, ' },
      }),
    );
    assert.equal(res.status, 400);
    assert.match(res.text, /upstream_certificates\[\\"https:\/\/x:1\\"\]: .*not an upstream host/);
    assert.match(res.text, /upstream_certificates\[\\"https:\/\/x:1\\"\]: .*not a certificate ID/);
    assert.match(res.text, /pinned_public_keys\[\\"\*\\"\]: Invalid value: an empty entry/);
    assert.match(res.text, /pinned_public_keys\[\\"\*\\"\]: Invalid value: \\"sha256\/short\\" is neither/);
  });
});

describe('upstream TLS: every upstream of a load-balanced target_list', () => {
  let gw: InProcessGateway;
  const servers: Server[] = [];
  const targets: string[] = [];

  before(async () => {
    const upstreamCert = selfSignedCert();
    const clients = [await makeCert('client-a'), await makeCert('client-b')];
    // Two hosts (127.0.0.1 and 127.0.0.2, both loopback), each trusting only its own client.
    for (const [i, host] of ['127.0.0.1', '127.0.0.2'].entries()) {
      const server = createServer(
        {
          cert: upstreamCert.cert,
          key: upstreamCert.key,
          requestCert: true,
          rejectUnauthorized: true,
          ca: clients[i]?.cert,
        },
        (req, res) => {
          const socket = req.socket;
          const peer = socket instanceof TLSSocket ? socket.getPeerX509Certificate() : undefined;
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ host, client: peer?.subject ?? '' }));
        },
      );
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      servers.push(server);
      targets.push(`https://${host}:${String((server.address() as AddressInfo).port)}`);
    }
    gw = await startGateway();
    for (const c of clients) {
      const res = await gw.admin('POST', '/svc/certs?org_id=org1', c.cert + c.key);
      assert.equal(res.status, 200, res.text);
    }
    const [a, b] = clients as [MadeCert, MadeCert];
    const upstream_certificates = {
      '127.0.0.1': `org1${a.fingerprint}`,
      '127.0.0.2': `org1${b.fingerprint}`,
    };
    const balanced = { enable_load_balancing: true, target_list: targets };
    const insecure = { transport: { ssl_insecure_skip_verify: true } };
    await gw.addApi(keyless('lb', '/lb/', '', { upstream_certificates }, { ...balanced, ...insecure }));
    await gw.addApi(
      keyless(
        'lb-target',
        '/lb-target/',
        targets[0] ?? '',
        { upstream_certificates },
        {
          ...balanced,
          ...insecure,
        },
      ),
    );
    await gw.reload();
  });
  after(async () => {
    try {
      await stopAll(gw);
    } finally {
      for (const s of servers) await closeServer(s);
    }
  });

  for (const path of ['/lb/x', '/lb-target/x']) {
    test(`${path}: each upstream gets the client certificate of its own host`, async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const res = await gw.request({ path });
        assert.equal(res.status, 200, res.text);
        const { host, client } = res.json as { host: string; client: string };
        seen.add(`${host} ${client}`);
      }
      assert.deepEqual([...seen].sort(), ['127.0.0.1 CN=client-a', '127.0.0.2 CN=client-b']);
    });
  }
});
