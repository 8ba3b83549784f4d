/**
 * A found key may still be disabled (`is_inactive`: 403 `Key is inactive, please renew`) or
 * expired (`expires` in the past, Unix seconds; 0 or less never: 401 `Key has expired, please
 * renew`).
 */
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** See the module comment. */
export const keyState: GatewayMiddleware = {
  name: 'key-state',
  enabled: (api) => api.use_keyless !== true,
  create: (_api, deps) =>
    before((ctx) => {
      const session = ctx.session;
      if (session === undefined) return reject(ctx, GatewayError.accessDisallowed());
      if (session.is_inactive === true) return reject(ctx, GatewayError.keyInactive());
      const expires = session.expires ?? 0;
      if (expires > 0 && expires * 1000 <= deps.now()) {
        ctx.emit('KeyExpired', 'Attempted access from expired key.');
        return reject(ctx, GatewayError.keyExpired());
      }
      return undefined;
    }),
};
