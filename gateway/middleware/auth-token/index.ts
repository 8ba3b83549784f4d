/**
 * Auth token authentication: the token is read from the header (`auth_header_name`, default
 * `Authorization`), the query parameter and the cookie the API enables (`auth_configs.authToken`,
 * or the classic `auth`), a leading `Bearer ` in any case removed, and looked up by its hash.
 * It is the default of every API that is not keyless and enables no other method.
 */
import { tokenAuthConfigOf } from '../../../schemas/rules/auth.ts';
import { reject } from '../../pipeline/compose.ts';
import { waits } from '../../pipeline/steps.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import type { GatewayMiddleware } from '../deps.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { methodLocations, readToken, usesAuthToken, type Found } from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { adoptIdentity } from '../../sessions/identity.ts';
import type { LoadedKey } from '../../sessions/sessions.ts';
import { boundCertificatePresented, certificateKey } from '../../sessions/client-certificates.ts';
import { refusalOf } from '../../sessions/refusal.ts';

/** See the module comment. */
export const authToken: GatewayMiddleware = {
  name: 'auth-token',
  enabled: usesAuthToken,
  create: (api, deps) => {
    const where = methodLocations(api, 'auth_token');
    const orgId = api.org_id ?? '';
    // Dynamic mTLS: a key bound to the client's certificate needs no token.
    const useCertificate = tokenAuthConfigOf(api)?.use_certificate === true;
    /** The request's key (or none): refused, or adopted as the request's identity. */
    const withKey = (
      ctx: RequestContext,
      key: LoadedKey | null | undefined,
      found: Found,
    ): Rejection | undefined => {
      // A basic-auth user is a key named by its user name: its name is no token. A key bound to
      // a certificate is named by public data: it needs that certificate too.
      if (
        key === undefined ||
        key === null ||
        key.stored.basic_auth_data !== undefined ||
        !boundCertificatePresented(ctx, key)
      ) {
        ctx.emit('AuthFailure', 'Attempted access with non-existent key.');
        return reject(ctx, GatewayError.accessDisallowed());
      }
      const refused = refusalOf(key, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!key.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
      adoptIdentity(ctx, api, 'auth_token', key.id, key.applied.session);
      (ctx.state.credentials ??= []).push(found.source);
      return undefined;
    };
    /** The token's key: from the cache without waiting when it holds it. */
    const byToken = (ctx: RequestContext): Rejection | undefined | Promise<Rejection | undefined> => {
      const found = readToken(ctx, where);
      if (found === undefined) return reject(ctx, GatewayError.authFieldMissing());
      const cached = deps.sessions.byKeyCached(found.value);
      if (cached !== undefined) return withKey(ctx, cached, found);
      return deps.sessions.byKey(found.value).then((key) => withKey(ctx, key, found));
    };
    const byCertificateOrToken = async (ctx: RequestContext): Promise<Rejection | undefined> => {
      const byCert = await certificateKey(ctx, orgId, deps.sessions, deps.now());
      if (byCert instanceof GatewayError) return reject(ctx, byCert);
      if (byCert === undefined) return byToken(ctx);
      const refused = refusalOf(byCert, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!byCert.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
      adoptIdentity(ctx, api, 'auth_token', byCert.id, byCert.applied.session);
      return undefined;
    };
    return waits(useCertificate ? byCertificateOrToken : byToken);
  },
};
