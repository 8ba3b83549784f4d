/**
 * Mutual TLS. Static (`use_mutual_tls_auth` with `client_certificates`, certificate IDs from
 * `/svc/certs`): an API-wide check in the first stage; a client without a certificate gets 401
 * `Client certificate required`, one whose leaf certificate (matched by the SHA-256 of its DER)
 * is not in the list 403 `Certificate with SHA256 <fingerprint> not allowed` (the reference
 * gateway's message), an expired one 401 `Certificate has expired`. The list is resolved when
 * routes load: a listed certificate deleted from `/svc/certs` stops passing at the next reload.
 *
 * Dynamic (`auth.use_certificate`): `certificateKey` finds the key bound to the presented
 * certificate for the auth-token middleware (gateway/certs/ certKeyOf).
 *
 * HTTPS listeners ask every client for a certificate without requiring one or checking its
 * issuer (server/listeners.ts): trust comes from the fingerprint lists here, not from a CA.
 */
import type { X509Certificate } from 'node:crypto';
import { CERTS, certKeyOf, fingerprintOfId, type StoredCert } from '../../certs/certs.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import type { LoadedKey, Sessions } from '../../sessions/sessions.ts';

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
function outsideValidity(cert: X509Certificate, now: number): boolean {
  const r = readOf(cert);
  return r.notAfter <= now || r.notBefore > now;
}

/** See the module comment (static mutual TLS). */
export const mutualTls: GatewayMiddleware = {
  name: 'mutual-tls',
  enabled: (api) => api.use_mutual_tls_auth === true,
  // The stored certificates are read at compile time: recompiled at every reload.
  readsOutside: true,
  create: async (api, deps) => {
    const allowed = new Set<string>();
    for (const id of api.client_certificates ?? []) {
      const stored = (await deps.store.get(CERTS, id)) as StoredCert | undefined;
      if (stored !== undefined) allowed.add(stored.fingerprint);
      else {
        deps.log.warn('client certificate not found, not allowed', { api_id: api.api_id, cert_id: id });
      }
    }
    return around(async (ctx, next) => {
      const cert = ctx.peerCertificate();
      if (cert === undefined) return reject(ctx, certErrors.required());
      const fingerprint = fingerprintOf(cert);
      if (!allowed.has(fingerprint)) return reject(ctx, certErrors.notAllowed(fingerprint));
      if (outsideValidity(cert, deps.now())) return reject(ctx, certErrors.expired());
      await next();
      return undefined;
    });
  },
};

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
