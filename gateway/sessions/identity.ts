/**
 * Which authentication method's session a request uses. With one method enabled, its session.
 * With several (chained authentication) every enabled method must pass, and
 * `base_identity_provided_by` names the one whose session becomes the request's: the others only
 * check. Every authentication middleware hands what it found to `adoptIdentity`.
 */
import type { GatewayApiDefinition, GatewaySession } from '../../schemas/generated/models.ts';
import type { RequestContext } from '../pipeline/context.ts';

/** The names `base_identity_provided_by` uses for the methods that provide identities. */
export type IdentityProvider =
  'auth_token' | 'basic_auth_user' | 'jwt_claim' | 'hmac_key' | 'custom_auth' | 'oauth_key';

/**
 * Records that `method` authenticated the request as the key stored under `keyId` with
 * `session`: it becomes the request's session unless another method is the API's base identity
 * (which then replaces it, whatever the order the methods run in).
 */
export function adoptIdentity(
  ctx: RequestContext,
  api: Pick<GatewayApiDefinition, 'base_identity_provided_by'>,
  method: IdentityProvider,
  keyId: string,
  session: GatewaySession,
): void {
  const base = api.base_identity_provided_by ?? '';
  const isBase = base === '' || base === method;
  if (!isBase && ctx.session !== undefined) return;
  if (!isBase && ctx.state.identityFromBase === true) return;
  ctx.session = session;
  ctx.state.keyId = keyId;
  ctx.state.identityFromBase = base !== '' && isBase;
}
