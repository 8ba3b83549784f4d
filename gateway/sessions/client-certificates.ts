/**
 * Client certificates as credentials: their fingerprint and validity, read once per certificate
 * object, and the key a certificate is bound to (dynamic mutual TLS, `auth.use_certificate`).
 * Both the static check (middleware/mutual-tls) and auth tokens (middleware/auth-token) use them.
 */
import type { X509Certificate } from 'node:crypto';
import { certKeyOf, fingerprintOfId } from '../certs/certs.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { LoadedKey, Sessions } from './sessions.ts';

/** The refusals of mutual TLS. */
export const certErrors = {
  required: (): GatewayError =>
    new GatewayError('GW_ERR_CLIENT_CERT_REQUIRED', 401, 'Client certificate required'),
  notAllowed: (fingerprint: string): GatewayError =>
    new GatewayError(
      'GW_ERR_CLIENT_CERT_NOT_ALLOWED',
      403,
      `Certificate with SHA256 ${fingerprint} not allowed`,
    ),
  expired: (): GatewayError => new GatewayError('GW_ERR_CLIENT_CERT_EXPIRED', 401, 'Certificate has expired'),
} as const;

/** Lower-case hex SHA-256 of a certificate's DER (node gives it as `AB:CD:...`). */
export function fingerprintOf(cert: X509Certificate): string {
  return readOf(cert).fingerprint;
}

/**
 * What the checks read of a certificate, worked out once per certificate object (a connection's
 * peer certificate is one object for all its requests: RequestContext.peerCertificate).
 */
const read = new WeakMap<X509Certificate, { fingerprint: string; notBefore: number; notAfter: number }>();
function readOf(cert: X509Certificate): { fingerprint: string; notBefore: number; notAfter: number } {
  let r = read.get(cert);
  if (r === undefined) {
    r = {
      fingerprint: cert.fingerprint256.replaceAll(':', '').toLowerCase(),
      notBefore: Date.parse(cert.validFrom),
      notAfter: Date.parse(cert.validTo),
    };
    read.set(cert, r);
  }
  return r;
}

/** Whether a certificate's validity has ended (or not begun) at `now` (ms). */
export function outsideValidity(cert: X509Certificate, now: number): boolean {
  const r = readOf(cert);
  return r.notAfter <= now || r.notBefore > now;
}

/**
 * Dynamic mutual TLS: the key bound to the certificate the client presents (for an API of
 * organisation `orgId`), an error for an expired certificate, or undefined when there is no
 * certificate or no key bound to it (the token is then looked for as usual).
 */
export async function certificateKey(
  ctx: RequestContext,
  orgId: string,
  sessions: Sessions,
  now: number,
): Promise<LoadedKey | GatewayError | undefined> {
  const cert = ctx.peerCertificate();
  if (cert === undefined) return undefined;
  if (outsideValidity(cert, now)) return certErrors.expired();
  return sessions.byKey(certKeyOf(orgId, fingerprintOf(cert)));
}

/**
 * Whether a key found by its token may be used: a key bound to a certificate only by a client
 * presenting that certificate (its raw value is derived from public data: certKeyOf).
 */
export function boundCertificatePresented(ctx: RequestContext, key: LoadedKey): boolean {
  const bound = key.stored.certificate ?? '';
  if (bound === '') return true;
  const cert = ctx.peerCertificate();
  return cert !== undefined && fingerprintOf(cert) === fingerprintOfId(bound);
}
