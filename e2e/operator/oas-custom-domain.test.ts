/**
 * The custom domain's certificates by Secret for an SvcOasApiDefinition end to end
 * (`spec.customDomain.certificatesRef`, the reference's TykOasApiDefinition form): a real control
 * plane, a gateway with a default TLS certificate and an HTTPS port (`https_port`), where OAS APIs
 * with certificates for their domain are served, the operator as a process, a local upstream. The
 * API is applied before its Secret (SecretNotFound naming the field and the Secret, nothing
 * pushed); once the Secret exists the gateway serves the API on its HTTPS port with that
 * certificate to clients naming the domain (SNI), the default certificate to others; a rotated
 * Secret replaces the certificate (the old one deleted from the gateway); deleting the API deletes
 * it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet, type TlsRes } from '../../gateway/testing/tls-client.ts';
import { freePort, waitFor } from '../harness/processes.ts';
import { oasApiBeforeItsSecret, startNamedUpstream, waitCertificateRecorded } from './cert-fixtures.ts';
import { admin, applyManifest, tlsSecretManifest } from './helpers.ts';
import { startTlsSuite, stopTlsSuite, waitReady, type TlsSuite } from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'shop';
const HOST = 'store.shop.example';
const ID = derivedId(NS, 'store');
const api = { kind: 'svcoasapidefinition', ns: NS, name: 'store' };

let w: TlsSuite;
let httpsPort: number;
let upstream: Awaited<ReturnType<typeof startNamedUpstream>>;
/** The domain's certificate, before and after rotation. */
const served: Record<'first' | 'rotated', MadeCert> = {} as never;

before(async () => {
  for (const k of ['first', 'rotated'] as const) served[k] = await makeCert(HOST);
  upstream = await startNamedUpstream('store');
  httpsPort = await freePort();
  w = await startTlsSuite('oas-custom-domain', NS, ORG, { SVC_GW_HTTPS_PORT: String(httpsPort) });
});

after(() => stopTlsSuite(w, upstream));

const certId = (c: MadeCert): string => ORG + c.fingerprint;

/** A request to the API on the gateway's HTTPS port, naming `servername` (SNI and Host). */
const call = (servername = HOST): Promise<TlsRes> => tlsGet(httpsPort, '/store/', { servername });

test('an OAS API whose custom domain names a Secret that does not exist yet: SecretNotFound naming the field and the Secret', async () => {
  await oasApiBeforeItsSecret(w.cp, w.gw, {
    ns: NS,
    name: 'store',
    title: 'Store',
    target: upstream.url,
    spec: `  customDomain:
    enabled: true
    name: ${HOST}
    certificatesRef: [store-tls]
`,
    message: /^spec\.customDomain\.certificatesRef\[0\]: Secret shop\/store-tls does not exist/,
  });
});

test("the Secret applied: Ready, served on the HTTPS port with the Secret's certificate to its domain", async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'store-tls', served.first));
  const st = await waitReady(w.cp, api);
  assert.deepEqual(st.certificates, [certId(served.first)]);
  const held = (await admin(w.gw, 'GET', `/svc/apis/oas/${ID}`)).body as Record<
    string,
    { server?: { customDomain?: unknown } }
  >;
  assert.deepEqual(held['x-svc-api-gateway']?.server?.customDomain, {
    enabled: true,
    name: HOST,
    certificates: [certId(served.first)],
  });
  await waitFor('the API served on the HTTPS port', async () => {
    const res = await call().catch(() => undefined);
    return res?.status === 200;
  });
  const res = await call();
  assert.deepEqual(res.json, { upstream: 'store' });
  assert.equal(res.serverFingerprint, served.first.fingerprint);
  // Another name: the gateway's default certificate, and no API there.
  const other = await call('other.shop.example');
  assert.notEqual(other.serverFingerprint, served.first.fingerprint);
  assert.equal(other.status, 404);
  // Not on the gateway port, plain HTTP, where no certificate is served.
  const plain = await fetch(`${w.gw.url}/store/`, { headers: { host: HOST } });
  assert.equal(plain.status, 404);
});

test('the Secret rotated: the new certificate served, the old one deleted from the gateway', async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'store-tls', served.rotated));
  await waitCertificateRecorded(w.cp, api, certId(served.rotated));
  await waitFor(
    'the rotated certificate served',
    async () => (await call()).serverFingerprint === served.rotated.fingerprint,
  );
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(served.first)}`)).status, 404);
});

test('the API deleted: its certificate deleted from the gateway', async () => {
  await w.cp.kubectl(['delete', 'svcoasapidefinition', 'store', '-n', NS, '--wait=true']);
  await waitFor(
    'the certificate deleted',
    async () => (await admin(w.gw, 'GET', `/svc/certs/${certId(served.rotated)}`)).status === 404,
  );
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/oas/${ID}`)).status, 404);
});
