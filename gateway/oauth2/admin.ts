/**
 * The management API of OAuth 2.0 clients, the reference's paths under `/svc`:
 * `POST /svc/oauth/clients/create` registers a client of an API (`use_oauth2`) bound to a policy
 * and answers its secret, once; `GET /svc/oauth/clients/{apiID}` lists an API's clients,
 * `GET` and `DELETE /svc/oauth/clients/{apiID}/{clientID}` read and delete one (deleting a client
 * revokes its tokens); `POST /svc/oauth/revoke` revokes one access token. Secrets are never
 * returned after creation, nor logged.
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import { keyIdProblem } from '../../schemas/rules/ids.ts';
import { formatProblem, quote } from '../../schemas/rules/field-problem.ts';
import { clientSecretProblem, usesOauth2 } from '../../schemas/rules/oauth2.ts';
import {
  MAX_BODY_BYTES,
  MalformedBody,
  readJsonObject,
  statusBody,
  writeBody,
  type AdminResponse,
} from '../admin/http.ts';
import { stringFields, withoutNulls } from '../../lib/http/json-body.ts';
import type { AdminRequest } from '../admin/types.ts';
import { classicOf } from '../routes/check.ts';
import { keyIdOf, verifyPassword } from '../sessions/credentials.ts';
import {
  OAUTH_CLIENTS,
  clientDocId,
  deleteTokensOf,
  loadClient,
  newClient,
  presented,
  type StoredClient,
} from './clients.ts';

const clientNotFound = (): AdminResponse => statusBody(404, 'error', 'OAuth Client ID not found');
const invalid = (problems: string[]): AdminResponse =>
  statusBody(400, 'error', `Validation of OAuth client failed. Reason: ${problems.join('; ')}`);

/** The fields of a form or JSON body (the reference reads both), strings only. */
export async function readFields(req: IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new MalformedBody('Request body too large', 413);
    chunks.push(chunk);
  }
  return fieldsOf(Buffer.concat(chunks), req.headers['content-type']);
}

/** The string fields of a body: JSON when its type says so, else a form. */
export function fieldsOf(body: Buffer, contentType: string | undefined): Record<string, string> {
  const fields = stringFields(body.toString('utf8'), contentType);
  if (fields === undefined) throw new MalformedBody();
  return fields;
}

/** The fields of a client that are text. */
const STRING_FIELDS = ['api_id', 'policy_id', 'client_id', 'secret', 'redirect_uri', 'description'] as const;

/** POST /svc/oauth/clients/create */
export async function createClient(r: AdminRequest): Promise<AdminResponse> {
  const body = withoutNulls(await readJsonObject(r.req));
  const str = (k: string): string => (typeof body[k] === 'string' ? body[k] : '');
  const apiId = str('api_id');
  const policyId = str('policy_id');
  const problems: string[] = [];
  // A value of another type is refused, not dropped: a `secret` or `client_id` given as a number
  // was answered with a generated one, and the client stored with it.
  for (const k of STRING_FIELDS) {
    if (body[k] !== undefined && typeof body[k] !== 'string') {
      problems.push(`${k}: Invalid type: must be a string`);
    }
  }
  if (apiId === '' && typeof (body.api_id ?? '') === 'string')
    problems.push('api_id: Required: name the API (use_oauth2) the client is for');
  if (policyId === '' && typeof (body.policy_id ?? '') === 'string')
    problems.push("policy_id: Required: name the policy the client's tokens get");
  const clientId = str('client_id');
  const badId = clientId === '' ? undefined : keyIdProblem('client_id', clientId);
  if (badId !== undefined) problems.push(formatProblem(badId));
  const givenSecret = str('secret');
  const badSecret = givenSecret === '' ? undefined : clientSecretProblem('secret', givenSecret);
  if (badSecret !== undefined) problems.push(formatProblem(badSecret));
  const meta = body.meta_data;
  if (meta !== undefined && meta !== null && (typeof meta !== 'object' || Array.isArray(meta))) {
    problems.push('meta_data: Invalid: an object of key metadata');
  }
  if (problems.length > 0) return invalid(problems);
  const stored = await r.deps.store.get('apis', apiId);
  if (stored === undefined) {
    return invalid([`api_id: Invalid: API doesn't exist: no API ${quote(apiId)}; create it first`]);
  }
  const api = classicOf(stored);
  if (!usesOauth2(api)) {
    return invalid([
      `api_id: Invalid: API ${quote(apiId)} does not use OAuth 2.0: set its use_oauth2 to true`,
    ]);
  }
  const policy = (await r.deps.store.get('policies', policyId)) as GatewayPolicy | undefined;
  if (policy === undefined)
    return invalid([`policy_id: policy ${quote(policyId)} not found: create it first`]);
  if (policy.access_rights?.[apiId] === undefined) {
    return invalid([
      `policy_id: policy ${quote(policyId)} grants no access to API ${quote(apiId)}: add it to the policy's access rights`,
    ]);
  }
  const { client, secret } = await newClient({
    ...(clientId === '' ? {} : { client_id: clientId }),
    ...(str('secret') === '' ? {} : { secret: str('secret') }),
    api_id: apiId,
    policy_id: policyId,
    redirect_uri: str('redirect_uri'),
    description: str('description'),
    ...(meta === undefined || meta === null ? {} : { meta_data: meta as Record<string, unknown> }),
    org_id: api.org_id ?? '',
  });
  const outcome = await r.deps.store.put(
    OAUTH_CLIENTS,
    clientDocId(apiId, client.client_id),
    client,
    'create',
  );
  if (outcome === 'exists') return statusBody(409, 'error', 'OAuth client already exists');
  r.deps.log.info('oauth client stored', { api_id: apiId, client_id: client.client_id });
  return { status: 200, body: { ...presented(client), secret } };
}

