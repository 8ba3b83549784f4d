/**
 * `strip_auth_data`: the credentials authentication read (header, query parameter or cookie)
 * are removed from the request before it is proxied, so the upstream never sees them.
 */
import type { GatewayMiddleware } from '../deps.ts';
import { before } from '../../pipeline/steps.ts';
import { removeCredential } from '../../pipeline/credentials.ts';

/** See the module comment. */
export const stripAuthData: GatewayMiddleware = {
  name: 'strip-auth-data',
  enabled: (api) => api.use_keyless !== true && api.strip_auth_data === true,
  create: () =>
    before((ctx) => {
      for (const source of ctx.state.credentials ?? []) removeCredential(ctx, source);
      return undefined;
    }),
};
