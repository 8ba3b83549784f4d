/**
 * Auth token authentication: the token is read from the header (`auth_header_name`, default
 * `Authorization`), the query parameter and the cookie the API enables (`auth_configs.authToken`,
 * or the classic `auth`), a leading `Bearer ` in any case removed, and looked up by its hash.
 * It is the default of every API that is not keyless and enables no other method.
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { reject, type Middleware } from '../../pipeline/compose.ts';
import { locationsOf, readCredential } from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { refusalOf } from '../../sessions/refusal.ts';

/** Whether the API authenticates with auth tokens. */
export function usesAuthToken(api: GatewayApiDefinition): boolean {
  if (api.use_keyless === true) return false;
  if (api.use_standard_auth === true) return true;
  return (
    api.use_basic_auth !== true &&
    api.enable_jwt !== true &&
    api.use_mutual_tls_auth !== true &&
    api.enable_signature_checking !== true
  );
}

const BEARER = /^bearer\s+/i;

/** See the module comment. */
export const authToken: Middleware = {
  name: 'auth-token',
  enabled: usesAuthToken,
  create: (api, deps) => {
    const where = locationsOf(api.auth_configs?.authToken ?? api.auth);
    const orgId = api.org_id ?? '';
    return async (ctx, next) => {
      const found = readCredential(ctx, where);
      if (found === undefined) return reject(ctx, GatewayError.authFieldMissing());
      const token = found.value.replace(BEARER, '').trim();
      if (token === '') return reject(ctx, GatewayError.authFieldMissing());
      const key = await deps.sessions.byKey(token);
      // A basic-auth user is a key named by its user name: its name is no token.
      if (key === undefined || key.stored.basic_auth_data !== undefined) {
        ctx.emit('AuthFailure', 'Attempted access with non-existent key.');
        return reject(ctx, GatewayError.accessDisallowed());
      }
      const refused = refusalOf(key, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!key.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
      ctx.session = key.applied.session;
      ctx.state.keyId = key.id;
      ctx.state.authMethod = 'token';
      (ctx.state.credentials ??= []).push(found.source);
      await next();
      return undefined;
    };
  },
};
