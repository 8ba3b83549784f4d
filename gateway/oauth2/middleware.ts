/**
 * OAuth 2.0 on an API with `use_oauth2` (schemas/rules/oauth2.ts says what is accepted), as the
 * reference gateway serves it:
 *
 * - `oauth2Endpoints` answers `POST {listen_path}oauth/token` (`grant_type=client_credentials`, or
 *   `authorization_code` with a `code` of the authorize flow and its `redirect_uri`; the client's
 *   ID and secret by HTTP Basic or as the form fields `client_id` and `client_secret`) with
 *   `{"access_token","expires_in","token_type":"bearer"}`, the token a key
 *   made from the client's policy (clients.ts), `POST {listen_path}oauth/revoke` (`token`, the
 *   client authenticated the same way; RFC 7009) and `POST {listen_path}oauth/revoke_all` (every
 *   token of the client so authenticated). Errors are the reference's (osin's) bodies,
 *   `{"error","error_description"}`, with RFC 6749's statuses: 401 for a client that does not
 *   authenticate, 400 otherwise. It answers `{listen_path}oauth/authorize` too, the start of the
 *   authorization flow (authorize.ts). They read the body, so requests for these paths are served
 *   by node:http (`bodyPaths`); the fast path may serve the API's other requests.
 * - `oauth2Bearer` authenticates the API's requests by `Authorization: Bearer <token>`: missing
 *   400 `Authorization field missing`, not a bearer token 400 `Bearer token malformed`, unknown
 *   (or revoked) 403 `Key not authorised`; expiry, access rights and limits are the key's, checked
 *   by the rest of the chain (an expired token: 401 `Key has expired, please renew`).
 *
 * Expired tokens leave the store: a token request sweeps the keys collection for access tokens
 * whose lifetime has ended (`sweepExpired`), at most once every SWEEP_INTERVAL_MS of the gateway's
 * clock per process and store, in the background. The same for both stores: a Redis collection is
 * one hash and Redis before 7.4 has no expiry of a hash field, so a TTL can't do it there.
 */
import { errorMessage } from '../../lib/errors.ts';
import type { GatewayApiDefinition, GatewaySession } from '../../schemas/generated/models.ts';
import {
  AUTHORIZATION_CODE,
  CLIENT_CREDENTIALS,
  allowedGrants,
  usesOauth2,
} from '../../schemas/rules/oauth2.ts';
import { normalizeListenPath } from '../../schemas/rules/target.ts';
import { reject, respond } from '../pipeline/compose.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { methodLocations, readCredential } from '../pipeline/credentials.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { Rejection } from '../pipeline/middleware.ts';
import { waits } from '../pipeline/steps.ts';
import type { GatewayMiddleware, MiddlewareDeps } from '../middleware/deps.ts';
import { adoptIdentity } from '../sessions/identity.ts';
import type { LoadedKey } from '../sessions/sessions.ts';
import { keyIdOf } from '../sessions/credentials.ts';
import { refusalOf } from '../sessions/refusal.ts';
import type { Store } from '../store/store.ts';
import {
  authenticateClient,
  deleteExpiredTokens,
  deleteTokensOf,
  mintAccessToken,
  type StoredClient,
} from './clients.ts';
import {
  AUTHORIZE_ERRORS,
  checkAuthorizeRequest,
  deleteExpiredCodes,
  loginLocation,
  takeCode,
} from './authorize.ts';
import { fieldsOf } from './admin.ts';
import { BUSY, guardOf } from './guard.ts';

/** The largest token or revocation request body. */
const MAX_FORM_BYTES = 64 * 1024;

/** osin's error descriptions, which clients of the reference may match. */
const DESCRIPTIONS = {
  invalid_request:
    'The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed.',
  unauthorized_client: 'The client is not authorized to request a token using this method.',
  unsupported_grant_type: 'The authorization grant type is not supported by the authorization server.',
  invalid_grant:
    'The provided authorization grant (e.g., authorization code, resource owner credentials) or refresh token is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  unsupported_response_type: AUTHORIZE_ERRORS.unsupported_response_type,
  server_error:
    'The authorization server encountered an unexpected condition that prevented it from fulfilling the request.',
  temporarily_unavailable:
    'The authorization server is currently unable to handle the request due to a temporary overloading or maintenance of the server.',
} as const;

