/**
 * The access tokens gateways in mode pro issue to the dashboard's OAuth clients, as the dashboard
 * lists and revokes them. The tokens live in the gateways' stores; each gateway reports the ones
 * it issues (`POST /system/oauth-tokens`, node secret): the token's SHA-256 (the ID it is stored
 * under; never the token), its client, API and expiry. The dashboard keeps one record per token
 * (kind `oauth-tokens`) in the client's organisation, and answers which of the reported tokens are
 * revoked, so a gateway that was away learns it when it reports them again.
 *
 * Users (the keys permission, as for clients) read and revoke them at the reference dashboard's
 * paths: `GET /api/apis/oauth/{apiId}/{clientId}/tokens` lists a client's live tokens
 * (`[{"code": hash, "token_hash": hash, "expires": s, "issued_at": ISO}]`: `code` is the hash,
 * the clear token is never held), `POST /api/apis/oauth/{clientId}/revoke` (`token` or
 * `token_hash`) revokes one and `POST /api/apis/oauth/{clientId}/revoke_all` all of a client's, of
 * every API of the organisation with that client ID; `DELETE .../{apiId}/{clientId}/tokens[/{hash}]`
 * does the same for one API's client. A revoked record stays (`revoked_at`) until the token's
 * expiry, and the revocation is written through the notifying store: every gateway is told the
 * token's hash (`change` of kind `oauth-tokens`), asks again, and deletes the token. Reports are
 * written through the plain store: a gateway is not told of a token it reported. Expired records
 * are dropped when a gateway of the organisation reports a token.
 */
import { oauthClientDocId } from '../../schemas/rules/oauth2.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { Doc, Store, StoreTx } from '../store/store.ts';
import { orgIds } from '../nodes/nodes.ts';
import { actorOf } from './documents.ts';
import { callerOf, fail, hashOf, json, ok, readFields, type Ctx, type Reply } from './http.ts';
import { verifyPassword } from '../../lib/password.ts';
import { keyHash } from './keys.ts';
import { OAUTH_CLIENTS } from './oauth.ts';

/** The store kind of token records. */
export const OAUTH_TOKENS = 'oauth-tokens';

const HASH = /^[0-9a-f]{64}$/;
/** The most tokens one report may name. */
const MAX_REPORTED = 1000;

/** A token as a gateway reports it. */
interface Reported {
  token_hash: string;
  client_id: string;
  api_id: string;
  /** Seconds since the epoch; 0 never. */
  expires: number;
}

function reportedOf(v: unknown): Reported | undefined {
  if (!isPlainObject(v)) return undefined;
  const { token_hash: h, client_id: c, api_id: a, expires: e } = v;
  if (typeof h !== 'string' || !HASH.test(h) || typeof c !== 'string' || c === '') return undefined;
  if (typeof a !== 'string' || a === '' || typeof e !== 'number' || !Number.isFinite(e)) return undefined;
  return { token_hash: h, client_id: c, api_id: a, expires: e };
}

const expired = (body: { expires?: unknown }, nowMs: number): boolean =>
  typeof body.expires === 'number' && body.expires > 0 && body.expires * 1000 <= nowMs;

/**
 * `POST /system/oauth-tokens` `{"tokens": [...], "gone"?: [hash...]}`: records the tokens of
 * clients of the node's organisations, and forgets those the gateway deleted itself; answers
 * `{"revoked": [hash...], "unknown": [hash...]}`: revoked tokens, and those of clients the
 * dashboard does not have in them (deleted: the gateway deletes the token when the client's
 * change reaches it; or a client of the gateway's own store).
 */
