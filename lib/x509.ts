/**
 * Just enough X.509 to run a private CA: a self-signed CA and serving certificates it signs.
 *
 * Certificates are built with @peculiar/x509 on node's webcrypto: ECDSA P-256 keys, SHA-256
 * signatures, a CN-only subject (UTF8String) and the usual v3 extensions. Keys are PKCS#8 PEM.
 *
 * This module is the only one that imports @peculiar/x509 (a lint rule says so): the others take
 * `x509` from here, configured. Its dependency tsyringe needs the Reflect metadata API when it
 * loads, so the `reflect-metadata` package is imported just before it, here, and no entry point or
 * test can load the library without it, whatever order it imports things in.
 */
import { KeyObject, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import net from 'node:net';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** @peculiar/x509, with the Reflect metadata API it needs loaded and node's webcrypto as its provider. */
export { x509 };

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

/** What a serving certificate is valid for. */
export interface CertRequest {
  commonName: string;
  /** DNS names of the subjectAltName extension. */
  dnsNames?: readonly string[];
  /** IPv4 or IPv6 addresses of the subjectAltName extension. */
  ipAddresses?: readonly string[];
  /** Lifetime in days from now (the start is backdated by an hour for clock skew). */
  validityDays: number;
  /** Defaults to the current time; tests pass a fixed clock. */
  now?: Date;
}

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { ...EC, hash: 'SHA-256' } as const;
const CA_KEY_USAGE: x509.KeyUsageFlags = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;

interface Issuer {
  name: x509.Name;
  key: webcrypto.CryptoKey;
  publicKey: x509.PublicKey;
}

/** A certificate for a new key pair: a CA (self-signed) without `leaf`, else a serving certificate. */
async function issue(opts: {
  commonName: string;
  validityDays: number;
  now: Date;
  leaf?: { issuer: Issuer; dnsNames: readonly string[]; ipAddresses: readonly string[] };
}): Promise<KeyPair> {
  const { leaf } = opts;
  const keys = await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']);
  const subject = new x509.Name([{ CN: [{ utf8String: opts.commonName }] }]);
  const issuer = leaf?.issuer ?? {
    name: subject,
    key: keys.privateKey,
    publicKey: await x509.PublicKey.create(keys.publicKey),
  };
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive, 16 bytes
  const extensions: x509.Extension[] = [
    // A CA signs end-entity certificates only (pathLen 0); a leaf is no CA.
    new x509.BasicConstraintsExtension(!leaf, leaf ? undefined : 0, true),
    new x509.KeyUsagesExtension(leaf ? x509.KeyUsageFlags.digitalSignature : CA_KEY_USAGE, true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(issuer.publicKey),
  ];
  if (leaf) {
    extensions.push(new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]));
    const san: x509.JsonGeneralName[] = [
      ...leaf.dnsNames.map((value) => ({ type: 'dns' as const, value })),
      ...leaf.ipAddresses.map((ip) => ({ type: 'ip' as const, value: canonicalIp(ip) })),
    ];
    if (san.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(san));
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject,
    issuer: issuer.name,
    notBefore: new Date(opts.now.getTime() - 3_600_000),
    notAfter: new Date(opts.now.getTime() + opts.validityDays * 86_400_000),
    publicKey: keys.publicKey,
    signingKey: issuer.key,
    signingAlgorithm: SIGNING,
    extensions,
  });
  return {
    certPem: `${cert.toString('pem')}\n`,
    keyPem: KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** An IP address as @peculiar/x509 parses it: IPv6 in plain hex groups (no dotted IPv4 tail). */
function canonicalIp(ip: string): string {
  if (net.isIPv4(ip)) return ip;
  if (!net.isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
}

/** A new self-signed CA that may sign end-entity certificates only (pathLen 0). */
export async function createCa(opts: {
  commonName: string;
  validityDays: number;
  now?: Date;
}): Promise<KeyPair> {
  return issue({ commonName: opts.commonName, validityDays: opts.validityDays, now: opts.now ?? new Date() });
}

/** A serving certificate (serverAuth) for `req`, signed by `ca`. */
export async function issueServingCert(ca: KeyPair, req: CertRequest): Promise<KeyPair> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = createPrivateKey(ca.keyPem).toCryptoKey(EC, false, ['sign']);
  return issue({
    commonName: req.commonName,
    validityDays: req.validityDays,
    now: req.now ?? new Date(),
    leaf: {
      issuer: { name: caCert.subjectName, key: caKey, publicKey: caCert.publicKey },
      dnsNames: req.dnsNames ?? [],
      ipAddresses: req.ipAddresses ?? [],
    },
  });
}
