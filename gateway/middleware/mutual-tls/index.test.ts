/**
 * Static mutual TLS (`use_mutual_tls_auth`, `client_certificates`) through a real HTTPS listener
 * and a real client presenting (or not) a certificate: the allow list alone (keyless), with the
 * token as well (the certificate first), an OAS API's `server.clientCertificates`, a list entry
 * refused at write time. Fast path on and off; with it on, it serves every request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../../lib/testing/wait.ts';
import { oasDocument } from '../../../schemas/testing.ts';
import { fastPathStats } from '../../server/fast-path/index.ts';
import { clientCerts, type MadeCert } from '../../testing/client-certs.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, startTlsGateway, type InProcessGateway } from '../../testing/harness.ts';
import { tlsGet } from '../../testing/tls-client.ts';
import { stopAll } from '../../../lib/testing/teardown.ts';
import { provision } from '../../testing/tables.ts';

for (const fast of [true, false])
  describe(`static mutual TLS (fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: InProcessGateway;
    let echo: Echo;
    let port = 0;
    let allowed: MadeCert;
    let other: MadeCert;
    let expired: MadeCert;
    const id = (c: MadeCert): string => `org1${c.fingerprint}`;
    const access = { 'static-keyed': { api_id: 'static-keyed', api_name: 'x', versions: ['Default'] } };

    before(async () => {
      echo = await startEcho('echo');
      port = await freePort();
      gw = await startTlsGateway(fast ? [] : ['--fast-path=false']);
      ({ allowed, other, expired } = await clientCerts());
      await gw.addCerts([allowed.cert, other.cert]);
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
      ];
      await provision(gw, apis);
    });
    after(async () => {
      await stopAll(gw, echo);
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

      test('an OAS API on a gateway without https_port: refused at write time, naming clientCertificates', async () => {
        // OAS APIs have no listen_port: without an HTTPS port they would be served on the
        // gateway port, plain HTTP, where no client presents a certificate.
        const doc = oasDocument(
          { id: 'static-oas', listenPath: '/static-oas/', target: echo.url },
          {
            info: { orgId: 'org1' },
            server: { clientCertificates: { enabled: true, allowlist: [id(allowed)] } },
          },
        );
        const created = await gw.admin('POST', '/svc/apis/oas', doc);
        assert.equal(created.status, 400, created.text);
        assert.match(
          created.text,
          /x-svc-api-gateway\.server\.clientCertificates\.enabled: .*needs the gateway's HTTPS port/,
        );
        const bad = await gw.admin(
          'POST',
          '/svc/apis/oas',
          oasDocument(
            { id: 'bad-oas', listenPath: '/bad-oas/', target: echo.url },
            { server: { clientCertificates: { enabled: true, allowlist: ['not-an-id'] } } },
          ),
        );
        assert.equal(bad.status, 400);
        assert.match(bad.text, /clientCertificates\.allowlist\[0\]: .*not a certificate ID/);
      });

      test('an OAS API on a gateway with https_port: served there over HTTPS, the certificate required', async () => {
        const httpsPort = await freePort();
        const tlsGw = await startTlsGateway([
          '--https-port',
          String(httpsPort),
          ...(fast ? [] : ['--fast-path=false']),
        ]);
        try {
          await tlsGw.addCerts([allowed.cert, other.cert]);
          const doc = oasDocument(
            { id: 'static-oas', listenPath: '/static-oas/', target: echo.url },
            {
              info: { orgId: 'org1' },
              server: { clientCertificates: { enabled: true, allowlist: [id(allowed)] } },
            },
          );
          const created = await tlsGw.admin('POST', '/svc/apis/oas', doc);
          assert.equal(created.status, 200, created.text);
          await tlsGw.reload();
          const ok = await tlsGet(httpsPort, '/static-oas/x', { client: allowed });
          assert.equal(ok.status, 200);
          const stranger = await tlsGet(httpsPort, '/static-oas/x', { client: other });
          assert.equal(stranger.status, 403);
          assert.equal(stranger.json?.error, `Certificate with SHA256 ${other.fingerprint} not allowed`);
          const none = await tlsGet(httpsPort, '/static-oas/x');
          assert.equal(none.status, 401);
          assert.equal(none.json?.error, 'Client certificate required');
          // Not on the gateway port, where no certificate can come.
          assert.equal((await tlsGw.request({ path: '/static-oas/x' })).status, 404);
        } finally {
          await tlsGw.stop();
        }
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
  });
