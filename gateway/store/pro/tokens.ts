/**
 * Mode pro: the OAuth access tokens this gateway issues, as it reports them to the dashboard
 * (`POST /system/oauth-tokens`), so that the dashboard lists and revokes them (dashboard/api/
 * oauth-tokens.ts). A record names the token by its stored ID (its SHA-256), never the token.
 * The dashboard answers which of the reported tokens it has revoked: the store deletes those.
 */
import type { Logger } from '../../../lib/log.ts';
import type { GatewaySession } from '../../../schemas/generated/models.ts';
import type { Store } from '../store.ts';

/** What the dashboard is told of one token. */
export interface TokenRecord {
  token_hash: string;
  client_id: string;
  api_id: string;
  /** Seconds since the epoch; 0 never. */
  expires: number;
}

/** The most records one report carries (the dashboard's bound). */
const BATCH = 1000;

/** The record of the key stored as `id` when it is an access token of an OAuth client, else undefined. */
export function tokenRecordOf(id: string, value: unknown): TokenRecord | undefined {
  const key = value as GatewaySession | undefined;
  if (key?.oauth_client_id === undefined || key.oauth_api_id === undefined) return undefined;
  return {
    token_hash: id,
    client_id: key.oauth_client_id,
    api_id: key.oauth_api_id,
    expires: key.expires ?? 0,
  };
}

/**
 * Reports `records` with `call` (the dashboard connection's); answers the hashes the dashboard has
 * revoked. Throws when the dashboard can't be asked (the next reconnect reports them again).
 */
async function reportTokens(
  call: (method: string, path: string, body?: unknown) => Promise<Response>,
  records: readonly TokenRecord[],
  gone: readonly string[] = [],
): Promise<string[]> {
  const revoked: string[] = [];
  for (let i = 0; i < Math.max(records.length, gone.length); i += BATCH) {
    const res = await call('POST', '/system/oauth-tokens', {
      tokens: records.slice(i, i + BATCH),
      gone: gone.slice(i, i + BATCH),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`POST /system/oauth-tokens answered ${String(res.status)}`);
    }
    const body = (await res.json()) as { revoked?: unknown };
    if (Array.isArray(body.revoked)) for (const h of body.revoked) if (typeof h === 'string') revoked.push(h);
  }
  return revoked;
}

/** What syncTokens works with: the dashboard store's connection, local store and deletion. */
export interface TokenSyncDeps {
  call: (method: string, path: string, body?: unknown) => Promise<Response>;
  local: Store;
  /** Deletes the local tokens and forgets their cached sessions everywhere; answers how many went. */
  deleteTokens(ids: readonly string[]): Promise<number>;
  /** The dashboard could not be asked. */
  failed(err: unknown): void;
  log: Logger;
}

/**
 * Reports tokens and deletes those the dashboard answers are revoked. `which`: records (a token
 * just issued), stored IDs (tokens a change names: reported when the local store has them), or
 * undefined for every local access token (after a reconnect: tokens issued while the dashboard
 * was unreachable, revocations made meanwhile).
 */
export async function syncTokens(
  deps: TokenSyncDeps,
  which: readonly (TokenRecord | string)[] | undefined,
): Promise<void> {
  const records: TokenRecord[] = [];
  if (which === undefined) {
    for (const e of await deps.local.list('keys')) {
      const r = 'value' in e ? tokenRecordOf(e.id, e.value) : undefined;
      if (r !== undefined) records.push(r);
    }
  } else {
    for (const w of which) {
      const r = typeof w === 'string' ? tokenRecordOf(w, await deps.local.get('keys', w)) : w;
      if (r !== undefined) records.push(r);
    }
  }
  if (records.length === 0) return;
  let revoked: string[];
  try {
    revoked = await reportTokens(deps.call, records);
  } catch (err) {
    deps.failed(err);
    return;
  }
  if (revoked.length === 0) return;
  const deleted = await deps.deleteTokens(revoked);
  deps.log.info('oauth tokens revoked in the dashboard deleted', { tokens: deleted });
}

/**
 * Tells the dashboard that this gateway deleted the tokens `ids` itself (its `/svc/oauth/revoke`),
 * so it lists them no more.
 */
export async function tokensGone(deps: TokenSyncDeps, ids: readonly string[]): Promise<void> {
  try {
    await reportTokens(deps.call, [], ids);
  } catch (err) {
    deps.failed(err);
  }
}
