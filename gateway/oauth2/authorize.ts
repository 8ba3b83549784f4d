/**
 * The authorization flow of an OAuth 2.0 API (schemas/rules/oauth2.ts), as the reference gateway
 * serves it:
 *
 * 1. The client sends the user to `{listen_path}oauth/authorize` (GET or POST: `response_type`,
 *    `client_id`, `redirect_uri`, `state`...). The gateway checks the response type is one the
 *    API allows, the client is one of the API's, and the redirect URI is the one registered for
 *    the client (exactly; the registered one when none is given), then answers 307 to the API's
 *    login page (`auth_login_redirect`, with the request's query for a GET; a POST is sent on).
 *    A request that fails a check is answered 400 with the reference's (osin's) error, never
 *    redirected to a URI not registered.
 * 2. The login page signs the user in and asks the gateway, on its management API,
 *    `POST /svc/oauth/authorize-client` (`api_id`, `response_type`, `client_id`, `redirect_uri`,
 *    `state`), checked the same way: for `code`, a code (random, stored as its hash, valid
 *    CODE_LIFETIME_S, for that client and redirect URI, once); for `token`, an access token made
 *    from the client's policy (the implicit grant). The answer has `redirect_to`, where the login
 *    page sends the user: the redirect URI with `code` and `state` in its query, or the token in
 *    its fragment.
 * 3. The client exchanges the code at `{listen_path}oauth/token` (`grant_type=authorization_code`,
 *    its credentials, `code`, and the same `redirect_uri`): middleware.ts.
 */
import { createHash } from 'node:crypto';
import {
  allowedResponseTypes,
  isHttpUrl,
  loginRedirect,
  usesOauth2,
  type ResponseType,
} from '../../schemas/rules/oauth2.ts';
import type { ClassicApiInput } from '../../schemas/rules/read.ts';
import { statusBody, type AdminResponse } from '../admin/http.ts';
import type { AdminRequest } from '../admin/types.ts';
import { classicOf } from '../routes/check.ts';
import { generateKey } from '../sessions/credentials.ts';
import type { Collection, Store } from '../store/store.ts';
import { loadClient, mintAccessToken, type StoredClient } from './clients.ts';
import { readFields } from './admin.ts';

/** The store collection of authorization codes. */
export const OAUTH_CODES = 'oauth-codes' satisfies Collection;

/** How long an authorization code may be exchanged, in seconds (RFC 6749 §4.1.2: 10 minutes at most). */
export const CODE_LIFETIME_S = 600;

/** osin's errors of the authorize flow, which clients of the reference may match. */
export const AUTHORIZE_ERRORS = {
  invalid_request:
    'The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed.',
  unauthorized_client: 'The client is not authorized to request a token using this method.',
  unsupported_response_type:
    'The authorization server does not support obtaining an authorization code using this method.',
} as const;

/** One of AUTHORIZE_ERRORS, with what was wrong (for the log, never the client's secret). */
export interface AuthorizeError {
  error: keyof typeof AUTHORIZE_ERRORS;
  reason: string;
}

/** A stored code: for which client, API and redirect URI, until when. */
interface StoredCode {
  api_id: string;
  org_id: string;
  client_id: string;
  redirect_uri: string;
  /** Milliseconds since the epoch. */
  expires_ms: number;
}

/** The store ID of a code: its hash, never the code. */
function codeId(code: string): string {
  return createHash('sha256').update(code, 'utf8').digest('hex');
}

/**
 * Checks an authorization request to the API `api` (`params`: `response_type`, `client_id`,
 * `redirect_uri`): the client and the redirect URI it is answered at, or the error.
 */
export async function checkAuthorizeRequest(
  store: Store,
  api: ClassicApiInput,
  params: Record<string, string>,
): Promise<{ client: StoredClient; responseType: ResponseType; redirectUri: string } | AuthorizeError> {
  const responseType = params.response_type ?? '';
  const clientId = params.client_id ?? '';
  if (responseType === '' || clientId === '') {
    return { error: 'invalid_request', reason: 'response_type and client_id are required' };
  }
  const allowed = allowedResponseTypes(api);
  if (!(allowed as string[]).includes(responseType)) {
    return { error: 'unsupported_response_type', reason: `response type ${responseType} not allowed` };
  }
  const client = await loadClient(store, typeof api.api_id === 'string' ? api.api_id : '', clientId);
  const orgId = typeof api.org_id === 'string' ? api.org_id : '';
  if (client?.org_id !== orgId) {
    return { error: 'unauthorized_client', reason: 'unknown client' };
  }
  // Exactly the URI registered for the client (RFC 6749 §3.1.2.2, §10.6): nothing is ever sent
  // elsewhere; a client registered without one can't use the flow.
  const registered = client.redirect_uri;
  const given = params.redirect_uri ?? '';
  if (registered === '' || !isHttpUrl(registered)) {
    return { error: 'invalid_request', reason: 'the client has no redirect URI registered' };
  }
  if (given !== '' && given !== registered) {
    return { error: 'invalid_request', reason: 'redirect_uri is not the one registered for the client' };
  }
  return { client, responseType: responseType as ResponseType, redirectUri: registered };
}

