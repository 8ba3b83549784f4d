/**
 * The configured HTTPS port (`https_port`, the chart's HTTPS ingress port): open from the start
 * with the default certificate, before any API uses it, and still open after the last one is
 * deleted; an API on it (as the operator pushes a TLS Ingress: its host as `domain`, the Secret's
 * certificate) gets its certificate by SNI. Before, the port opened only with the first such API:
 * in the cluster `kubectl port-forward` to it gave up on the first refused connection. An OAS API
 * whose custom domain has certificates (`server.customDomain.certificates`) is served there too,
 * and refused when written to a gateway without the port.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';
import { oasDocument } from '../../schemas/testing.ts';
import { fingerprintOfPem } from '../testing/certs.ts';
import { makeCert } from '../testing/client-certs.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyless, startGateway, startTlsGateway, type TlsGateway } from '../testing/harness.ts';
import { tlsGet } from '../testing/tls-client.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

describe('https_port: the HTTPS ingress port', () => {
  let gw: TlsGateway;
  let echo: Echo;
  let port = 0;

  before(async () => {
    echo = await startEcho('echo');
    port = await freePort();
    gw = await startTlsGateway(['--https-port', String(port)]);
  });
  after(async () => {
    await stopAll(gw, echo);
  });

  test('open at start with no API on it: the default certificate, 404', async () => {
    const res = await tlsGet(port, '/x', { servername: 'nothing.example' });
    assert.equal(res.status, 404);
    assert.equal(res.serverFingerprint, fingerprintOfPem(gw.serverCert.cert));
  });

  test('a TLS API on it: its certificate by SNI; deleted, the port stays open', async () => {
    const host = 'shop.tls.example';
    const cert = await makeCert(host);
    const up = await gw.admin('POST', '/svc/certs?org_id=org1', cert.cert + cert.key);
    assert.equal(up.status, 200, up.text);
    await gw.addApi(
      keyless('ingress-tls', '/hostname', echo.url, {
        org_id: 'org1',
        protocol: 'https',
        listen_port: port,
        domain: host,
        certificates: [`org1${cert.fingerprint}`],
      }),
    );
    await gw.reload();
    const own = await tlsGet(port, '/hostname', { servername: host });
    assert.equal(own.status, 200);
    assert.equal(own.serverFingerprint, cert.fingerprint);
    const other = await tlsGet(port, '/hostname', { servername: 'other.example' });
    assert.equal(other.status, 404);
    assert.equal(other.serverFingerprint, fingerprintOfPem(gw.serverCert.cert));

    assert.equal((await gw.admin('DELETE', '/svc/apis/ingress-tls')).status, 200);
    await gw.reload();
    const gone = await tlsGet(port, '/hostname', { servername: host });
    assert.equal(gone.status, 404);
    assert.equal(gone.serverFingerprint, fingerprintOfPem(gw.serverCert.cert));
  });

  test("an OAS API's custom domain with certificates: served on it over HTTPS, its certificate by SNI", async () => {
    const host = 'oas.tls.example';
    const cert = await makeCert(host);
    const up = await gw.admin('POST', '/svc/certs?org_id=org1', cert.cert + cert.key);
    assert.equal(up.status, 200, up.text);
    const doc = oasDocument(
      { id: 'oas-domain', listenPath: '/oas-domain/', target: echo.url, strip: true },
      {
        info: { orgId: 'org1' },
        server: { customDomain: { enabled: true, name: host, certificates: [`org1${cert.fingerprint}`] } },
      },
    );
    const created = await gw.admin('POST', '/svc/apis/oas', doc);
    assert.equal(created.status, 200, created.text);
    await gw.reload();
    const own = await tlsGet(port, '/oas-domain/hostname', { servername: host });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.serverFingerprint, cert.fingerprint);
    // Not on the gateway port, plain HTTP, where no certificate is served.
    assert.equal((await gw.request({ path: '/oas-domain/hostname', headers: { host } })).status, 404);
  });
});

test("an OAS API's custom domain with certificates on a gateway without https_port: refused at write time, naming the field", async () => {
  const gw = await startGateway();
  try {
    const doc = oasDocument(
      { id: 'oas-domain', listenPath: '/oas-domain/' },
      {
        server: {
          customDomain: { enabled: true, name: 'oas.example', certificates: [`org1${'a'.repeat(64)}`] },
        },
      },
    );
    const res = await gw.admin('POST', '/svc/apis/oas', doc);
    assert.equal(res.status, 400, res.text);
    assert.match(
      res.text,
      /x-svc-api-gateway\.server\.customDomain\.certificates: Forbidden: the custom domain's certificates need the gateway's HTTPS port/,
    );
    assert.equal((await gw.admin('GET', '/svc/apis/oas/oas-domain')).status, 404);
  } finally {
    await gw.stop();
  }
});

test('https_port needs the default certificate', async () => {
  await assert.rejects(
    startGateway({ argv: ['--https-port', String(await freePort())] }),
    /https_port: .*--tls-cert/,
  );
});
