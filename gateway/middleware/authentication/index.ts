/**
 * Authentication slot. Keyless APIs skip it. Every other API needs a key, and until the
 * authentication middleware (token, basic, JWT, mTLS) fills this slot the gateway has no key
 * store to check against: it fails closed, exactly as a gateway with no keys answers. No
 * credentials: 401 `Authorization field missing`; any credentials: 403 (no key matches them).
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { reject, type Middleware } from '../../pipeline/compose.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** Where this API reads a token: header name (lower case), query parameter, cookie. */
function tokenLocations(api: GatewayApiDefinition): { header: string; param?: string; cookie?: string } {
  const auth = api.auth ?? {};
  const header = auth.auth_header_name ?? 'Authorization';
  return {
    header: header.toLowerCase(),
    ...(auth.use_param === true ? { param: auth.param_name ?? header } : {}),
    ...(auth.use_cookie === true ? { cookie: auth.cookie_name ?? header } : {}),
  };
}

/** Refuses every request to a non-keyless API (see the module comment). */
export const authentication: Middleware = {
  name: 'authentication',
  enabled: (api) => api.use_keyless !== true,
  create: (api) => {
    const where = tokenLocations(api);
    const paramPattern =
      where.param === undefined ? undefined : new RegExp(`[?&]${escape(where.param)}=[^&]`);
    const cookiePattern =
      where.cookie === undefined ? undefined : new RegExp(`(?:^|;\\s*)${escape(where.cookie)}=[^;\\s]`);
    return (ctx) => {
      const header = ctx.req.headers[where.header];
      const cookie = ctx.req.headers.cookie;
      const present =
        (typeof header === 'string' && header.trim() !== '') ||
        (paramPattern?.test(ctx.query) ?? false) ||
        (cookiePattern !== undefined && typeof cookie === 'string' && cookiePattern.test(cookie));
      return Promise.resolve(
        reject(ctx, present ? GatewayError.accessDisallowed() : GatewayError.authFieldMissing()),
      );
    };
  },
};

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