/** GET /svc/oauth/clients/{apiID} */
export async function listClients(r: AdminRequest): Promise<AdminResponse> {
  const apiId = r.params[0] ?? '';
  if ((await r.deps.store.get('apis', apiId)) === undefined) return statusBody(404, 'error', 'API not found');
  const clients = (await r.deps.store.list(OAUTH_CLIENTS)).flatMap((e) => {
    if (!('value' in e)) return [];
    const c = e.value as StoredClient;
    return c.api_id === apiId ? [presented(c)] : [];
  });
  return { status: 200, body: clients };
}

/** GET /svc/oauth/clients/{apiID}/{clientID} */
export async function getClient(r: AdminRequest): Promise<AdminResponse> {
  const client = await loadClient(r.deps.store, r.params[0] ?? '', r.params[1] ?? '');
  return client === undefined ? clientNotFound() : { status: 200, body: presented(client) };
}

/** DELETE /svc/oauth/clients/{apiID}/{clientID}: the client and its tokens. */
export async function deleteClient(r: AdminRequest): Promise<AdminResponse> {
  const apiId = r.params[0] ?? '';
  const client = await loadClient(r.deps.store, apiId, r.params[1] ?? '');
  if (client === undefined) return clientNotFound();
  await r.deps.store.delete(OAUTH_CLIENTS, clientDocId(apiId, client.client_id));
  const tokens = await deleteTokensOf(r.deps.store, client);
  for (const id of tokens) await r.deps.changed('keys', id);
  r.deps.log.info('oauth client deleted', {
    api_id: apiId,
    client_id: client.client_id,
    tokens: tokens.length,
  });
  return writeBody(client.client_id, 'deleted');
}

/**
 * POST /svc/oauth/revoke (form or JSON: `token`, `client_id`, optional `token_type_hint`): the
 * access token stops working on every gateway process at once. A token of another client, or an
 * unknown one, is left alone and answered the same way (RFC 7009 §2.2).
 */
export async function revokeToken(r: AdminRequest): Promise<AdminResponse> {
  const f = await readFields(r.req);
  const token = f.token ?? '';
  const clientId = f.client_id ?? '';
  if (token === '' || clientId === '') {
    return statusBody(400, 'error', 'token and client_id are required');
  }
  if ((f.token_type_hint ?? 'access_token') === 'refresh_token') {
    return statusBody(
      400,
      'error',
      'refresh tokens are not issued (the client_credentials and authorization_code grants issue access tokens only)',
    );
  }
  const id = keyIdOf(token);
  const key = (await r.deps.store.get('keys', id)) as GatewaySession | undefined;
  if (key?.oauth_client_id === clientId && (f.org_id === undefined || f.org_id === (key.org_id ?? ''))) {
    await r.deps.store.delete('keys', id);
    await r.deps.changed('keys', id);
    r.deps.log.info('oauth token revoked', { key_hash: id, client_id: clientId });
  }
  return statusBody(200, 'ok', 'token revoked successfully');
}

/**
 * POST /svc/oauth/revoke_all (form or JSON: `client_id`, `client_secret`, optional `org_id`): every
 * access token of the client (of each API it is a client of, in `org_id` when given) stops
 * working on every gateway process at once. The secret must be the client's (403 otherwise,
 * nothing revoked); an unknown client is 404.
 */
export async function revokeAllTokens(r: AdminRequest): Promise<AdminResponse> {
  const f = await readFields(r.req);
  const clientId = f.client_id ?? '';
  const secret = f.client_secret ?? '';
  const missing = [clientId === '' ? 'client_id' : '', secret === '' ? 'client_secret' : ''].filter((x) => x);
  if (missing.length > 0) return statusBody(400, 'error', `${missing.join(' and ')}: Required`);
  const clients = (await r.deps.store.list(OAUTH_CLIENTS)).flatMap((e) => {
    if (!('value' in e)) return [];
    const c = e.value as StoredClient;
    return c.client_id === clientId && (f.org_id === undefined || f.org_id === c.org_id) ? [c] : [];
  });
  if (clients.length === 0) return clientNotFound();
  let matches = false;
  for (const c of clients) if (await verifyPassword(secret, c.secret_hash)) matches = true;
  if (!matches)
    return statusBody(403, 'error', "client_secret: it is not the client's secret (nothing was revoked)");
  let revoked = 0;
  for (const c of clients) {
    const tokens = await deleteTokensOf(r.deps.store, c);
    for (const id of tokens) await r.deps.changed('keys', id);
    revoked += tokens.length;
  }
  r.deps.log.info('oauth tokens revoked', { client_id: clientId, tokens: revoked });
  return statusBody(200, 'ok', 'tokens revoked successfully');
}
