/**
 * Certificates the gateway keeps (`/svc/certs`): client certificates that static and dynamic
 * mutual TLS allow, and the certificates (with private keys) HTTPS listeners serve per API by SNI.
 *
 * A certificate is stored in the `certs` collection under its ID: the organisation ID followed by
 * the SHA-256 hex of the leaf certificate's DER (the reference gateway's scheme), so the same
 * certificate uploaded twice by one organisation is one document. A private key given with it is
 * checked against the certificate, converted to PKCS#8 and stored encrypted (AES-256-GCM under a
 * key derived with HKDF from the gateway secret: sessions/secrets.ts); it is never returned.
 * Certificates are parsed with @peculiar/x509 (lib/x509.ts, on node's webcrypto), keys with node:crypto.
 * The library (with tsyringe and the ASN.1 modules, about 10 MiB resident) is loaded at the first
 * upload, not in every worker at start: most gateways never parse a certificate (issue 33 item 4).
 */
import { createPrivateKey, createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import type * as x509Module from '../../lib/x509.ts';
import { openSecret, sealSecret } from '../sessions/secrets.ts';
import type { Collection, Store } from '../store/store.ts';

/** @peculiar/x509, as lib/x509.ts configures it. */
type X509 = typeof x509Module.x509;

/** The collection certificates live in. */
export const CERTS = 'certs' satisfies Collection;

/** A stored certificate (the document in the `certs` collection). */
export interface StoredCert {
  id: string;
  org_id: string;
  /** SHA-256 hex of the leaf DER. */
  fingerprint: string;
  /** The leaf certificate, PEM; chain certificates that followed it, PEM, in order. */
  cert_pem: string;
  chain_pem?: string[];
  /** The PKCS#8 private key, sealed (`enc:v1:...`) under the gateway secret. */
  private_key?: string;
  subject: string;
  issuer: string;
  /** ISO 8601. */
  not_before: string;
  not_after: string;
  dns_names: string[];
  /** SHA-256 hex of the certificate's SubjectPublicKeyInfo (for pinning). */
  spki_sha256: string;
}

/** What `GET /svc/certs?mode=detailed` and `GET /svc/certs/{id}` show of a certificate. */
export interface CertDetails {
  id: string;
  org_id: string;
  fingerprint: string;
  subject: string;
  issuer: string;
  not_before: string;
  not_after: string;
  dns_names: string[];
  has_private_key: boolean;
}

/** A PEM upload that can't be stored, with the message the client gets (400). */
export class CertInputError extends Error {}

/** Lower-case hex SHA-256 of a DER buffer. */
export async function sha256Hex(der: ArrayBuffer | Uint8Array): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', der)).toString('hex');
}

const FINGERPRINT_AT_END = /([0-9a-fA-F]{64})$/;

/**
 * The SHA-256 fingerprint a certificate ID (organisation + fingerprint) or a bare fingerprint
 * names, lower case; undefined when it names none.
 */
export function fingerprintOfId(id: string): string | undefined {
  return FINGERPRINT_AT_END.exec(id.trim())?.[1]?.toLowerCase();
}

const KEY_TYPES = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/**
 * Parses an upload: PEM certificates (the first is the leaf, the rest its chain) and optionally
 * one private key (PKCS#8, PKCS#1 or SEC1). Throws CertInputError saying what is wrong.
 */