/** Where the authorize endpoint sends a checked request: the login page (with a GET's query). */
export function loginLocation(api: ClassicApiInput, method: string, query: string): string {
  const login = loginRedirect(api);
  const q = query.replace(/^\?/, '');
  if (method !== 'GET' || q === '') return login;
  return `${login}${login.includes('?') ? '&' : '?'}${q}`;
}

/** Stores a new code for `client` at `redirectUri`; the code. */
export async function issueCode(
  store: Store,
  client: StoredClient,
  redirectUri: string,
  nowMs: number,
): Promise<string> {
  const code = generateKey(undefined);
  const doc: StoredCode = {
    api_id: client.api_id,
    org_id: client.org_id,
    client_id: client.client_id,
    redirect_uri: redirectUri,
    expires_ms: nowMs + CODE_LIFETIME_S * 1000,
  };
  await store.put(OAUTH_CODES, codeId(code), doc, 'create');
  return code;
}

/**
 * Takes `code` for `client` (it is deleted: a code is exchanged once, RFC 6749 §4.1.2): true when
 * it was issued to that client, for `redirectUri`, and has not expired. A code presented by
 * another client, or with another redirect URI, is spent all the same (§10.5).
 */
export async function takeCode(
  store: Store,
  client: StoredClient,
  code: string,
  redirectUri: string,
  nowMs: number,
): Promise<boolean> {
  if (code === '') return false;
  const id = codeId(code);
  const doc = (await store.get(OAUTH_CODES, id)) as StoredCode | undefined;
  if (doc === undefined) return false;
  // The one who deletes it is the one who may use it: two exchanges at once get one token.
  if (!(await store.delete(OAUTH_CODES, id))) return false;
  return (
    doc.expires_ms > nowMs &&
    doc.api_id === client.api_id &&
    doc.client_id === client.client_id &&
    doc.org_id === client.org_id &&
    doc.redirect_uri === redirectUri
  );
}

/** Deletes the codes that have expired; how many. */
export async function deleteExpiredCodes(store: Store, nowMs: number): Promise<number> {
  let n = 0;
  for (const e of await store.list(OAUTH_CODES)) {
    if (!('value' in e)) continue;
    const doc = e.value as Partial<StoredCode>;
    if ((doc.expires_ms ?? 0) <= nowMs && (await store.delete(OAUTH_CODES, e.id))) n++;
  }
  return n;
}

/** `uri` with `params` added to its query (`code`, `state`). */
function withQuery(uri: string, params: Record<string, string>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== '') u.searchParams.set(k, v);
  return u.toString();
}

/** `uri` with `params` as its fragment (the implicit grant's token). */
function withFragment(uri: string, params: Record<string, string>): string {
  const u = new URL(uri);
  u.hash = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '')).toString();
  return u.toString();
}

/**
 * POST /svc/oauth/authorize-client (form or JSON: `api_id`, `response_type`, `client_id`,
 * `redirect_uri`, `state`): what the API's login page asks once the user is signed in (see the
 * module comment). `key_rules` (the reference's session for the token) is refused: the token is
 * made from the client's policy.
 */
export async function authorizeClient(r: AdminRequest): Promise<AdminResponse> {
  const f = await readFields(r.req);
  if (f.key_rules !== undefined && f.key_rules !== '') {
    return statusBody(
      400,
      'error',
      "key_rules: Invalid: a token is made from the client's policy (its access rights, rate limit and quota); remove key_rules",
    );
  }
  const apiId = f.api_id ?? '';
  const stored = apiId === '' ? undefined : await r.deps.store.get('apis', apiId);
  if (stored === undefined) {
    return statusBody(
      400,
      'error',
      `api_id: Invalid: API doesn't exist: name the API (use_oauth2) of the client`,
    );
  }
  const api = classicOf(stored);
  if (!usesOauth2(api)) return statusBody(400, 'error', 'api_id: Invalid: the API does not use OAuth 2.0');
  const checked = await checkAuthorizeRequest(r.deps.store, api, f);
  if ('error' in checked) {
    return {
      status: 400,
      body: { error: checked.error, error_description: AUTHORIZE_ERRORS[checked.error] },
    };
  }
  const { client, responseType, redirectUri } = checked;
  const state = f.state ?? '';
  const now = r.deps.now();
  if (responseType === 'code') {
    const code = await issueCode(r.deps.store, client, redirectUri, now);
    r.deps.log.info('oauth code issued', { api_id: apiId, client_id: client.client_id });
    return { status: 200, body: { code, redirect_to: withQuery(redirectUri, { code, state }) } };
  }
  const minted = await mintAccessToken(r.deps.store, client, now);
  if (minted === undefined) {
    return {
      status: 400,
      body: { error: 'unauthorized_client', error_description: AUTHORIZE_ERRORS.unauthorized_client },
    };
  }
  r.deps.log.info('oauth token issued', { client_id: client.client_id, key_hash: minted.keyId });
  const expires = String(minted.expiresIn);
  return {
    status: 200,
    body: {
      access_token: minted.token,
      expires_in: minted.expiresIn,
      token_type: 'bearer',
      redirect_to: withFragment(redirectUri, {
        access_token: minted.token,
        token_type: 'bearer',
        expires_in: expires,
        state,
      }),
    },
  };
}
