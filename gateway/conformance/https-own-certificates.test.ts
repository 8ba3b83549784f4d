/**
 * HTTPS APIs that bring their own certificates (`certificates`, as the operator pushes a Gateway
 * API HTTPS listener's) on a gateway started without one (no tls_cert_file), run as a process:
 * the API's port serves by SNI from the APIs' certificates (the one of its `domain`; an API
 * without a domain, every name on its port), a name no certificate covers is refused at the
 * handshake and the gateway goes on serving; an https API naming no certificate stays refused.
 * Before, every https API was refused on such a gateway ("needs the gateway's TLS certificate"),
 * which left the Gateway API's HTTPS listeners unserved (docs/conformance: HTTPRouteHTTPSListener).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyless, spawnGateway, type GatewayProcess } from '../testing/harness.ts';
import { tlsGet } from '../testing/tls-client.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

for (const fast of [true, false])
  describe(`https APIs with their own certificates on a gateway without one (fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: GatewayProcess;
    let echo: Echo;
    let dataDir = '';
    let named = 0;
    let anyName = 0;
    let shop: MadeCert;
    let wild: MadeCert;

    before(async () => {
      echo = await startEcho('echo');
      named = await freePort();
      anyName = await freePort();
      dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-own-certs-'));
      gw = await spawnGateway(['--data-dir', dataDir, ...(fast ? [] : ['--fast-path=false'])]);
      shop = await makeCert('shop.own.test');
      wild = await makeCert('listener.own.test', { dnsNames: ['*.own.test', 'listener.own.test'] });
      await gw.addCerts([shop.cert + shop.key, wild.cert + wild.key]);
      // A route with a hostname on an HTTPS listener: the hostname as domain, the certificate.
      await gw.addApi(
        keyless('own-shop', '/', echo.url, {
          org_id: 'org1',
          protocol: 'https',
          listen_port: named,
          domain: 'shop.own.test',
          certificates: [`org1${shop.fingerprint}`],
        }),
      );
      // A route without a hostname: no domain, the listener's certificate for every name.
      await gw.addApi(
        keyless('own-any', '/', echo.url, {
          org_id: 'org1',
          protocol: 'https',
          listen_port: anyName,
          certificates: [`org1${wild.fingerprint}`],
        }),
      );
      await gw.reload();
    });
    after(async () => {
      try {
        await stopAll(gw, echo);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    test("the API's domain by SNI: its certificate, 200 from the upstream", async () => {
      const res = await tlsGet(named, '/x', { servername: 'shop.own.test' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json?.upstream, 'echo');
      assert.equal(res.serverFingerprint, shop.fingerprint);
    });

    test('a name no certificate covers: the handshake is refused, the gateway serves on', async () => {
      await assert.rejects(tlsGet(named, '/x', { servername: 'other.example' }), (err: Error) => {
        assert.doesNotMatch(err.message, /timed out/);
        return true;
      });
      // No SNI names nothing either (an address): refused the same way.
      await assert.rejects(tlsGet(named, '/x', { servername: '' }));
      const again = await tlsGet(named, '/x', { servername: 'shop.own.test' });
      assert.equal(again.status, 200, again.text);
      assert.equal(gw.child.exitCode, null, gw.stderr());
    });

    test('an API without a domain: its certificate for any name on its port, and only there', async () => {
      for (const name of ['a.own.test', 'elsewhere.example']) {
        const res = await tlsGet(anyName, '/y', { servername: name });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json?.upstream, 'echo');
        assert.equal(res.serverFingerprint, wild.fingerprint);
      }
      await assert.rejects(tlsGet(named, '/x', { servername: 'a.own.test' }));
    });

    test('an https API naming no certificate: still refused at write time, naming protocol', async () => {
      const res = await gw.admin(
        'POST',
        '/svc/apis',
        keyless('no-cert', '/', echo.url, { protocol: 'https', listen_port: await freePort() }),
      );
      assert.equal(res.status, 400, res.text);
      assert.match(
        res.text,
        /protocol: Invalid value: https needs the gateway's TLS certificate: configure tls_cert_file and tls_key_file, or use http/,
      );
      assert.equal((await gw.admin('GET', '/svc/apis/no-cert')).status, 404);
    });
  });
