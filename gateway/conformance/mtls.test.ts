/**
 * Mutual TLS and per-API certificates through real HTTPS listeners and a real client presenting
 * (or not) a certificate: static allow lists, keys bound to certificates, SNI.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';
import { selfSignedCert, type TestCert } from '../testing/certs.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { keyed, startGateway, type InProcessGateway } from '../testing/harness.ts';

interface TlsRes {
  status: number;
  json: { error?: string } | undefined;
  /** SHA-256 hex of the certificate the server presented. */
  serverFingerprint: string;
}

/** A fresh HTTPS connection to the port, presenting `client` when given. */
function tlsGet(
  port: number,
  path: string,
  opts: {
    client?: { cert: string; key: string };
    servername?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<TlsRes> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        rejectUnauthorized: false,
        servername: opts.servername ?? 'localhost',
        headers: { host: opts.servername ?? 'localhost', ...opts.headers },
        ...(opts.client === undefined ? {} : { cert: opts.client.cert, key: opts.client.key }),
      },
      (res) => {
        const socket = res.socket;
        const peer = socket instanceof TLSSocket ? socket.getPeerX509Certificate() : undefined;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: { error?: string } | undefined;
          try {
            json = JSON.parse(text) as { error?: string };
          } catch {
            json = undefined;
          }
          resolve({
            status: res.statusCode ?? 0,
            json,
            serverFingerprint: peer?.fingerprint256.replaceAll(':', '').toLowerCase() ?? '',
          });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fingerprintOfPem = (pem: Buffer | string): string =>
  new X509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();

for (const fast of [true, false])
  describe(`mutual TLS and per-API certificates (fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: InProcessGateway;
    let echo: Echo;
    let serverCert: TestCert;
    let port = 0;
    let allowed: MadeCert;
    let other: MadeCert;
    let expired: MadeCert;
    let sniCert: MadeCert;
    const id = (c: MadeCert): string => `org1${c.fingerprint}`;
    const access = { 'static-keyed': { api_id: 'static-keyed', api_name: 'x', versions: ['Default'] } };

    before(async () => {
      serverCert = selfSignedCert();
      echo = await startEcho('echo');
      port = await freePort();
      gw = await startGateway({
        argv: [
          '--tls-cert',
          serverCert.certFile,
          '--tls-key',
          serverCert.keyFile,
          ...(fast ? [] : ['--fast-path=false']),
        ],
        tls: serverCert,
      });
      allowed = await makeCert('allowed-client');
      other = await makeCert('other-client');
      expired = await makeCert('expired-client', {
        notBefore: new Date(Date.now() - 2 * 86400_000),
        notAfter: new Date(Date.now() - 86400_000),
      });
      sniCert = await makeCert('api.sni.test');
      for (const body of [allowed.cert, other.cert, sniCert.cert + sniCert.key]) {
        const res = await gw.admin('POST', '/svc/certs?org_id=org1', body);
        assert.equal(res.status, 200, res.text);
      }
      const https = { protocol: 'https', listen_port: port, org_id: 'org1' };
      const apis = [
        // Static mTLS only: keyless with an allow list.
        keyed('static', '/static/', echo.url, {
          ...https,
          use_keyless: true,
          use_mutual_tls_auth: true,
          client_certificates: [id(allowed)],
        }),
        // Static mTLS with the token (the default method still applies).
        keyed('static-keyed', '/static-keyed/', echo.url, {
          ...https,
          use_mutual_tls_auth: true,
          client_certificates: [id(allowed)],
        }),
        // Dynamic mTLS.
        keyed('dynamic', '/dynamic/', echo.url, { ...https, auth: { use_certificate: true } }),
        keyed('dynamic-configs', '/dynamic2/', echo.url, {
          ...https,
          auth_configs: { authToken: { use_certificate: true } },
        }),
        // Per-API certificate by SNI.
        keyed('sni', '/', echo.url, {
          ...https,
          use_keyless: true,
          domain: 'api.sni.test',
          certificates: [id(sniCert)],
        }),
      ];
      for (const a of apis) await gw.addApi(a);
      await gw.reload();
    });
    after(async () => {
      await gw.stop();
      await echo.close();
    });

    describe('static', () => {
      const cases: { name: string; client?: () => MadeCert; status: number; error?: () => string }[] = [
        { name: 'no certificate', status: 401, error: () => 'Client certificate required' },
        {
          name: 'a certificate not in the list',
          client: () => other,
          status: 403,
          error: () => `Certificate with SHA256 ${other.fingerprint} not allowed`,
        },
        {
          name: 'an expired certificate not in the list',
          client: () => expired,
          status: 403,
          error: () => `Certificate with SHA256 ${expired.fingerprint} not allowed`,
        },
        { name: 'an allowed certificate', client: () => allowed, status: 200 },
      ];
      for (const c of cases) {
        test(c.name, async () => {
          const served = fastPathStats.requests;
          const res = await tlsGet(port, '/static/x', c.client === undefined ? {} : { client: c.client() });
          assert.equal(res.status, c.status);
          if (c.error !== undefined) assert.equal(res.json?.error, c.error());
          assert.equal(fastPathStats.requests - served, fast ? 1 : 0, 'served by the fast path when on');
        });
      }

      test('with the token as well: the certificate first, then the token', async () => {
        const none = await tlsGet(port, '/static-keyed/x');
        assert.equal(none.json?.error, 'Client certificate required');
        const noToken = await tlsGet(port, '/static-keyed/x', { client: allowed });
        assert.equal(noToken.status, 401);
        assert.equal(noToken.json?.error, 'Authorization field missing');
        const created = await gw.admin('POST', '/svc/keys', { org_id: 'org1', access_rights: access });
        assert.equal(created.status, 200, JSON.stringify(created.json));
        const token = (created.json as { key: string }).key;
        const ok = await tlsGet(port, '/static-keyed/x', {
          client: allowed,
          headers: { authorization: token },
        });
        assert.equal(ok.status, 200);
        const wrongCert = await tlsGet(port, '/static-keyed/x', {
          client: other,
          headers: { authorization: token },
        });
        assert.equal(wrongCert.status, 403);
      });

      test('a list entry that is not a certificate ID is refused at write time', async () => {
        const res = await gw.admin(
          'POST',
          '/svc/apis',
          keyed('bad', '/bad/', echo.url, { use_mutual_tls_auth: true, client_certificates: ['not-an-id'] }),
        );
        assert.equal(res.status, 400);
        assert.match(res.text, /client_certificates\[0\]: .*not a certificate ID/);
      });
    });

    describe('dynamic', () => {
      let keyHash = '';
      test('a key bound to an unknown certificate is refused, naming it', async () => {
        const res = await gw.admin('POST', '/svc/keys/create', {
          org_id: 'org1',
          certificate: `org1${'0'.repeat(64)}`,
          access_rights: {},
        });
        assert.equal(res.status, 400);
        assert.match(res.text, new RegExp(`org1${'0'.repeat(64)}.*not found`));
      });

      test('POST /svc/keys/create binds a key to a certificate', async () => {
        const rights = {
          dynamic: { api_id: 'dynamic', api_name: 'd', versions: ['Default'] },
          'dynamic-configs': { api_id: 'dynamic-configs', api_name: 'd', versions: ['Default'] },
        };
        const res = await gw.admin('POST', '/svc/keys/create', {
          org_id: 'org1',
          certificate: id(allowed),
          access_rights: rights,
        });
        assert.equal(res.status, 200, res.text);
        keyHash = (res.json as { key_hash: string }).key_hash;
        const again = await gw.admin('POST', '/svc/keys/create', {
          org_id: 'org1',
          certificate: id(allowed),
          access_rights: rights,
        });
        assert.equal(again.status, 409);
      });

      test('the certificate alone authenticates (auth and auth_configs.authToken)', async () => {
        assert.equal((await tlsGet(port, '/dynamic/x', { client: allowed })).status, 200);
        assert.equal((await tlsGet(port, '/dynamic2/x', { client: allowed })).status, 200);
      });

      test('another certificate and no token: the token is looked for', async () => {
        const res = await tlsGet(port, '/dynamic/x', { client: other });
        assert.equal(res.status, 401);
        assert.equal(res.json?.error, 'Authorization field missing');
      });

      test('an expired certificate is refused', async () => {
        const res = await tlsGet(port, '/dynamic/x', { client: expired });
        assert.equal(res.status, 401);
        assert.equal(res.json?.error, 'Certificate has expired');
      });

      test('the bound key’s derived name is no token without the certificate', async () => {
        const token = `cert:org1:${allowed.fingerprint}`;
        const res = await tlsGet(port, '/dynamic/x', { headers: { authorization: token } });
        assert.equal(res.status, 403);
        const withOther = await tlsGet(port, '/dynamic/x', {
          client: other,
          headers: { authorization: token },
        });
        assert.equal(withOther.status, 403);
      });

      test('the certificate of a key cannot change; a deleted key stops authenticating', async () => {
        const put = await gw.admin('PUT', `/svc/keys/${keyHash}?hashed=true`, {
          org_id: 'org1',
          certificate: id(other),
          access_rights: {},
        });
        assert.equal(put.status, 400);
        assert.equal((await gw.admin('DELETE', `/svc/keys/${keyHash}?hashed=true`)).status, 200);
        const res = await tlsGet(port, '/dynamic/x', { client: allowed });
        assert.equal(res.status, 401);
      });
    });

    describe('per-API certificates (SNI)', () => {
      test("the API's certificate for its domain, the default otherwise", async () => {
        const own = await tlsGet(port, '/x', { servername: 'api.sni.test' });
        assert.equal(own.status, 200);
        assert.equal(own.serverFingerprint, sniCert.fingerprint);
        const def = await tlsGet(port, '/static/x', { servername: 'localhost', client: allowed });
        assert.equal(def.serverFingerprint, fingerprintOfPem(serverCert.cert));
      });

      test('a deleted certificate gives way to the default at the next reload', async () => {
        assert.equal((await gw.admin('DELETE', `/svc/certs/${id(sniCert)}`)).status, 200);
        await gw.reload();
        const res = await tlsGet(port, '/x', { servername: 'api.sni.test' });
        assert.equal(res.status, 200);
        assert.equal(res.serverFingerprint, fingerprintOfPem(serverCert.cert));
        const back = await gw.admin('POST', '/svc/certs?org_id=org1', sniCert.cert + sniCert.key);
        assert.equal(back.status, 200);
        await gw.reload();
        assert.equal(
          (await tlsGet(port, '/x', { servername: 'api.sni.test' })).serverFingerprint,
          sniCert.fingerprint,
        );
      });
    });
  });
