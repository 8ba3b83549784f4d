/**
 * Certificates by Secret end to end (`client_certificate_refs`, `upstream_certificate_refs`,
 * `pinned_public_keys_refs`): a real control plane, a gateway started with a default TLS
 * certificate, the operator as a process, and an HTTPS upstream that requires a client
 * certificate. The API is applied before its Secrets (SecretNotFound naming the field and the
 * Secret); once they exist the gateway really requires the client certificate, presents the
 * upstream certificate and refuses the upstream while its public key is not the pinned one;
 * rotated Secrets replace the certificates (the old ones deleted from the gateway); deleting the
 * API deletes its certificates.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { derivedId } from '../../operator/ids.ts';
import { fingerprintOfPem } from '../../gateway/testing/certs.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet, type TlsRes } from '../../gateway/testing/tls-client.ts';
import { freePort, waitFor } from '../harness/processes.ts';
import { admin, applyManifest, readyOf, tlsSecretManifest, waitForStatus } from './helpers.ts';
import { startTlsSuite, stopTlsSuite, waitReady, type TlsSuite } from './helpers.ts';
import { pinSecretManifest, startMtlsUpstream, type MtlsUpstream } from './cert-fixtures.ts';

const ORG = 'e2e-org';
const NS = 'shop';
const ID = derivedId(NS, 'partners');
const api = { kind: 'apidefinition', ns: NS, name: 'partners' };

let w: TlsSuite;
let apiPort: number;
/** The mTLS upstream: it accepts the gateway's two upstream certificates and says which it got. */
let upstream: MtlsUpstream;
/** Client certificates of the API (before and after rotation), and one it never allows. */
const client: Record<'first' | 'rotated' | 'stranger', MadeCert> = {} as never;
/** Certificates the gateway presents upstream (before and after rotation). */
const toUpstream: Record<'first' | 'rotated', MadeCert> = {} as never;
/** A certificate whose public key is not the upstream's. */
let wrongPin: MadeCert;

before(async () => {
  for (const k of ['first', 'rotated', 'stranger'] as const) client[k] = await makeCert(`client-${k}`);
  for (const k of ['first', 'rotated'] as const) toUpstream[k] = await makeCert(`gateway-${k}`);
  wrongPin = await makeCert('not-the-upstream');
  upstream = await startMtlsUpstream([toUpstream.first.cert, toUpstream.rotated.cert]);
  w = await startTlsSuite('cert-refs', NS, ORG);
  apiPort = await freePort();
});

after(() => stopTlsSuite(w, upstream));

const certId = (c: MadeCert): string => ORG + c.fingerprint;

/** The pinned Secret holds only a certificate (type Opaque): a pinned upstream's key is not ours. */
const pinSecret = (certPem: string | Buffer): string => pinSecretManifest(NS, 'upstream-pin', certPem);

/**
 * Static mutual TLS identifies no key: as in the reference, the API asks for a token too
 * (docs/gateway.md, "Certificates and mutual TLS"). Created once the API exists.
 */
const KEY = 'e2e-partners-key';

/** A request to the API with the key, presenting `cert` when given. */
const call = (cert?: MadeCert): Promise<TlsRes> =>
  tlsGet(apiPort, '/partners/', {
    headers: { authorization: KEY },
    ...(cert === undefined ? {} : { client: cert }),
  });

/** The fingerprint of the certificate the gateway presented to the upstream, from its answer. */
const presented = (res: TlsRes): string | undefined => res.json?.upstream;

test('an API naming Secrets that do not exist yet: SecretNotFound naming the field and the Secret', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: partners, namespace: ${NS}}
spec:
  name: partners
  use_mutual_tls_auth: true
  client_certificate_refs: [partners-client]
  upstream_certificate_refs: {"127.0.0.1": gateway-client}
  pinned_public_keys_refs: {"127.0.0.1": upstream-pin}
  protocol: https
  listen_port: ${String(apiPort)}
  proxy:
    listen_path: /partners/
    target_url: ${upstream.url}
    transport: {ssl_insecure_skip_verify: true}
`,
  );
  const st = await waitForStatus(w.cp, api, 'SecretNotFound', (s) => readyOf(s)?.reason === 'SecretNotFound');
  assert.equal(readyOf(st)?.status, 'False');
  assert.match(
    readyOf(st)?.message ?? '',
    /^spec\.client_certificate_refs\[0\]: Secret shop\/partners-client does not exist/,
  );
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/${ID}`)).status, 404);
});