export async function parseUpload(
  pem: string,
  orgId: string,
  gatewaySecret: string,
  now: number,
): Promise<StoredCert> {
  const { x509 } = await import('../../lib/x509.ts');
  let blocks: ReturnType<X509['PemConverter']['decodeWithHeaders']>;
  try {
    blocks = x509.PemConverter.decodeWithHeaders(pem);
  } catch {
    blocks = [];
  }
  const certs = blocks.filter((b) => b.type === 'CERTIFICATE');
  const keys = blocks.filter((b) => KEY_TYPES.has(b.type));
  const leafBlock = certs[0];
  if (leafBlock === undefined) {
    throw new CertInputError('Certificate could not be parsed: send a PEM certificate (BEGIN CERTIFICATE)');
  }
  if (keys.length > 1) throw new CertInputError('Certificate upload holds more than one private key');
  let leaf: InstanceType<X509['X509Certificate']>;
  try {
    leaf = new x509.X509Certificate(leafBlock.rawData);
  } catch (err) {
    throw new CertInputError(`Certificate could not be parsed: ${(err as Error).message}`);
  }
  if (leaf.notAfter.getTime() <= now) {
    throw new CertInputError(`Certificate has expired (not after ${leaf.notAfter.toISOString()})`);
  }
  const fingerprint = await sha256Hex(leaf.rawData);
  const spki = Buffer.from(leaf.publicKey.rawData);
  let privateKey: string | undefined;
  const keyBlock = keys[0];
  if (keyBlock !== undefined) {
    let key: KeyObject;
    try {
      key = createPrivateKey({
        key: x509.PemConverter.encode(keyBlock.rawData, keyBlock.type),
        format: 'pem',
      });
    } catch (err) {
      throw new CertInputError(`Private key could not be parsed: ${(err as Error).message}`);
    }
    const keySpki = createPublicKey(key).export({ type: 'spki', format: 'der' });
    if (!keySpki.equals(spki)) throw new CertInputError('Private key does not match the certificate');
    privateKey = sealSecret(key.export({ type: 'pkcs8', format: 'pem' }).toString(), gatewaySecret);
  }
  const san = leaf.getExtension(x509.SubjectAlternativeNameExtension);
  const dnsNames = san?.names.items.filter((n) => n.type === 'dns').map((n) => n.value) ?? [];
  return {
    id: orgId + fingerprint,
    org_id: orgId,
    fingerprint,
    cert_pem: leaf.toString('pem'),
    ...(certs.length > 1
      ? { chain_pem: certs.slice(1).map((b) => x509.PemConverter.encode(b.rawData, 'CERTIFICATE')) }
      : {}),
    ...(privateKey === undefined ? {} : { private_key: privateKey }),
    subject: leaf.subject,
    issuer: leaf.issuer,
    not_before: leaf.notBefore.toISOString(),
    not_after: leaf.notAfter.toISOString(),
    dns_names: dnsNames,
    spki_sha256: await sha256Hex(spki),
  };
}

/** What the management API shows of a stored certificate: never its key. */
export function detailsOf(c: StoredCert): CertDetails {
  return {
    id: c.id,
    org_id: c.org_id,
    fingerprint: c.fingerprint,
    subject: c.subject,
    issuer: c.issuer,
    not_before: c.not_before,
    not_after: c.not_after,
    dns_names: c.dns_names,
    has_private_key: c.private_key !== undefined,
  };
}

/** Certificate (leaf then chain) and decrypted private key of a stored certificate, PEM. */
export interface CertMaterial {
  cert: string;
  key: string | undefined;
}

/**
 * The PEM material of a stored certificate, its key decrypted; undefined when it is not stored.
 * A key sealed under another gateway secret reads as absent.
 */
export async function loadCertMaterial(
  store: Store,
  id: string,
  gatewaySecret: string,
): Promise<CertMaterial | undefined> {
  const c = (await store.get(CERTS, id)) as StoredCert | undefined;
  if (c === undefined) return undefined;
  const cert = [c.cert_pem, ...(c.chain_pem ?? [])].join('\n');
  const key = c.private_key === undefined ? undefined : openSecret(c.private_key, gatewaySecret);
  return { cert, key };
}

/**
 * The raw value of the key bound to a client certificate (dynamic mTLS): derived from the key's
 * organisation and the certificate's fingerprint, so the gateway finds the key from the
 * certificate a client presents (`keyIdOf` of this value is its stored ID). Anyone can compute
 * it, so it is never a credential by itself: the token path refuses a certificate-bound key
 * unless the client presents that certificate.
 */
export function certKeyOf(orgId: string, fingerprint: string): string {
  return `cert:${orgId}:${fingerprint}`;
}
