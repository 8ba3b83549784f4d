/**
 * Client certificates by Secret for an SvcOasApiDefinition end to end (`spec.clientCertificate`,
 * the reference's TykOasApiDefinition form): a real control plane, a gateway with a default TLS
 * certificate and an HTTPS port (`https_port`), where OAS APIs with static mutual TLS are served,
 * the operator as a process, a local upstream. The API is applied before its Secret
 * (SecretNotFound naming the field and the Secret, nothing pushed); once the Secret exists the
 * gateway serves the API on its HTTPS port to that client certificate only; a rotated Secret
 * replaces the certificate (the old one deleted from the gateway); deleting the API deletes it.
 * A second API presents an upstream certificate from a Secret (`spec.mutualTLS`) to an HTTPS
 * upstream that requires one, and pins the upstream's public key from a Secret
 * (`spec.certificatePinning`): refused while the pin is another key, served once it is the
 * upstream's. The gateway trusts the upstream's self-signed certificate (NODE_EXTRA_CA_CERTS), as
 * a gateway trusts a cluster's CA: OAS documents have no switch to skip verification.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  oasApiBeforeItsSecret,
  oasConfigMap,
  pinSecretManifest,
  startMtlsUpstream,
  startNamedUpstream,
  waitCertificateRecorded,
  type MtlsUpstream,
} from './cert-fixtures.ts';
import { derivedId } from '../../operator/ids.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet, type TlsRes } from '../../gateway/testing/tls-client.ts';
import { freePort, waitFor } from '../harness/processes.ts';
import { admin, applyManifest, tlsSecretManifest } from './helpers.ts';
import { startTlsSuite, stopTlsSuite, waitReady, type TlsSuite } from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'shop';
const ID = derivedId(NS, 'partners');
const api = { kind: 'svcoasapidefinition', ns: NS, name: 'partners' };

let w: TlsSuite;
/** The gateway's HTTPS port, where OAS APIs with static mutual TLS are served. */
let httpsPort: number;
let upstream: Awaited<ReturnType<typeof startNamedUpstream>>;
/** Client certificates of the API (before and after rotation), and one it never allows. */
const client: Record<'first' | 'rotated' | 'stranger', MadeCert> = {} as never;
/** The mTLS upstream: it accepts the gateway's upstream certificate and says which it got. */
let secureUpstream: MtlsUpstream;
/** The certificate the gateway presents upstream, and one whose public key is not the upstream's. */
let toUpstream: MadeCert;
let wrongPin: MadeCert;

before(async () => {
  for (const k of ['first', 'rotated', 'stranger'] as const) client[k] = await makeCert(`oas-client-${k}`);
  upstream = await startNamedUpstream('partners');
  toUpstream = await makeCert('oas-gateway-to-upstream');
  wrongPin = await makeCert('oas-not-the-upstream');
  secureUpstream = await startMtlsUpstream([toUpstream.cert]);
  httpsPort = await freePort();
  w = await startTlsSuite('oas-cert-refs', NS, ORG, {
    SVC_GW_HTTPS_PORT: String(httpsPort),
    NODE_EXTRA_CA_CERTS: secureUpstream.cert.certFile,
  });
});

after(() => stopTlsSuite(w, secureUpstream, upstream));

const certId = (c: MadeCert): string => ORG + c.fingerprint;

/** A request to the API on the gateway's HTTPS port, presenting `cert` when given. */
const call = (cert?: MadeCert): Promise<TlsRes> =>
  tlsGet(httpsPort, '/partners/', cert === undefined ? {} : { client: cert });

/** An OAS document, keyless: for `partners`, the client certificate alone lets a request through. */
const DOC = (target: string, name = 'partners'): string => oasConfigMap(NS, name, 'Partners', target);

test('an OAS API naming a Secret that does not exist yet: SecretNotFound naming the field and the Secret', async () => {
  await oasApiBeforeItsSecret(w.cp, w.gw, {
    ns: NS,
    name: 'partners',
    title: 'Partners',
    target: upstream.url,
    spec: `  clientCertificate:
    enabled: true
    allowlist: [partners-client]
`,
    message: /^spec\.clientCertificate\.allowlist\[0\]: Secret shop\/partners-client does not exist/,
  });
});