test('the Secrets applied, the pin not the upstream key: Ready, the client certificate required, the upstream refused', async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'partners-client', client.first));
  await applyManifest(w.cp, tlsSecretManifest(NS, 'gateway-client', toUpstream.first));
  await applyManifest(w.cp, pinSecret(wrongPin.cert));
  const st = await waitReady(w.cp, api);
  assert.deepEqual(st.certificates, [certId(client.first), certId(toUpstream.first)]);
  const held = (await admin(w.gw, 'GET', `/svc/apis/${ID}`)).body as {
    client_certificates?: string[];
    upstream_certificates?: Record<string, string>;
  };
  assert.deepEqual(held.client_certificates, [certId(client.first)]);
  assert.deepEqual(held.upstream_certificates, { '127.0.0.1': certId(toUpstream.first) });
  const key = await admin(w.gw, 'POST', `/svc/keys/${KEY}`, {
    org_id: ORG,
    access_rights: { [ID]: { api_id: ID, api_name: 'partners', versions: ['Default'] } },
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  await waitFor('the API served on its port', async () => {
    const res = await call(client.first).catch(() => undefined);
    return res?.status === 502;
  });
  // The upstream's public key is not the pinned one: refused before any request reaches it.
  const pinned = await call(client.first);
  assert.equal(pinned.status, 502);
  assert.match(pinned.json?.error ?? '', /pinned public keys/);
  const without = await call();
  assert.equal(without.status, 401);
  assert.equal(without.json?.error, 'Client certificate required');
  assert.equal((await call(client.stranger)).status, 403);
});

test('the pin Secret holds the upstream certificate: served, the upstream certificate presented', async () => {
  await applyManifest(w.cp, pinSecret(upstream.cert.cert));
  await waitFor('the upstream served through its pin', async () => (await call(client.first)).status === 200);
  assert.equal(presented(await call(client.first)), toUpstream.first.fingerprint);
  assert.equal((await call()).status, 401);
  assert.equal((await call(client.stranger)).status, 403);
  // Nothing is uploaded for a pin.
  assert.equal(
    (await admin(w.gw, 'GET', `/svc/certs/${ORG}${fingerprintOfPem(upstream.cert.cert)}`)).status,
    404,
  );
});

/**
 * The pin Secret as the reference operator's documentation has users write it: type
 * kubernetes.io/tls, `tls.crt` the upstream's public key as `openssl x509 -pubkey -noout` prints
 * it, `tls.key` empty.
 */
const referencePinSecret = (tlsCrt: string): string => `apiVersion: v1
kind: Secret
metadata: {name: upstream-pin, namespace: ${NS}}
type: kubernetes.io/tls
data:
  tls.crt: ${Buffer.from(tlsCrt).toString('base64')}
  tls.key: ""
`;

test("the reference's pin Secret: a placeholder is SecretInvalid naming it; the upstream's public key in tls.crt serves", async () => {
  await applyManifest(w.cp, pinSecret(wrongPin.cert));
  await waitFor('the wrong pin refused again', async () => (await call(client.first)).status === 502);
  // A Secret's type cannot change: the Opaque one goes, the kubernetes.io/tls one comes.
  await w.cp.kubectl(['delete', 'secret', 'upstream-pin', '-n', NS, '--wait=true']);
  await applyManifest(w.cp, referencePinSecret('<PUBLIC_KEY>'));
  const invalid = await waitForStatus(
    w.cp,
    api,
    'SecretInvalid',
    (s) => readyOf(s)?.reason === 'SecretInvalid',
  );
  assert.equal(readyOf(invalid)?.status, 'False');
  assert.match(
    readyOf(invalid)?.message ?? '',
    /^spec\.pinned_public_keys_refs.*Secret shop\/upstream-pin tls\.crt does not parse as a PEM certificate or public key/,
  );
  const publicKey = new X509Certificate(upstream.cert.cert).publicKey
    .export({ type: 'spki', format: 'pem' })
    .toString();
  await applyManifest(w.cp, referencePinSecret(publicKey));
  await waitReady(w.cp, api);
  await waitFor(
    'the upstream served through the public-key pin',
    async () => (await call(client.first)).status === 200,
  );
  assert.equal(presented(await call(client.first)), toUpstream.first.fingerprint);
});

test('the Secrets rotated: the new certificates used, the old ones deleted from the gateway', async () => {
  await applyManifest(w.cp, tlsSecretManifest(NS, 'partners-client', client.rotated));
  await applyManifest(w.cp, tlsSecretManifest(NS, 'gateway-client', toUpstream.rotated));
  await waitForStatus(
    w.cp,
    api,
    'the rotated certificates recorded',
    (s) =>
      readyOf(s)?.status === 'True' &&
      JSON.stringify(s.certificates) === JSON.stringify([certId(client.rotated), certId(toUpstream.rotated)]),
  );
  await waitFor(
    'the rotated client certificate allowed',
    async () => (await call(client.rotated)).status === 200,
  );
  assert.equal(presented(await call(client.rotated)), toUpstream.rotated.fingerprint);
  assert.equal((await call(client.first)).status, 403);
  for (const old of [client.first, toUpstream.first]) {
    assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(old)}`)).status, 404);
  }
});

test('the API deleted: its certificates deleted from the gateway', async () => {
  await w.cp.kubectl(['delete', 'apidefinition', 'partners', '-n', NS, '--wait=true']);
  await waitFor('the certificates deleted', async () => {
    for (const c of [client.rotated, toUpstream.rotated]) {
      if ((await admin(w.gw, 'GET', `/svc/certs/${certId(c)}`)).status !== 404) return false;
    }
    return true;
  });
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/${ID}`)).status, 404);
});
