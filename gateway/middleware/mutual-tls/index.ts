/**
 * Mutual TLS. Static (`use_mutual_tls_auth` with `client_certificates`, certificate IDs from
 * `/svc/certs`): an API-wide check in the first stage; a client without a certificate gets 401
 * `Client certificate required`, one whose leaf certificate (matched by the SHA-256 of its DER)
 * is not in the list 403 `Certificate with SHA256 <fingerprint> not allowed` (the reference
 * gateway's message), an expired one 401 `Certificate has expired`. The list is resolved when
 * routes load: a listed certificate deleted from `/svc/certs` stops passing at the next reload.
 *
 * Dynamic (`auth.use_certificate`): the auth-token middleware finds the key bound to the
 * presented certificate (sessions/client-certificates.ts `certificateKey`).
 *
 * HTTPS listeners ask every client for a certificate without requiring one or checking its
 * issuer (server/listeners.ts): trust comes from the fingerprint lists here, not from a CA.
 */
import { CERTS, type StoredCert } from '../../certs/certs.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { certErrors, fingerprintOf, outsideValidity } from '../../sessions/client-certificates.ts';

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
