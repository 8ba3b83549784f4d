/**
 * Basic authentication (`use_basic_auth`): `Authorization: Basic base64(user:password)` (or the
 * header, query parameter or cookie of `auth_configs.basic`), or, with
 * `basic_auth.extract_from_body`, two one-group regular expressions over the body. Users are keys
 * named by the user name with `basic_auth_data`, stored with an scrypt hash of the password, in
 * the API's organisation.
 *
 * Verified credentials are cached for `basic_auth.cache_ttl` seconds (default 60) unless
 * `disable_caching`: an entry holds a keyed digest of the password and the very session object it
 * was checked against, so when the user is changed or deleted anywhere (the session cache forgets
 * it on the `changed` message) the next request checks the password again at once. A password
 * not found in this cache is checked against the user as the store holds it then (one read), so
 * a change the gateway was not told of (written straight into the store) counts once the TTL has
 * passed, and at once with `disable_caching`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { MAX_READ_BODY, type RequestContext } from '../../pipeline/context.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { methodLocations, readCredential, type Found } from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { keyIdOf, verifyPassword } from '../../sessions/credentials.ts';
import { adoptIdentity } from '../../sessions/identity.ts';
import { refusalOf } from '../../sessions/refusal.ts';
import type { LoadedKey } from '../../sessions/sessions.ts';

const DEFAULT_CACHE_TTL_S = 60;
const CACHE_MAX = 10_000;
/** Keys the password digests of the cache; never leaves the process. */
const DIGEST_KEY = randomBytes(32);
const BASIC = /^basic\s+/i;

interface Verified {
  key: LoadedKey;
  digest: Buffer;
  until: number;
}

function digestOf(password: string): Buffer {
  return createHmac('sha256', DIGEST_KEY).update(password, 'utf8').digest();
}

/** `user:password` from `Basic <base64>`; undefined when malformed. */
export function parseBasic(
  value: string,
  requirePrefix: boolean,
): { user: string; password: string } | undefined {
  let b64 = value;
  if (BASIC.test(value)) b64 = value.replace(BASIC, '');
  else if (requirePrefix) return undefined;
  b64 = b64.trim();
  if (b64 === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return undefined;
  const text = Buffer.from(b64, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

function bodyRegexp(source: string | undefined): RegExp | undefined {
  return source === undefined || source === '' ? undefined : new RegExp(source);
}

/** See the module comment. */
export const basicAuth: GatewayMiddleware = {
  name: 'basic-auth',
  enabled: (api: GatewayApiDefinition) => api.use_keyless !== true && api.use_basic_auth === true,
  readsBody: (api) => api.basic_auth?.extract_from_body === true,
  create: (api, deps) => {
    const where = methodLocations(api, 'basic_auth_user');
    const realm = api.name;
    const orgId = api.org_id ?? '';
    const fromBody = api.basic_auth?.extract_from_body === true;
    const userRe = bodyRegexp(api.basic_auth?.body_user_regexp);
    const passwordRe = bodyRegexp(api.basic_auth?.body_password_regexp);
    const caching = api.basic_auth?.disable_caching !== true;
    const ttlMs = (api.basic_auth?.cache_ttl ?? DEFAULT_CACHE_TTL_S) * 1000;
    const cache = new Map<string, Verified>();

    const credentials = async (
      ctx: RequestContext,
    ): Promise<{ user: string; password: string; source?: Found['source'] } | GatewayError> => {
      if (fromBody) {
        const body = await ctx.readBody(MAX_READ_BODY);
        if (body === undefined) return GatewayError.bodyTooLarge();
        const text = body.toString('utf8');
        const user = userRe?.exec(text)?.[1];
        const password = passwordRe?.exec(text)?.[1];
        if (user === undefined || password === undefined || user === '')
          return GatewayError.basicAuthMissing(realm);
        return { user, password };
      }
      const found = readCredential(ctx, where);
      if (found === undefined) return GatewayError.basicAuthMissing(realm);
      const parsed = parseBasic(found.value, found.source.kind === 'header');
      if (parsed === undefined) return GatewayError.basicAuthMalformed();
      return { ...parsed, source: found.source };
    };

    return around(async (ctx, next) => {
      const creds = await credentials(ctx);
      if (creds instanceof GatewayError) return reject(ctx, creds);
      const id = keyIdOf(creds.user);
      let key = await deps.sessions.byId(id);
      const now = deps.now();
      const digest = digestOf(creds.password);
      const hit = caching && key !== undefined ? cache.get(key.id) : undefined;
      let ok = hit !== undefined && hit.key === key && hit.until > now && timingSafeEqual(hit.digest, digest);
      if (!ok && key !== undefined) {
        // Not verified within the TTL: checked against the user as stored now, not as the
        // session cache remembers it (a change the gateway was not told of counts).
        key = await deps.sessions.fresh(id);
        const stored = key?.stored.basic_auth_data?.password;
        ok = key !== undefined && stored !== undefined && (await verifyPassword(creds.password, stored));
        if (ok && caching && key !== undefined) {
          if (cache.size >= CACHE_MAX) cache.clear();
          cache.set(key.id, { key, digest, until: now + ttlMs });
        }
      }
      if (key?.stored.basic_auth_data?.password === undefined) {
        ctx.emit('AuthFailure', 'Attempted access with an unknown user.');
        return reject(ctx, GatewayError.userNotAuthorised(realm));
      }
      if (!ok) {
        ctx.emit('AuthFailure', 'Attempted access with invalid password.');
        return reject(ctx, GatewayError.userNotAuthorised(realm));
      }
      const refused = refusalOf(key, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!key.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
      adoptIdentity(ctx, api, 'basic_auth_user', key.id, key.applied.session);
      if (creds.source !== undefined) (ctx.state.credentials ??= []).push(creds.source);
      await next();
      return undefined;
    });
  },
};