test('the Secret applied: Ready, served on the HTTPS port to that client certificate only', async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'partners-client', client.first));
  const st = await waitReady(w.cp, api);
  assert.deepEqual(st.certificates, [certId(client.first)]);
  const held = (await admin(w.gw, 'GET', `/svc/apis/oas/${ID}`)).body as Record<
    string,
    { server?: { clientCertificates?: unknown } }
  >;
  assert.deepEqual(held['x-svc-api-gateway']?.server?.clientCertificates, {
    enabled: true,
    allowlist: [certId(client.first)],
  });
  await waitFor('the API served on the HTTPS port', async () => {
    const res = await call(client.first).catch(() => undefined);
    return res?.status === 200;
  });
  assert.deepEqual((await call(client.first)).json, { upstream: 'partners' });
  const stranger = await call(client.stranger);
  assert.equal(stranger.status, 403);
  assert.equal(stranger.json?.error, `Certificate with SHA256 ${client.stranger.fingerprint} not allowed`);
  const without = await call();
  assert.equal(without.status, 401);
  assert.equal(without.json?.error, 'Client certificate required');
  // Not on the gateway port, plain HTTP, where no client can present a certificate.
  const plain = await fetch(`${w.gw.url}/partners/`);
  assert.equal(plain.status, 404);
});

test('the Secret rotated: the new certificate allowed, the old one refused and deleted from the gateway', async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'partners-client', client.rotated));
  await waitCertificateRecorded(w.cp, api, certId(client.rotated));
  await waitFor(
    'the rotated client certificate allowed',
    async () => (await call(client.rotated)).status === 200,
  );
  assert.equal((await call(client.first)).status, 403);
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(client.first)}`)).status, 404);
});

/** The pinned Secret holds only a certificate: a pinned upstream's key is not ours. */
const pinSecret = (certPem: string | Buffer): string => pinSecretManifest(NS, 'upstream-pin', certPem);

const secureApi = { kind: 'svcoasapidefinition', ns: NS, name: 'secure' };
const SECURE_ID = derivedId(NS, 'secure');

test('upstream mTLS and pinning by Secret, the pin not the upstream key: the upstream refused', async () => {
  await applyManifest(w.cp, DOC(secureUpstream.url, 'secure'));
  await applyManifest(w.cp, tlsSecretManifest(NS, 'gateway-client', toUpstream));
  await applyManifest(w.cp, pinSecret(wrongPin.cert));
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata: {name: secure, namespace: ${NS}}
spec:
  svcOAS:
    configmapRef: {name: secure-oas, keyName: oas.yaml}
  mutualTLS:
    enabled: true
    domainToCertificateMapping:
      - {domain: 127.0.0.1, certificateRef: gateway-client}
  certificatePinning:
    enabled: true
    domainToPublicKeysMapping:
      - {domain: 127.0.0.1, publicKeyRefs: [upstream-pin]}
`,
  );
  const st = await waitReady(w.cp, secureApi);
  assert.deepEqual(st.certificates, [certId(toUpstream)]);
  const held = (await admin(w.gw, 'GET', `/svc/apis/${SECURE_ID}`)).body as {
    upstream_certificates?: Record<string, string>;
  };
  assert.deepEqual(held.upstream_certificates, { '127.0.0.1': certId(toUpstream) });
  await waitFor('the API served on the gateway port', async () => {
    const res = await fetch(`${w.gw.url}/secure/`).catch(() => undefined);
    return res?.status === 502;
  });
  const pinned = await fetch(`${w.gw.url}/secure/`);
  assert.equal(pinned.status, 502);
  assert.match(((await pinned.json()) as { error?: string }).error ?? '', /pinned public keys/);
});

test('the pin Secret holds the upstream certificate: served, the upstream certificate presented', async () => {
  await applyManifest(w.cp, pinSecret(secureUpstream.cert.cert));
  await waitFor(
    'the upstream served through its pin',
    async () => (await fetch(`${w.gw.url}/secure/`)).status === 200,
  );
  const res = (await (await fetch(`${w.gw.url}/secure/`)).json()) as { upstream?: string };
  assert.equal(res.upstream, toUpstream.fingerprint);
});

test('the API deleted: its certificate deleted from the gateway', async () => {
  await w.cp.kubectl(['delete', 'svcoasapidefinition', 'partners', '-n', NS, '--wait=true']);
  await waitFor(
    'the certificate deleted',
    async () => (await admin(w.gw, 'GET', `/svc/certs/${certId(client.rotated)}`)).status === 404,
  );
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/oas/${ID}`)).status, 404);
});
