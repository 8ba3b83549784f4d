/**
 * ApiDefinition `certificate_secret_names` end to end: a real control plane, a gateway started
 * with a default TLS certificate, the operator as a process. The API is applied before its
 * Secret (SecretNotFound, then Ready once the Secret appears), its certificate is uploaded to
 * `/svc/certs` and served to clients whose SNI is the API's domain, a rotated Secret replaces the
 * certificate (the old one deleted), and deleting the API deletes its certificate.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet } from '../../gateway/testing/tls-client.ts';
import { freePort, startEchoUpstream, waitFor } from '../harness/processes.ts';
import { admin, applyManifest, readyOf, tlsSecretManifest, waitForStatus, type Status } from './helpers.ts';
import { startTlsSuite, stopTlsSuite, waitReady, type TlsSuite } from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'shop';
const ID = derivedId(NS, 'secure');
const DOMAIN = 'secure.example';
const api = { kind: 'apidefinition', ns: NS, name: 'secure' };

let w: TlsSuite;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let apiPort: number;
let first: MadeCert;
let rotated: MadeCert;

before(async () => {
  upstream = await startEchoUpstream();
  w = await startTlsSuite('certs', NS, ORG);
  apiPort = await freePort();
  first = await makeCert(DOMAIN);
  rotated = await makeCert(DOMAIN);
});

after(() => stopTlsSuite(w, upstream));

const certId = (c: MadeCert): string => ORG + c.fingerprint;

const tlsSecret = (c: MadeCert): string => tlsSecretManifest(NS, 'secure-tls', c);

/** SHA-256 hex of the certificate the API's port presents for SNI `DOMAIN`. */
const servedFingerprint = async (): Promise<string> =>
  (await tlsGet(apiPort, '/secure/', { servername: DOMAIN })).serverFingerprint;

test('an API naming a Secret that does not exist yet: SecretNotFound, nothing pushed', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: secure, namespace: ${NS}}
spec:
  name: secure
  use_keyless: true
  protocol: https
  listen_port: ${apiPort}
  domain: ${DOMAIN}
  proxy:
    listen_path: /secure/
    target_url: ${upstream.url}
  certificate_secret_names: [secure-tls]
`,
  );
  const st = await waitForStatus(w.cp, api, 'SecretNotFound', (s) => readyOf(s)?.reason === 'SecretNotFound');
  assert.equal(readyOf(st)?.status, 'False');
  assert.match(readyOf(st)?.message ?? '', /Secret shop\/secure-tls .*does not exist/);
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/${ID}`)).status, 404);
});

test('the Secret applied: uploaded, its ID in the pushed definition, served for the domain', async () => {
  await applyManifest(w.cp, tlsSecret(first));
  const st: Status = await waitReady(w.cp, api);
  assert.deepEqual(st.certificates, [certId(first)]);
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(first)}`)).status, 200);
  const held = await admin(w.gw, 'GET', `/svc/apis/${ID}`);
  assert.deepEqual((held.body as { certificates?: string[] }).certificates, [certId(first)]);
  await waitFor(
    'the uploaded certificate served',
    async () => (await servedFingerprint()) === first.fingerprint,
  );
});

test('the Secret rotated: the new certificate uploaded and served, the old one deleted', async () => {
  await applyManifest(w.cp, tlsSecret(rotated));
  await waitForStatus(
    w.cp,
    api,
    'the rotated certificate recorded',
    (s) =>
      readyOf(s)?.status === 'True' && JSON.stringify(s.certificates) === JSON.stringify([certId(rotated)]),
  );
  const held = await admin(w.gw, 'GET', `/svc/apis/${ID}`);
  assert.deepEqual((held.body as { certificates?: string[] }).certificates, [certId(rotated)]);
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(rotated)}`)).status, 200);
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${certId(first)}`)).status, 404);
  await waitFor(
    'the rotated certificate served',
    async () => (await servedFingerprint()) === rotated.fingerprint,
  );
});

test('the API deleted: its certificate deleted from the gateway', async () => {
  await w.cp.kubectl(['delete', 'apidefinition', 'secure', '-n', NS, '--wait=true']);
  await waitFor('the certificate deleted', async () => {
    return (await admin(w.gw, 'GET', `/svc/certs/${certId(rotated)}`)).status === 404;
  });
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/${ID}`)).status, 404);
});
