/**
 * JWT authentication as the chain (routes/chain.ts) lists it. Whether an API needs it is read
 * from the definition here; the authentication itself (index.ts, with jose) is loaded when the
 * first JWT API's route compiles, so a worker serving none never holds it (issue 33 item 4).
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { authMethodsOf } from '../../../schemas/rules/auth.ts';
import type { GatewayMiddleware } from '../deps.ts';

/** Whether the API authenticates with JWTs (alone or chained). */
export const isJwtApi = (api: GatewayApiDefinition): boolean => authMethodsOf(api).includes('jwt_claim');

/** See the module comment. */
export const jwt: GatewayMiddleware = {
  name: 'jwt',
  enabled: isJwtApi,
  create: async (api, deps) => (await import('./index.ts')).jwt.create(api, deps),
};
