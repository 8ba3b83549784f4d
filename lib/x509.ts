/**
 * Just enough X.509 to run a private CA: a self-signed CA and serving certificates it signs.
 *
 * Node can generate keys, sign and parse certificates, but not build them. The DER here covers
 * one fixed certificate shape (ECDSA P-256 keys, SHA-256 signatures, a CN-only name, the usual
 * v3 extensions); OpenSSL does the cryptography. Every certificate is checked by parsing it back
 * with `X509Certificate` before it is returned.
 */
import {
  X509Certificate,
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import net from 'node:net';

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

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

// --- DER ---------------------------------------------------------------------------------

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
/** Context-specific tag: constructed (EXPLICIT) or primitive (IMPLICIT). */
const ctx = (n: number, content: Buffer, constructed: boolean): Buffer =>
  tlv((constructed ? 0xa0 : 0x80) | n, content);

/** A non-negative INTEGER from big-endian magnitude bytes. */
function uint(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  let b = bytes.subarray(i);
  if ((b[0] ?? 0) & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const [a = 0, b = 0, ...rest] = parts;
  const out: number[] = [a * 40 + b];
  for (const p of rest) {
    const chunk: number[] = [p & 0x7f];
    for (let v = p >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** BIT STRING of whole bytes (signatures, keys). */
const bits = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));

/** BIT STRING of named bits (KeyUsage), DER-minimal: trailing zero bits dropped. */
function namedBits(positions: readonly number[]): Buffer {
  const last = Math.max(...positions);
  const bytes = Buffer.alloc(Math.floor(last / 8) + 1);
  for (const p of positions) bytes[p >> 3] = (bytes[p >> 3] ?? 0) | (0x80 >> (p & 7));
  return tlv(0x03, Buffer.concat([Buffer.from([7 - (last & 7)]), bytes]));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${iso}Z`, 'ascii'));
}

function ipBytes(ip: string): Buffer {
  if (net.isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!net.isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  // Expand `::` and an embedded IPv4 tail into eight 16-bit groups.
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = v4[1].split('.').map(Number);
    text = `${text.slice(0, -v4[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

const name = (cn: string): Buffer => seq(set(seq(oid(OID.commonName), utf8(cn))));

const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

/** SHA-1 of the subjectPublicKey bits (RFC 5280 4.2.1.2, method 1). */
function keyId(spki: Buffer): Buffer {
  // SPKI = SEQ { SEQ algorithm, BIT STRING key }; for P-256 the key is the last 65 bytes.
  return createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
}

// --- certificates --------------------------------------------------------------------------

interface Issuer {
  name: string;
  key: KeyObject;
  spki: Buffer;
}

function build(opts: {
  subject: string;
  spki: Buffer;
  issuer: Issuer;
  isCa: boolean;
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
  validityDays: number;
  now: Date;
}): string {
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01;
  const notBefore = new Date(opts.now.getTime() - 3_600_000);
  const notAfter = new Date(opts.now.getTime() + opts.validityDays * 86_400_000);
  const sigAlg = seq(oid(OID.ecdsaWithSha256));
  const extensions = [
    extension(OID.basicConstraints, true, opts.isCa ? seq(bool(true), uint(Buffer.from([0]))) : seq()),
    // CA: keyCertSign (5) and cRLSign (6); leaf: digitalSignature (0).
    extension(OID.keyUsage, true, namedBits(opts.isCa ? [5, 6] : [0])),
    extension(OID.subjectKeyIdentifier, false, octets(keyId(opts.spki))),
    extension(OID.authorityKeyIdentifier, false, seq(ctx(0, keyId(opts.issuer.spki), false))),
  ];
  if (!opts.isCa) {
    extensions.push(extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))));
    const san = [
      ...opts.dnsNames.map((d) => ctx(2, Buffer.from(d, 'ascii'), false)),
      ...opts.ipAddresses.map((ip) => ctx(7, ipBytes(ip), false)),
    ];
    if (san.length > 0) extensions.push(extension(OID.subjectAltName, false, seq(...san)));
  }
  const tbs = seq(
    ctx(0, uint(Buffer.from([2])), true),
    uint(serial),
    sigAlg,
    name(opts.issuer.name),
    seq(time(notBefore), time(notAfter)),
    name(opts.subject),
    opts.spki,
    ctx(3, seq(...extensions), true),
  );
  const signature = sign('sha256', tbs, opts.issuer.key);
  const der = seq(tbs, sigAlg, bits(signature));
  const pem = `-----BEGIN CERTIFICATE-----\n${(der.toString('base64').match(/.{1,64}/g) ?? []).join('\n')}\n-----END CERTIFICATE-----\n`;
  new X509Certificate(pem); // throws if the encoding is wrong
  return pem;
}

function newKey(): { key: KeyObject; spki: Buffer; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    key: privateKey,
    spki: publicKey.export({ type: 'spki', format: 'der' }),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** A new self-signed CA that may sign end-entity certificates only (pathLen 0). */
export function createCa(opts: { commonName: string; validityDays: number; now?: Date }): KeyPair {
  const k = newKey();
  const certPem = build({
    subject: opts.commonName,
    spki: k.spki,
    issuer: { name: opts.commonName, key: k.key, spki: k.spki },
    isCa: true,
    dnsNames: [],
    ipAddresses: [],
    validityDays: opts.validityDays,
    now: opts.now ?? new Date(),
  });
  return { certPem, keyPem: k.keyPem };
}

/** A serving certificate (serverAuth) for `req`, signed by `ca`. */
export function issueServingCert(ca: KeyPair, req: CertRequest): KeyPair {
  const caCert = new X509Certificate(ca.certPem);
  const caKey = createPrivateKey(ca.keyPem);
  const caSpki = caCert.publicKey.export({ type: 'spki', format: 'der' });
  const k = newKey();
  const certPem = build({
    subject: req.commonName,
    spki: k.spki,
    issuer: { name: commonNameOf(caCert), key: caKey, spki: caSpki },
    isCa: false,
    dnsNames: req.dnsNames ?? [],
    ipAddresses: req.ipAddresses ?? [],
    validityDays: req.validityDays,
    now: req.now ?? new Date(),
  });
  return { certPem, keyPem: k.keyPem };
}

function commonNameOf(cert: X509Certificate): string {
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1];
  if (cn === undefined) throw new Error(`certificate subject has no CN: ${cert.subject}`);
  return cn;
}
