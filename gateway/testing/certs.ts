/** A self-signed certificate for 127.0.0.1 and localhost, made with openssl for a test run. */
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM certificate and key, and the files they are in. */
export interface TestCert {
  cert: Buffer;
  key: Buffer;
  certFile: string;
  keyFile: string;
}

/** Generates a fresh self-signed certificate (EC P-256, one day). */
export function selfSignedCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'svc-gw-cert-'));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(certFile), key: readFileSync(keyFile), certFile, keyFile };
}

/** The SHA-256 hex of a PEM certificate's DER, as the gateway names certificates and TLS clients report them. */
export const fingerprintOfPem = (pem: Buffer | string): string =>
  new X509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();

/** `sha256/<base64>` of a certificate's public key (DER SubjectPublicKeyInfo): a `pinned_public_keys` pin. */
export function pinOf(pem: Buffer | string): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256/${createHash('sha256').update(spki).digest('base64')}`;
}
