/**
 * Certificates for mutual TLS and `/svc/certs` tests, made with @peculiar/x509 (lib/x509.ts) on node's
 * webcrypto: self-signed ECDSA P-256, any validity window, the key as PKCS#8 or SEC1 PEM.
 */
import { createHash, createPrivateKey, webcrypto } from 'node:crypto';
import { x509 } from '../../lib/x509.ts';

/** A certificate and its key, PEM, and the SHA-256 hex of the certificate's DER. */
export interface MadeCert {
  cert: string;
  /** PKCS#8 */
  key: string;
  /** SEC1 (`BEGIN EC PRIVATE KEY`) */
  sec1Key: string;
  fingerprint: string;
}

/** A self-signed certificate for `cn` (also its DNS name), valid from `notBefore` to `notAfter`. */
export async function makeCert(
  cn: string,
  opts: { notBefore?: Date; notAfter?: Date; dnsNames?: string[] } = {},
): Promise<MadeCert> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: createHash('sha256')
      .update(cn + String(now) + String(Math.random()))
      .digest('hex')
      .slice(0, 16),
    name: `CN=${cn}`,
    notBefore: opts.notBefore ?? new Date(now - 3600_000),
    notAfter: opts.notAfter ?? new Date(now + 86400_000),
    keys,
    signingAlgorithm: alg,
    extensions: [
      new x509.SubjectAlternativeNameExtension(
        (opts.dnsNames ?? [cn]).map((value) => ({ type: 'dns', value })),
      ),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyObject = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return {
    cert: cert.toString('pem'),
    key: keyObject.export({ type: 'pkcs8', format: 'pem' }).toString(),
    sec1Key: keyObject.export({ type: 'sec1', format: 'pem' }).toString(),
    fingerprint: createHash('sha256').update(Buffer.from(cert.rawData)).digest('hex'),
  };
}

/** The client certificates of the mutual TLS tests: two valid ones and one that expired a day ago. */
export async function clientCerts(): Promise<{ allowed: MadeCert; other: MadeCert; expired: MadeCert }> {
  return {
    allowed: await makeCert('allowed-client'),
    other: await makeCert('other-client'),
    expired: await makeCert('expired-client', {
      notBefore: new Date(Date.now() - 2 * 86400_000),
      notAfter: new Date(Date.now() - 86400_000),
    }),
  };
}