export async function nodeReport(
  store: Store,
  asked: readonly string[],
  body: Record<string, unknown>,
  nowMs: number,
): Promise<Reply> {
  const list = body.tokens;
  if (!Array.isArray(list) || list.length > MAX_REPORTED)
    return fail(400, `tokens: Invalid: a list of at most ${String(MAX_REPORTED)} tokens`);
  const tokens: Reported[] = [];
  for (const [i, v] of list.entries()) {
    const t = reportedOf(v);
    if (t === undefined)
      return fail(400, `tokens[${String(i)}]: Invalid: token_hash (64 hex), client_id, api_id, expires`);
    tokens.push(t);
  }
  const gone = body.gone ?? [];
  if (
    !Array.isArray(gone) ||
    gone.length > MAX_REPORTED ||
    !gone.every((h) => typeof h === 'string' && HASH.test(h))
  )
    return fail(400, `gone: Invalid: a list of at most ${String(MAX_REPORTED)} token hashes (64 hex)`);
  const revoked: string[] = [];
  const unknown: string[] = [];
  const orgs = await orgIds(store, asked);
  // Tokens the gateway deleted itself (its /svc/oauth/revoke): no longer listed.
  if (gone.length > 0)
    for (const org of orgs)
      await store.write(org, async (tx) => {
        for (const h of gone as string[]) {
          const d = await tx.get(org, OAUTH_TOKENS, h);
          if (d !== undefined && d.body.revoked_at === undefined) await tx.delete(org, OAUTH_TOKENS, h);
        }
      });
  const byOrg = new Map<string, Reported[]>();
  for (const t of tokens) {
    let found: string | undefined;
    for (const org of orgs) {
      if ((await store.get(org, OAUTH_CLIENTS, oauthClientDocId(t.api_id, t.client_id))) !== undefined) {
        found = org;
        break;
      }
    }
    if (found === undefined) unknown.push(t.token_hash);
    else byOrg.set(found, [...(byOrg.get(found) ?? []), t]);
  }
  for (const [org, mine] of byOrg) {
    await store.write(org, async (tx) => {
      for (const d of (await tx.list(org, OAUTH_TOKENS)).items)
        if (expired(d.body, nowMs)) await tx.delete(org, OAUTH_TOKENS, d.id);
      for (const t of mine) {
        const before = await tx.get(org, OAUTH_TOKENS, t.token_hash);
        if (before?.body.revoked_at !== undefined) revoked.push(t.token_hash);
        else if (before === undefined && !expired(t, nowMs))
          await tx.put(org, OAUTH_TOKENS, t.token_hash, {
            ...t,
            org_id: org,
            issued_at: new Date(nowMs).toISOString(),
          });
      }
    });
  }
  return json({ revoked, unknown });
}

/**
 * The live (neither revoked nor expired) records of the client `client`: those reported since it
 * was registered (a client deleted and registered again does not list its predecessor's).
 */
async function liveTokens(
  tx: Pick<StoreTx, 'list'>,
  org: string,
  client: Doc,
  nowMs: number,
): Promise<Doc[]> {
  return (await tx.list(org, OAUTH_TOKENS)).items.filter(
    (d) =>
      d.body.api_id === client.body.api_id &&
      d.body.client_id === client.body.client_id &&
      d.created >= client.created &&
      d.body.revoked_at === undefined &&
      !expired(d.body, nowMs),
  );
}

/** The clients of the caller's organisation with `clientId`: of the API `apiId` only, if given. */
async function clientsOf(
  tx: Pick<StoreTx, 'get' | 'list'>,
  org: string,
  clientId: string,
  apiId?: string,
): Promise<Doc[]> {
  if (apiId !== undefined) {
    const d = await tx.get(org, OAUTH_CLIENTS, oauthClientDocId(apiId, clientId));
    return d?.body.api_id === apiId && d.body.client_id === clientId ? [d] : [];
  }
  return (await tx.list(org, OAUTH_CLIENTS)).items.filter((d) => d.body.client_id === clientId);
}

const clientNotFound = (): Reply => fail(404, 'OAuth Client ID not found');

/** Whether `secret` is the secret of one of `clients` (stored as a password hash), in constant time. */
async function hasSecret(clients: readonly Doc[], secret: string): Promise<boolean> {
  let found = false;
  for (const cl of clients) {
    const stored = cl.body.secret_hash;
    if (typeof stored === 'string' && (await verifyPassword(secret, stored))) found = true;
  }
  return found;
}

/** GET /api/apis/oauth/{apiId}/{clientId}/tokens (`/{hash}`: that one token, listed alone) */
export async function listTokens(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const [apiId = '', clientId = '', hash = ''] = c.params;
  const [client] = await clientsOf(c.deps.store, org, clientId, apiId);
  if (client === undefined) return clientNotFound();
  const live = (await liveTokens(c.deps.store, org, client, c.deps.now())).filter(
    (d) => hash === '' || d.id === hash,
  );
  if (hash !== '' && live.length === 0) return fail(404, 'Token not found');
  return json(
    live.map((d) => ({
      code: d.id,
      token_hash: d.id,
      expires: d.body.expires,
      issued_at: d.body.issued_at,
    })),
  );
}

