/**
 * Certificates with private keys in mode pro, with real processes: a certificate and its key are
 * uploaded to the dashboard (SQLite); users never read the key back (list, details, audit log),
 * the database and the logs hold no key in clear, and a gateway loading from the dashboard gets
 * the key through its node channel and presents the certificate to an upstream that requires it
 * (upstream mutual TLS).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { after, before, test } from 'node:test';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const NODE_SECRET = 'e2e-node-secret-certs-0123456789';
let w: ProWorld;
let upstream: Server;
let target = '';
let a: DashboardTenant;
let client: MadeCert;
let certId = '';

/** The base64 lines of a PEM key: what must never appear anywhere in clear. */
const keyLines = (pem: string): string[] => pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));

/** Every file under `root`, as text. */
function filesUnder(root: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const name of readdirSync(root)) {
    const p = join(root, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push({ path: p, text: readFileSync(p).toString('latin1') });
  }
  return out;
}

before(async () => {
  client = await makeCert('pro-gateway-client');
  const serving = selfSignedCert();
  upstream = createServer(
    { cert: serving.cert, key: serving.key, requestCert: true, rejectUnauthorized: true, ca: client.cert },
    (req, res) => {
      const peer = req.socket instanceof TLSSocket ? req.socket.getPeerX509Certificate() : undefined;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ client: peer?.subject ?? '' }));
    },
  );
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  target = `https://127.0.0.1:${String((upstream.address() as AddressInfo).port)}`;
  w = await startProWorld({ name: 'certs', nodeSecret: NODE_SECRET, dashboardName: 'dashboard-certs' });
  a = await w.tenant('certs-a');
  certId = `${a.org}${client.fingerprint}`;
});

after(async () => {
  try {
    await stopAll(w);
  } finally {
    upstream.closeAllConnections();
    upstream.close();
  }
});

test('dashboard: a certificate with its private key is stored; users never read the key back', async () => {
  const add = await dashboardCall(w.dashboard.url, 'POST', '/api/certs', {
    auth: a.system.key,
    body: client.cert + client.key,
    contentType: 'application/x-pem-file',
  });
  assert.equal(add.status, 200, add.text);
  assert.equal(add.body.id, certId);
  const lines = keyLines(client.key);
  for (const [who, key] of [
    ['system', a.system.key],
    ['reader', a.reader.key],
  ] as const) {
    const got = await dashboardCall(w.dashboard.url, 'GET', `/api/certs/${certId}`, { auth: key });
    assert.equal(got.status, 200, `${who}: ${got.text}`);
    assert.equal(got.body.has_private_key, true, got.text);
    assert.equal(got.body.private_key, undefined, got.text);
    assert.ok(!got.text.includes('PRIVATE KEY'), got.text);
    for (const l of lines) assert.ok(!got.text.includes(l), `${who}: key material in the details`);
    const list = await dashboardCall(w.dashboard.url, 'GET', '/api/certs', { auth: key });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.certs, [certId]);
  }
  // A key that is not the certificate's is refused, without quoting it.
  const other = await makeCert('other');
  const wrong = await dashboardCall(w.dashboard.url, 'POST', '/api/certs', {
    auth: a.system.key,
    body: client.cert + other.key,
    contentType: 'application/x-pem-file',
  });
  assert.equal(wrong.status, 400, wrong.text);
  assert.match(wrong.text, /does not match the certificate/);
  // Users can't reach the nodes' channel.
  const sys = await dashboardCall(w.dashboard.url, 'GET', `/system/certs/${certId}`, { auth: a.system.key });
  assert.equal(sys.status, 401, sys.text);
  // Through the node channel the key is sealed under the node secret, never in clear.
  const node = await httpRequest(`${w.dashboard.url}/system/certs/${certId}`, {
    headers: { 'x-svc-node-secret': NODE_SECRET },
  });
  assert.equal(node.status, 200, node.body);
  assert.match(node.body, /"private_key":"sealed:v1:/);
  for (const l of lines) assert.ok(!node.body.includes(l), 'key material in clear on the node channel');
});

test('pro gateway: gets the certificate and its key from the dashboard and presents it upstream', async () => {
  const api = await dashboardCall(w.dashboard.url, 'POST', '/api/apis', {
    auth: a.system.key,
    body: {
      api_definition: {
        api_id: 'mtls',
        name: 'mtls',
        use_keyless: true,
        upstream_certificates: { '127.0.0.1': certId },
        proxy: {
          listen_path: '/mtls/',
          target_url: target,
          strip_listen_path: true,
          // The upstream's own certificate is self-signed: what this test checks is the client side.
          transport: { ssl_insecure_skip_verify: true },
        },
      },
    },
  });
  assert.equal(api.status, 200, api.text);
  const g = await w.startGateway({
    name: 'gw-certs',
    secret: 'pro-gateway-certs-secret',
    org: a.org,
    dataDir: join(w.dir, 'gw'),
    pollMs: 300,
  });
  let last = { status: 0, body: '' };
  await waitFor(
    `/mtls/ through the upstream that requires the client certificate (last ${last.status})`,
    async () => {
      last = await httpRequest(`${g.url}/mtls/x`).catch(() => ({ status: 0, body: '' }));
      return last.status === 200;
    },
    20_000,
  );
  assert.match((JSON.parse(last.body) as { client: string }).client, /CN=pro-gateway-client/, last.body);
  // The key in clear is nowhere: not in the dashboard's database, not in either log.
  const lines = keyLines(client.key);
  const places = [
    ...filesUnder(w.dashboardData),
    ...filesUnder(w.dir).filter((f) => f.path.endsWith('.log')),
  ];
  assert.ok(places.length > 1, places.map((p) => p.path).join(', '));
  for (const f of places)
    for (const l of lines) assert.ok(!f.text.includes(l), `key material in clear in ${f.path}`);
});
