/**
 * Fixtures of the certificates-by-Secret suites: a plain upstream that names itself, an HTTPS
 * upstream that requires a client certificate and answers with the fingerprint of the one it got,
 * the manifest of a Secret holding only a certificate (a pinned public key: the upstream's key is
 * not the gateway's), the ConfigMap of a keyless OAS document, and the steps of the OAS suites'
 * certificate Secrets (an API naming one that does not exist yet, a rotation recorded).
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { TLSSocket } from 'node:tls';
import assert from 'node:assert/strict';
import { selfSignedCert, type TestCert } from '../../gateway/testing/certs.ts';
import { derivedId } from '../../operator/ids.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import type { GatewayProc } from '../harness/processes.ts';
import { admin, applyManifest, readyOf, waitForStatus } from './helpers.ts';

/** A running mutual-TLS upstream. */
export interface MtlsUpstream {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** Its own certificate (self-signed, for localhost and 127.0.0.1). */
  cert: TestCert;
  close: () => Promise<void>;
}

/**
 * Starts an HTTPS upstream on 127.0.0.1 that accepts only clients presenting one of `clients`;
 * it answers `{"upstream": "<the SHA-256 hex of the client's certificate>"}`.
 */
export async function startMtlsUpstream(clients: readonly string[]): Promise<MtlsUpstream> {
  const cert = selfSignedCert();
  const server = createServer(
    { cert: cert.cert, key: cert.key, requestCert: true, rejectUnauthorized: true, ca: [...clients] },
    (req, res) => {
      const peer = req.socket instanceof TLSSocket ? req.socket.getPeerX509Certificate() : undefined;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ upstream: peer?.fingerprint256.replaceAll(':', '').toLowerCase() ?? '' }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    cert,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A Secret (type Opaque) holding only `tls.crt`: what a pinned public key needs. */
export const pinSecretManifest = (
  ns: string,
  name: string,
  certPem: string | Buffer,
): string => `apiVersion: v1
kind: Secret
metadata: {name: ${name}, namespace: ${ns}}
type: Opaque
data:
  tls.crt: ${Buffer.from(certPem).toString('base64')}
`;

/** Starts a plain HTTP upstream on 127.0.0.1 answering every request `{"upstream": "<name>"}`. */
export async function startNamedUpstream(name: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createHttpServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ upstream: name }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The ConfigMap `<name>-oas` (key `oas.yaml`) of a keyless OAS document titled `title`: the API
 * `name`, active, at `/<name>/` (stripped) proxying to `target`.
 */
export const oasConfigMap = (
  ns: string,
  name: string,
  title: string,
  target: string,
): string => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-oas, namespace: ${ns}}
data:
  oas.yaml: |
    openapi: 3.0.3
    info: {title: ${title}, version: 1.0.0}
    paths: {}
    x-svc-api-gateway:
      info:
        name: ${name}
        state: {active: true}
      upstream:
        url: ${target}
      server:
        listenPath: {value: /${name}/, strip: true}
`;

/**
 * The keyless OAS API `name` of namespace `ns` (its document titled `title`, proxying to `target`)
 * with `spec` (YAML lines of its spec after svcOAS) naming a certificate Secret that does not exist
 * yet: it says SecretNotFound, Ready False, its message matching `message`; the gateway does not
 * hold it.
 */
export async function oasApiBeforeItsSecret(
  cp: Pick<ControlPlane, 'kubectl'>,
  gw: Pick<GatewayProc, 'url' | 'secret'>,
  o: { ns: string; name: string; title: string; target: string; spec: string; message: RegExp },
): Promise<void> {
  await applyManifest(cp, oasConfigMap(o.ns, o.name, o.title, o.target));
  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata: {name: ${o.name}, namespace: ${o.ns}}
spec:
  svcOAS:
    configmapRef: {name: ${o.name}-oas, keyName: oas.yaml}
${o.spec}`,
  );
  const api = { kind: 'svcoasapidefinition', ns: o.ns, name: o.name };
  const st = await waitForStatus(cp, api, 'SecretNotFound', (s) => readyOf(s)?.reason === 'SecretNotFound');
  assert.equal(readyOf(st)?.status, 'False');
  assert.match(readyOf(st)?.message ?? '', o.message);
  assert.equal((await admin(gw, 'GET', `/svc/apis/${derivedId(o.ns, o.name)}`)).status, 404);
}

/** Waits until the API is Ready with exactly the certificate `id` recorded (after a Secret's rotation). */
export async function waitCertificateRecorded(
  cp: Pick<ControlPlane, 'kubectl'>,
  api: { kind: string; ns: string; name: string },
  id: string,
): Promise<void> {
  await waitForStatus(
    cp,
    api,
    'the rotated certificate recorded',
    (s) => readyOf(s)?.status === 'True' && JSON.stringify(s.certificates) === JSON.stringify([id]),
  );
}
