/**
 * Fixtures of the certificates-by-Secret suites: a plain upstream that names itself, an HTTPS
 * upstream that requires a client certificate and answers with the fingerprint of the one it got,
 * the manifest of a Secret holding only a certificate (a pinned public key: the upstream's key is
 * not the gateway's), and the ConfigMap of a keyless OAS document.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { TLSSocket } from 'node:tls';
import { selfSignedCert, type TestCert } from '../../gateway/testing/certs.ts';

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
