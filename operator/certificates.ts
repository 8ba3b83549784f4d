/**
 * Certificates from `kubernetes.io/tls` Secrets, as the gateway's `/svc/certs` stores them: the
 * upload is the PEM of `tls.crt` (the leaf, then its chain) and `tls.key`; the ID is the org ID
 * followed by the SHA-256 hex of the leaf's DER, so the operator knows it without asking.
 */
import { createHash, createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';

/** The parts of a Secret the operator reads: `data` is base64, as the API server gives it. */
export interface SecretContent {
  type?: string;
  data?: Record<string, string>;
}

/** The gateway's ID of a certificate uploaded for `orgId` (throws when the PEM does not parse). */
export function certificateId(pem: string, orgId: string): string {
  const leaf = new X509Certificate(pem);
  return orgId + createHash('sha256').update(leaf.raw).digest('hex');
}

/** A TLS Secret read for upload: the PEM to send and its ID, or what is wrong with it. */
export type TlsSecret = { ok: true; pem: string; id: string } | { ok: false; problem: string };

/** A key of a Secret's data as text; undefined when absent. */
function dataText(secret: SecretContent, key: string): string | undefined {
  const b64 = secret.data?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
}

/** Reads `tls.crt` and `tls.key` of a Secret into an upload for `orgId`. */
export function tlsUploadOf(secret: SecretContent, orgId: string): TlsSecret {
  const text = (key: string): string | undefined => dataText(secret, key);
  const crt = text('tls.crt');
  const key = text('tls.key');
  if (crt === undefined || crt.trim() === '' || key === undefined || key.trim() === '') {
    return { ok: false, problem: 'needs tls.crt and tls.key (a Secret of type kubernetes.io/tls)' };
  }
  let id: string;
  try {
    id = certificateId(crt, orgId);
  } catch (err) {
    return { ok: false, problem: `tls.crt does not parse as a PEM certificate: ${(err as Error).message}` };
  }
  // Checked here, so that the status names the Secret: the gateway refused the upload with only
  // "Private key does not match the certificate". No message quotes the key.
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    return {
      ok: false,
      problem: 'tls.key does not parse as a PEM private key (PKCS#8, PKCS#1 or SEC1, unencrypted)',
    };
  }
  if (!new X509Certificate(crt).checkPrivateKey(privateKey)) {
    return {
      ok: false,
      problem:
        "tls.key is not the private key of tls.crt's certificate: put that certificate's key in tls.key",
    };
  }
  return { ok: true, pem: `${crt.trimEnd()}\n${key.trimEnd()}\n`, id };
}

/** The pin of a Secret's `tls.crt` public key (`pinned_public_keys_refs`), or what is wrong with it. */
export type PinSecret = { ok: true; pin: string } | { ok: false; problem: string };

/** A PEM public key block (`openssl x509 -pubkey -noout` writes `PUBLIC KEY`; PKCS#1 `RSA PUBLIC KEY`). */
const PUBLIC_KEY_PEM = /-----BEGIN (RSA )?PUBLIC KEY-----[\s\S]*?-----END \1PUBLIC KEY-----/;

/**
 * The public-key pin of a Secret's `tls.crt`, as `pinned_public_keys` writes one: `sha256/` and
 * the base64 SHA-256 of its DER SubjectPublicKeyInfo. `tls.crt` holds either a certificate (its
 * leaf's key is pinned) or the public key itself, as the reference operator's documentation has
 * users write it (`openssl x509 -pubkey -noout`, in a `kubernetes.io/tls` Secret whose `tls.key`
 * is empty). Only public material is read (a pinned upstream's key is not the gateway's to hold),
 * so nothing is uploaded; a private key in `tls.crt` is refused, not turned into its public half.
 */
export function publicKeyPinOf(secret: SecretContent): PinSecret {
  const crt = dataText(secret, 'tls.crt');
  if (crt === undefined || crt.trim() === '') {
    return {
      ok: false,
      problem: 'needs tls.crt (the certificate or public key to pin)',
    };
  }
  const publicKeyBlock = crt.includes('CERTIFICATE-----') ? undefined : PUBLIC_KEY_PEM.exec(crt)?.[0];
  try {
    const key =
      publicKeyBlock !== undefined ? createPublicKey(publicKeyBlock) : new X509Certificate(crt).publicKey;
    const spki = key.export({ type: 'spki', format: 'der' });
    return { ok: true, pin: `sha256/${createHash('sha256').update(spki).digest('base64')}` };
  } catch (err) {
    const what = publicKeyBlock !== undefined ? 'a PEM public key' : 'a PEM certificate or public key';
    return { ok: false, problem: `tls.crt does not parse as ${what}: ${(err as Error).message}` };
  }
}

/** A client certificate read for a certificate-bound key: the upload, its ID and fingerprint. */
export type ClientCertificate =
  { ok: true; pem: string; id: string; fingerprint: string } | { ok: false; problem: string };

/**
 * Reads the leaf of a Secret's `tls.crt` as a client certificate to bind a key to (dynamic
 * mTLS): the upload is the certificate alone, since the gateway checks what a client presents
 * and needs no private key (`tls.key` stays in the cluster). The ID is the one `/svc/certs`
 * gives it for `orgId`; the fingerprint (SHA-256 hex of the DER) names the bound key.
 */
export function clientCertificateOf(secret: SecretContent, orgId: string): ClientCertificate {
  const crt = dataText(secret, 'tls.crt');
  if (crt === undefined || crt.trim() === '') {
    return {
      ok: false,
      problem: 'needs tls.crt, the client certificate (a Secret of type kubernetes.io/tls)',
    };
  }
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(crt);
  } catch (err) {
    return { ok: false, problem: `tls.crt does not parse as a PEM certificate: ${(err as Error).message}` };
  }
  const fingerprint = createHash('sha256').update(leaf.raw).digest('hex');
  return { ok: true, pem: `${leaf.toString().trimEnd()}\n`, id: orgId + fingerprint, fingerprint };
}