/** RFC 6749 §5.1: token answers are never cached. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function oauthError(
  ctx: RequestContext,
  status: number,
  error: keyof typeof DESCRIPTIONS,
  headers: Record<string, string> = {},
): Rejection {
  return respond(ctx, status, JSON.stringify({ error, error_description: DESCRIPTIONS[error] }), {
    'content-type': 'application/json',
    ...NO_STORE,
    ...headers,
  });
}

function isRejection(v: object): v is Rejection {
  return 'rejected' in v && v.rejected instanceof GatewayError;
}

/** The client's ID and secret: HTTP Basic, else the form's `client_id` and `client_secret`. */
function clientCredentials(
  ctx: RequestContext,
  form: Record<string, string>,
): { id: string; secret: string } | undefined {
  const h = ctx.headers.authorization;
  const m = typeof h === 'string' ? /^\s*basic\s+(\S+)\s*$/i.exec(h) : null;
  if (m !== null) {
    const decoded = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return undefined;
    return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
  }
  const id = form.client_id ?? '';
  return id === '' ? undefined : { id, secret: form.client_secret ?? '' };
}

/**
 * The endpoints of an API: `{listen_path}oauth/token`, `.../revoke`, `.../revoke_all` and
 * `.../authorize`.
 */
function endpointPaths(api: GatewayApiDefinition): {
  tokenPath: string;
  revokePath: string;
  revokeAllPath: string;
  authorizePath: string;
} {
  const base = normalizeListenPath(api.proxy.listen_path);
  return {
    tokenPath: `${base}/oauth/token`,
    revokePath: `${base}/oauth/revoke`,
    revokeAllPath: `${base}/oauth/revoke_all`,
    authorizePath: `${base}/oauth/authorize`,
  };
}

