/**
 * Mutual TLS and per-API certificates through real HTTPS listeners and a real client presenting
 * (or not) a certificate: keys bound to certificates (dynamic mutual TLS), SNI. The static allow
 * lists are beside their middleware (middleware/mutual-tls/index.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';
import { fingerprintOfPem } from '../testing/certs.ts';
import { clientCerts, makeCert, type MadeCert } from '../testing/client-certs.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyed, startTlsGateway, type TlsGateway } from '../testing/harness.ts';
import { tlsGet } from '../testing/tls-client.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { provision } from '../testing/tables.ts';

for (const fast of [true, false])
  describe(`dynamic mutual TLS and per-API certificates (fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: TlsGateway;
    let echo: Echo;
    let port = 0;
    let allowed: MadeCert;
    let other: MadeCert;
    let expired: MadeCert;
    let sniCert: MadeCert;
    const id = (c: MadeCert): string => `org1${c.fingerprint}`;

    before(async () => {
      echo = await startEcho('echo');
      port = await freePort();
      gw = await startTlsGateway(fast ? [] : ['--fast-path=false']);
      ({ allowed, other, expired } = await clientCerts());
      sniCert = await makeCert('api.sni.test');
      await gw.addCerts([allowed.cert, other.cert, sniCert.cert + sniCert.key]);
      const https = { protocol: 'https', listen_port: port, org_id: 'org1' };
      const apis = [
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
      await provision(gw, apis);
    });
    after(async () => {
      await stopAll(gw, echo);
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
        assert.equal(def.serverFingerprint, fingerprintOfPem(gw.serverCert.cert));
      });

      test('a deleted certificate gives way to the default at the next reload', async () => {
        assert.equal((await gw.admin('DELETE', `/svc/certs/${id(sniCert)}`)).status, 200);
        await gw.reload();
        const res = await tlsGet(port, '/x', { servername: 'api.sni.test' });
        assert.equal(res.status, 200);
        assert.equal(res.serverFingerprint, fingerprintOfPem(gw.serverCert.cert));
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
