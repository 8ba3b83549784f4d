/**
 * OAuth 2.0 clients of the client-credentials grant, as the store keeps them: one document per
 * client of an API in the `oauth-clients` collection, its secret as an scrypt hash (never the
 * secret: it is shown once, when the client is created), compared in constant time. Access tokens
 * are keys (the `keys` collection, stored under the hash of the token, as every key is) whose
 * session is made from the client's policy and names the client (`oauth_client_id`), so that the
 * rest of the chain (expiry, access rights, rate limits, quotas) treats them as keys.
 */
import type { GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import { oauthClientDocId } from '../../schemas/rules/oauth2.ts';
import { generateKey, hashPassword, keyIdOf, verifyPassword } from '../sessions/credentials.ts';
import type { Collection, Store } from '../store/store.ts';
import { BUSY, type OAuthGuard } from './guard.ts';

/** The store collection of clients. */
export const OAUTH_CLIENTS = 'oauth-clients' satisfies Collection;

/** A client as stored. */
export interface StoredClient {
  client_id: string;
  /** scrypt hash of the secret (sessions/credentials.ts). */
  secret_hash: string;
  api_id: string;
  policy_id: string;
  redirect_uri: string;
  description: string;
  meta_data?: Record<string, unknown>;
  org_id: string;
}

/** What the management API shows of a client: all but its secret. */
export type PresentedClient = Omit<StoredClient, 'secret_hash'>;

/** The reference gateway's default token lifetime (`oauth_token_expire`), in seconds. */
export const DEFAULT_TOKEN_LIFETIME_S = 3600;

/** The document ID of a client (schemas/rules/oauth2.ts: the dashboard uses the same). */
export function clientDocId(apiId: string, clientId: string): string {
  return oauthClientDocId(apiId, clientId);
}

/** A client without its secret hash. */
export function presented(c: StoredClient): PresentedClient {
  const { secret_hash: _hash, ...rest } = c;
  return rest;
}

/** Reads a stored client, or undefined. */
export async function loadClient(
  store: Store,
  apiId: string,
  clientId: string,
): Promise<StoredClient | undefined> {
  const doc = (await store.get(OAUTH_CLIENTS, clientDocId(apiId, clientId))) as StoredClient | undefined;
  return doc?.api_id === apiId && doc.client_id === clientId ? doc : undefined;
}

/** A new client's document and its secret (the one given, or a generated one). */
export async function newClient(
  fields: Omit<StoredClient, 'secret_hash' | 'client_id'> & { client_id?: string; secret?: string },
): Promise<{ client: StoredClient; secret: string }> {
  const { secret: given, client_id: givenId, ...rest } = fields;
  const secret = given !== undefined && given !== '' ? given : generateKey(undefined);
  const clientId = givenId !== undefined && givenId !== '' ? givenId : generateKey(undefined);
  return { client: { ...rest, client_id: clientId, secret_hash: await hashPassword(secret) }, secret };
}

/**
 * The client `clientId` of `apiId` when `secret` is its secret (constant-time); else undefined;
 * BUSY when too many verifications run and wait already. A success is remembered by `guard`
 * (guard.ts), so the client's next requests skip the scrypt while its stored hash is unchanged.
 */
export async function authenticateClient(
  store: Store,
  guard: OAuthGuard,
  apiId: string,
  clientId: string,
  secret: string,
  nowMs: number,
): Promise<StoredClient | undefined | typeof BUSY> {
  const client = await loadClient(store, apiId, clientId);
  const mac = guard.macOf(apiId, clientId, secret);
  if (client !== undefined && guard.cached(mac, client.secret_hash, nowMs)) return client;
  // An unknown client costs the scrypt of a wrong secret, so the answer's time does not tell
  // which client IDs exist (without it, an unknown one was answered about 50 ms sooner).
  const hash = client?.secret_hash ?? (await unknownClientHash());
  const ok = await guard.verify(() => verifyPassword(secret, hash));
  if (ok === BUSY) return BUSY;
  if (client === undefined || !ok) return undefined;
  guard.remember(mac, client.secret_hash, nowMs);
  return client;
}

let unknownHash: Promise<string> | undefined;

/** A hash no secret is checked against successfully in practice: what an unknown client verifies. */
function unknownClientHash(): Promise<string> {
  unknownHash ??= hashPassword(generateKey(undefined));
  return unknownHash;
}

/** A new access token of `client` and the key it is stored as: the policy's session, expiring. */
export function accessTokenOf(
  client: StoredClient,
  policy: GatewayPolicy,
  nowMs: number,
): { token: string; session: GatewaySession; expiresIn: number } {
  const expiresIn =
    (policy.key_expires_in ?? 0) > 0 ? (policy.key_expires_in ?? 0) : DEFAULT_TOKEN_LIFETIME_S;
  const session: GatewaySession = {
    org_id: client.org_id,
    apply_policies: [client.policy_id],
    expires: Math.floor(nowMs / 1000) + expiresIn,
    alias: client.client_id,
    oauth_client_id: client.client_id,
    oauth_api_id: client.api_id,
    ...(client.meta_data === undefined ? {} : { meta_data: client.meta_data }),
    date_created: new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  return { token: generateKey(client.org_id), session, expiresIn };
}

/**
 * Issues an access token to `client` (a grant, or the implicit flow): a key made from its policy,
 * stored; undefined when the policy is missing, a draft, denied or inactive.
 */
export async function mintAccessToken(
  store: Store,
  client: StoredClient,
  nowMs: number,
): Promise<{ token: string; keyId: string; expiresIn: number } | undefined> {
  const policy = (await store.get('policies', client.policy_id)) as GatewayPolicy | undefined;
  if (
    policy === undefined ||
    policy.state === 'draft' ||
    policy.state === 'deny' ||
    policy.active === false
  ) {
    return undefined;
  }
  const { token, session, expiresIn } = accessTokenOf(client, policy, nowMs);
  const keyId = keyIdOf(token);
  await store.put('keys', keyId, session, 'create');
  return { token, keyId, expiresIn };
}

/**
 * Whether a stored key is an access token issued to `client`: its client ID, and its API (a
 * client ID is unique per API only; tokens stored before the API was recorded have none).
 */
export function issuedTo(key: GatewaySession | undefined, client: StoredClient): boolean {
  return (
    key?.oauth_client_id === client.client_id &&
    (key.oauth_api_id === undefined || key.oauth_api_id === client.api_id) &&
    (key.apply_policies ?? []).includes(client.policy_id) &&
    (key.org_id ?? '') === client.org_id
  );
}

/**
 * Deletes every access token issued to `client` (when it is deleted); returns their stored IDs,
 * which every process must then forget.
 */
export async function deleteTokensOf(store: Store, client: StoredClient): Promise<string[]> {
  const gone: string[] = [];
  for (const e of await store.list('keys')) {
    if (!('value' in e) || !issuedTo(e.value as GatewaySession, client)) continue;
    if (await store.delete('keys', e.id)) gone.push(e.id);
  }
  return gone;
}

/**
 * Deletes the access tokens whose lifetime ended at `nowMs` or before (an expired token is refused
 * anyway, and nothing ever reads it again: kept, every token request would grow the store);
 * returns their stored IDs, which every process must then forget. Keys that are not access tokens
 * are left alone, expired or not: an expired key can be renewed through the management API.
 */
export async function deleteExpiredTokens(store: Store, nowMs: number): Promise<string[]> {
  const gone: string[] = [];
  for (const e of await store.list('keys')) {
    if (!('value' in e)) continue;
    const key = e.value as GatewaySession | undefined;
    const expires = key?.expires ?? 0;
    if (key?.oauth_client_id === undefined || expires <= 0 || expires * 1000 > nowMs) continue;
    if (await store.delete('keys', e.id)) gone.push(e.id);
  }
  return gone;
}