/** See the module comment. */
export const oauth2Endpoints: GatewayMiddleware = {
  name: 'oauth2-endpoints',
  enabled: (api) => usesOauth2(api),
  // Only the token and revocation endpoints read the body: the API's other requests (bearer
  // tokens, read from the head) may be served by the fast path.
  bodyPaths: (api) => {
    const { tokenPath, revokePath, revokeAllPath, authorizePath } = endpointPaths(api);
    return [tokenPath, revokePath, revokeAllPath, authorizePath];
  },
  create: (api, deps) => {
    const { tokenPath, revokePath, revokeAllPath, authorizePath } = endpointPaths(api);
    const apiId = api.api_id ?? '';
    const orgId = api.org_id ?? '';
    const grants = allowedGrants(api);
    /** The form of a POST, or the refusal. */
    const formOf = async (ctx: RequestContext): Promise<Record<string, string> | Rejection> => {
      if (ctx.method !== 'POST') return oauthError(ctx, 400, 'invalid_request');
      const body = await ctx.readBody(MAX_FORM_BYTES);
      if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
      try {
        return fieldsOf(body, ctx.headers['content-type']);
      } catch {
        return oauthError(ctx, 400, 'invalid_request');
      }
    };
    /** The client the request authenticates, or the refusal. */
    const clientOf = async (
      ctx: RequestContext,
      form: Record<string, string>,
    ): Promise<StoredClient | Rejection> => {
      const given = clientCredentials(ctx, form);
      if (given === undefined) {
        ctx.emit('AuthFailure', 'OAuth client authentication failed.');
        return oauthError(ctx, 401, 'unauthorized_client');
      }
      // guard.ts: failed attempts and concurrent scrypt verifications are bounded.
      const guard = guardOf(deps.store);
      const ip = ctx.clientIp;
      const wait = guard.retryAfter(ip, given.id, deps.now());
      if (wait > 0) {
        ctx.log.debug('oauth client authentication limited', { client_id: given.id, client: ip });
        return oauthError(ctx, 429, 'temporarily_unavailable', { 'retry-after': String(wait) });
      }
      const found = await authenticateClient(deps.store, guard, apiId, given.id, given.secret, deps.now());
      if (found === BUSY) {
        return oauthError(ctx, 503, 'temporarily_unavailable', { 'retry-after': '1' });
      }
      // A client of another organisation's API of the same ID (mode pro) is no client of this one.
      if (found?.org_id === orgId) return found;
      guard.failed(ip, given.id, deps.now());
      ctx.emit('AuthFailure', 'OAuth client authentication failed.');
      return oauthError(ctx, 401, 'unauthorized_client');
    };
    // As the reference (osin): the grant type is checked before the client.
    const token = async (ctx: RequestContext): Promise<Rejection> => {
      const form = await formOf(ctx);
      if (isRejection(form)) return form;
      const grantType = form.grant_type ?? '';
      if (
        (grantType !== CLIENT_CREDENTIALS && grantType !== AUTHORIZATION_CODE) ||
        !grants.includes(grantType)
      ) {
        return oauthError(ctx, 400, 'unsupported_grant_type');
      }
      const client = await clientOf(ctx, form);
      if (isRejection(client)) return client;
      if (grantType === AUTHORIZATION_CODE) {
        // The code, once, by the client it was issued to, with the redirect URI it was issued for.
        const ok = await takeCode(deps.store, client, form.code ?? '', form.redirect_uri ?? '', deps.now());
        if (!ok) {
          ctx.log.info('oauth code refused', { client_id: client.client_id });
          return oauthError(ctx, 400, 'invalid_grant');
        }
      }
      return issue(ctx, deps, client);
    };
    // The authorize endpoint: the request checked, then on to the API's login page (authorize.ts).
    const authorize = async (ctx: RequestContext): Promise<Rejection> => {
      if (ctx.method !== 'GET' && ctx.method !== 'POST') {
        return respond(ctx, 405, JSON.stringify({ error: 'Method Not Allowed' }), {
          'content-type': 'application/json',
        });
      }
      let params: Record<string, string> = Object.fromEntries(
        new URLSearchParams(ctx.query.replace(/^\?/, '')),
      );
      if (ctx.method === 'POST') {
        const form = await formOf(ctx);
        if (isRejection(form)) return form;
        params = { ...params, ...form };
      }
      const checked = await checkAuthorizeRequest(deps.store, api, params);
      if ('error' in checked) {
        ctx.log.info('oauth authorize request refused', { reason: checked.reason });
        return oauthError(ctx, 400, checked.error);
      }
      return respond(ctx, 307, '', {
        location: loginLocation(api, ctx.method, ctx.query),
        ...NO_STORE,
      });
    };
    const revoke = async (ctx: RequestContext): Promise<Rejection> => {
      const form = await formOf(ctx);
      if (isRejection(form)) return form;
      const client = await clientOf(ctx, form);
      if (isRejection(client)) return client;
      const raw = form.token ?? '';
      if (raw === '') return oauthError(ctx, 400, 'invalid_request');
      await revokeOne(deps, keyIdOf(raw), client);
      return respond(ctx, 200, '', NO_STORE);
    };
    // Every token of the client (the reference's public revoke_all), the client authenticated as
    // for one token: a wrong secret is 401 and revokes nothing.
    const revokeAll = async (ctx: RequestContext): Promise<Rejection> => {
      const form = await formOf(ctx);
      if (isRejection(form)) return form;
      const client = await clientOf(ctx, form);
      if (isRejection(client)) return client;
      const gone = await deleteTokensOf(deps.store, client);
      for (const id of gone) await forgetKey(deps, id);
      ctx.log.info('oauth tokens revoked', { client_id: client.client_id, tokens: gone.length });
      return respond(ctx, 200, '', NO_STORE);
    };
    return waits((ctx) => {
      if (ctx.path === tokenPath) return token(ctx);
      if (ctx.path === revokePath) return revoke(ctx);
      if (ctx.path === revokeAllPath) return revokeAll(ctx);
      if (ctx.path === authorizePath) return authorize(ctx);
      return undefined;
    });
  },
};

/** Issues an access token to `client`: a key made from its policy. */
async function issue(ctx: RequestContext, deps: MiddlewareDeps, client: StoredClient): Promise<Rejection> {
  const minted = await mintAccessToken(deps.store, client, deps.now());
  if (minted === undefined) {
    ctx.log.warn('oauth client policy unusable', {
      client_id: client.client_id,
      policy_id: client.policy_id,
    });
    return oauthError(ctx, 401, 'unauthorized_client');
  }
  sweepExpired(deps, ctx);
  ctx.log.info('oauth token issued', { client_id: client.client_id, key_hash: minted.keyId });
  return respond(
    ctx,
    200,
    JSON.stringify({ access_token: minted.token, expires_in: minted.expiresIn, token_type: 'bearer' }),
    { 'content-type': 'application/json', ...NO_STORE },
  );
}