/** Marks the records revoked, each with an audit entry (a deletion of the token). */
async function revoke(c: Ctx, tx: StoreTx, org: string, docs: readonly Doc[]): Promise<void> {
  const at = c.deps.now();
  for (const d of docs) {
    await tx.put(org, OAUTH_TOKENS, d.id, { ...d.body, revoked_at: new Date(at).toISOString() });
    await tx.audit({
      org_id: org,
      at,
      actor: actorOf(c),
      action: 'delete',
      kind: OAUTH_TOKENS,
      object_id: d.id,
      before_hash: hashOf(d.body),
      after_hash: null,
    });
  }
  c.log.info('oauth tokens revoked', { org_id: org, tokens: docs.length });
}

/**
 * Revokes the tokens of the clients `clientId` (of `apiId` only, if given) that `pick` keeps, and
 * answers `done(n)`, n the number revoked; 404 when the organisation has no such client.
 */
async function revokeOf(
  c: Ctx,
  clientId: string,
  apiId: string | undefined,
  pick: (d: Doc) => boolean,
  done: (n: number) => Reply,
  /** A client secret the caller gave: one of the clients must have it, or nothing is revoked. */
  secret?: string,
): Promise<Reply> {
  const org = callerOf(c).org;
  if (secret !== undefined) {
    // Checked before the write (scrypt takes tens of milliseconds a client).
    const found = await clientsOf(c.deps.store, org, clientId, apiId);
    if (found.length === 0) return clientNotFound();
    if (!(await hasSecret(found, secret)))
      return fail(403, "client_secret: Forbidden: it is not the client's secret (nothing was revoked)");
  }
  return c.deps.store.write(org, async (tx) => {
    const clients = await clientsOf(tx, org, clientId, apiId);
    if (clients.length === 0) return clientNotFound();
    const docs: Doc[] = [];
    for (const cl of clients) docs.push(...(await liveTokens(tx, org, cl, c.deps.now())).filter(pick));
    await revoke(c, tx, org, docs);
    return done(docs.length);
  });
}

const revokedOne = (): Reply => ok('token revoked successfully');
const revokedAll = (): Reply => ok('tokens revoked successfully');

/**
 * DELETE /api/apis/oauth/{apiId}/{clientId}/tokens[/{hash}]: one token (404 when the client has
 * no such live token), or all of them.
 */
export async function deleteTokens(c: Ctx): Promise<Reply> {
  const [apiId = '', clientId = '', hash = ''] = c.params;
  if (hash === '') return revokeOf(c, clientId, apiId, () => true, revokedAll);
  return revokeOf(
    c,
    clientId,
    apiId,
    (d) => d.id === hash,
    (n) => (n === 0 ? fail(404, 'Token not found') : revokedOne()),
  );
}

/**
 * POST /api/apis/oauth/{clientId}/revoke (`token`, or `token_hash` as listed; `token_type_hint`)
 * and POST /api/apis/oauth/{clientId}/revoke_all: the reference's revocation by client ID, for
 * the clients of that ID of every API, the body a form or JSON. An unknown token of a known client
 * is answered as a revoked one (RFC 7009 §2.2). `client_secret`, which the reference's revoke_all
 * carries, is not needed (the caller's permission is what counts); given, it must be the client's
 * secret (403 otherwise, nothing revoked).
 */
export async function revokeByClient(c: Ctx): Promise<Reply> {
  const [clientId = '', action = ''] = c.params;
  const body = await readFields(c.req);
  const str = (k: string): string => body[k] ?? '';
  if (action === 'revoke_all') {
    const secret = body.client_secret;
    return revokeOf(c, clientId, undefined, () => true, revokedAll, secret === '' ? undefined : secret);
  }
  if (str('token_type_hint') === 'refresh_token')
    return fail(400, 'token_type_hint: refresh tokens are not issued: revoke the access token');
  const hash = str('token') !== '' ? keyHash(str('token')) : str('token_hash');
  if (!HASH.test(hash)) return fail(400, 'token: Required: the access token (or token_hash, as listed)');
  return revokeOf(c, clientId, undefined, (d) => d.id === hash, revokedOne);
}