/** How often (gateway clock) a process sweeps expired tokens out of a store. */
export const SWEEP_INTERVAL_MS = 60_000;

/** Per store: when this process may sweep next, and whether a sweep is running. */
const sweeps = new WeakMap<Store, { next: number; running: boolean }>();

/**
 * Deletes expired access tokens from the store in the background, unless this process swept it
 * less than SWEEP_INTERVAL_MS ago or is sweeping it now; every process forgets what was deleted.
 */
function sweepExpired(deps: MiddlewareDeps, ctx: RequestContext): void {
  const now = deps.now();
  const state = sweeps.get(deps.store) ?? { next: 0, running: false };
  sweeps.set(deps.store, state);
  if (state.running || now < state.next) return;
  state.running = true;
  state.next = now + SWEEP_INTERVAL_MS;
  const log = ctx.log;
  const run = async (): Promise<void> => {
    const gone = await deleteExpiredTokens(deps.store, now);
    for (const id of gone) await forgetKey(deps, id);
    // Codes never exchanged, past their lifetime.
    await deleteExpiredCodes(deps.store, now);
    if (gone.length > 0) log.info('expired oauth tokens deleted', { tokens: gone.length });
  };
  run()
    .catch((err: unknown) => {
      log.warn('sweeping expired oauth tokens failed', { error: errorMessage(err) });
    })
    .finally(() => {
      state.running = false;
    });
}

/** Every process forgets the key stored as `id`. */
async function forgetKey(deps: MiddlewareDeps, id: string): Promise<void> {
  if (deps.changed !== undefined) await deps.changed('keys', id);
  else {
    deps.store.forget('keys', id);
    deps.sessions.forget('keys', id);
  }
}

/** Deletes the token stored as `id` when `client` owns it; every process forgets it. */
async function revokeOne(deps: MiddlewareDeps, id: string, client: StoredClient): Promise<void> {
  const key = (await deps.store.get('keys', id)) as GatewaySession | undefined;
  if (key?.oauth_client_id !== client.client_id || (key.org_id ?? '') !== client.org_id) return;
  if (key.oauth_api_id !== undefined && key.oauth_api_id !== client.api_id) return;
  await deps.store.delete('keys', id);
  await forgetKey(deps, id);
}

const BEARER = /^\s*bearer\s+(\S+)\s*$/i;
const missing = (): GatewayError =>
  new GatewayError('GW_ERR_AUTH_FIELD_MISSING', 400, 'Authorization field missing');
const malformed = (): GatewayError =>
  new GatewayError('GW_ERR_AUTH_MALFORMED', 400, 'Bearer token malformed');
const unknown = (): GatewayError => new GatewayError('GW_ERR_KEY_NOT_AUTHORISED', 403, 'Key not authorised');

/** See the module comment. */
export const oauth2Bearer: GatewayMiddleware = {
  name: 'oauth2-bearer',
  enabled: (api) => usesOauth2(api),
  create: (api, deps) => {
    const where = methodLocations(api, 'oauth_key');
    const orgId = api.org_id ?? '';
    const withKey = (ctx: RequestContext, key: LoadedKey | null | undefined): Rejection | undefined => {
      if (key === undefined || key === null || key.stored.basic_auth_data !== undefined) {
        ctx.emit('AuthFailure', 'Attempted access with non-existent key.');
        return reject(ctx, unknown());
      }
      const refused = refusalOf(key, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!key.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
      adoptIdentity(ctx, api, 'oauth_key', key.id, key.applied.session);
      return undefined;
    };
    return waits((ctx) => {
      const found = readCredential(ctx, where);
      if (found === undefined) return reject(ctx, missing());
      const m = BEARER.exec(found.value);
      if (m === null) return reject(ctx, malformed());
      (ctx.state.credentials ??= []).push(found.source);
      const raw = m[1] ?? '';
      const cached = deps.sessions.byKeyCached(raw);
      if (cached !== undefined) return withKey(ctx, cached);
      return deps.sessions.byKey(raw).then((key) => withKey(ctx, key));
    });
  },
};
