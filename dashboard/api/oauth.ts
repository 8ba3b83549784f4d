/**
 * `/api/apis/oauth/{apiId}[/{clientId}]`: the OAuth 2.0 clients of the organisation's APIs that
 * use OAuth (`use_oauth2`), at the reference dashboard's paths. `POST /api/apis/oauth/{apiId}`
 * registers a client bound to a policy of the organisation that grants the API, and answers its
 * secret once; `GET /api/apis/oauth/{apiId}` lists the API's clients (`{"apps": [...], "pages":
 * n}`), `GET` and `DELETE /api/apis/oauth/{apiId}/{clientId}` read and delete one. The secret is
 * stored as an scrypt hash (the gateway's form, so a gateway in mode pro checks it as it checks
 * its own clients) and never answered again, nor logged.
 *
 * Gateways in mode pro read a client through their node channel (`nodeClient`,
 * `/system/oauth-clients/{id}`), by the stored ID both sides compute (schemas/rules/oauth2.ts),
 * and the notification of a change names that ID: a gateway forgets the client, and when it is
 * gone, deletes the access tokens it issued to it (gateway/store/pro/).
 */
import { randomBytes } from 'node:crypto';
import { formatProblem, quote } from '../../schemas/rules/field-problem.ts';
import { keyIdProblem } from '../../schemas/rules/ids.ts';
import { clientSecretProblem, oauthClientDocId, usesOauth2 } from '../../schemas/rules/oauth2.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { Doc, Store } from '../store/store.ts';
import { classicOf } from './apis.ts';
import { hashPassword } from '../../lib/password.ts';
import { orgIds } from '../nodes/nodes.ts';
import { auditedPut, pageIn } from './documents.ts';
import { callerOf, fail, json, ok, readObject, type Ctx, type Reply } from './http.ts';

/** The store kind of clients. */
export const OAUTH_CLIENTS = 'oauth-clients';

const clientNotFound = (): Reply => fail(404, 'OAuth Client ID not found');
const apiNotFound = (): Reply => fail(404, 'API not found');
const invalid = (problems: string[]): Reply =>
  fail(400, `Validation of OAuth client failed. Reason: ${problems.join('; ')}`);

/** What a user sees of a stored client: all but its secret's hash. */
function presented(d: Doc): Record<string, unknown> {
  const { secret_hash: _hash, ...rest } = d.body;
  return rest;
}

/** POST /api/apis/oauth/{apiId}: `policy_id` required; `client_id` and `secret` generated unless given. */
export async function createClient(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const apiId = c.params[0] ?? '';
  const body = withoutNulls(await readObject(c.req));
  const str = (k: string): string => (typeof body[k] === 'string' ? body[k] : '');
  const problems: string[] = [];
  for (const k of ['policy_id', 'client_id', 'secret', 'redirect_uri', 'description']) {
    if (body[k] !== undefined && typeof body[k] !== 'string')
      problems.push(`${k}: Invalid: must be a string`);
  }
  const policyId = str('policy_id');
  if (policyId === '') problems.push("policy_id: Required: name the policy the client's tokens get");
  const givenId = str('client_id');
  const badId = givenId === '' ? undefined : keyIdProblem('client_id', givenId);
  if (badId !== undefined) problems.push(formatProblem(badId));
  const badSecret = str('secret') === '' ? undefined : clientSecretProblem('secret', str('secret'));
  if (badSecret !== undefined) problems.push(formatProblem(badSecret));
  const meta = body.meta_data;
  if (meta !== undefined && !isPlainObject(meta))
    problems.push('meta_data: Invalid: an object of key metadata');
  if (problems.length > 0) return invalid(problems);
  const clientId = givenId !== '' ? givenId : randomBytes(16).toString('hex');
  const secret = str('secret') !== '' ? str('secret') : randomBytes(32).toString('base64url');
  const client: Record<string, unknown> = {
    client_id: clientId,
    api_id: apiId,
    policy_id: policyId,
    redirect_uri: str('redirect_uri'),
    description: str('description'),
    ...(meta === undefined ? {} : { meta_data: meta }),
    org_id: org,
    secret_hash: await hashPassword(secret),
  };
  const id = oauthClientDocId(apiId, clientId);
  return c.deps.store.write(org, async (tx) => {
    const api = await tx.get(org, 'apis', apiId);
    if (api === undefined) return apiNotFound();
    if (!usesOauth2(classicOf(api))) {
      return invalid([
        `api_id: Invalid: API ${quote(apiId)} does not use OAuth 2.0: set its use_oauth2 to true`,
      ]);
    }
    const policy = await tx.get(org, 'policies', policyId);
    if (policy === undefined) {
      return invalid([
        `policy_id: policy ${quote(policyId)} not found in your organisation: create it first`,
      ]);
    }
    const rights = policy.body.access_rights;
    if (!isPlainObject(rights) || rights[apiId] === undefined) {
      return invalid([
        `policy_id: policy ${quote(policyId)} grants no access to API ${quote(apiId)}: add it to the policy's access rights`,
      ]);
    }
    if ((await tx.get(org, OAUTH_CLIENTS, id)) !== undefined) return fail(409, 'OAuth client already exists');
    await auditedPut(c, tx, org, OAUTH_CLIENTS, id, undefined, client);
    const { secret_hash: _hash, ...shown } = client;
    return json({ ...shown, secret });
  });
}

/** GET /api/apis/oauth/{apiId}: `{"apps": [...], "pages": n}` */
export async function listClients(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const apiId = c.params[0] ?? '';
  if ((await c.deps.store.get(org, 'apis', apiId)) === undefined) return apiNotFound();
  // Clients of every API share one kind: filter, then page, so pages count only this API's.
  const all = (await c.deps.store.list(org, OAUTH_CLIENTS)).items.filter((d) => d.body.api_id === apiId);
  const { items, pages } = pageIn(c, all);
  return json({ apps: items.map(presented), pages });
}

/** The client the path names in the caller's organisation, or undefined. */
async function clientOf(c: Ctx): Promise<Doc | undefined> {
  const apiId = c.params[0] ?? '';
  const clientId = c.params[1] ?? '';
  const d = await c.deps.store.get(callerOf(c).org, OAUTH_CLIENTS, oauthClientDocId(apiId, clientId));
  return d?.body.api_id === apiId && d.body.client_id === clientId ? d : undefined;
}

/** GET /api/apis/oauth/{apiId}/{clientId} */
export async function getClient(c: Ctx): Promise<Reply> {
  const d = await clientOf(c);
  return d === undefined ? clientNotFound() : json(presented(d));
}

/** DELETE /api/apis/oauth/{apiId}/{clientId}: gateways then revoke the client's tokens. */
export async function deleteClient(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const id = oauthClientDocId(c.params[0] ?? '', c.params[1] ?? '');
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, OAUTH_CLIENTS, id);
    if (before === undefined || before.body.api_id !== c.params[0] || before.body.client_id !== c.params[1])
      return clientNotFound();
    await auditedPut(c, tx, org, OAUTH_CLIENTS, id, before, undefined);
    return ok('OAuth Client deleted successfully');
  });
}

/**
 * The client stored as `id` in one of the organisations, as a gateway stores its own clients
 * (its secret as the scrypt hash), or undefined.
 */
export async function nodeClient(store: Store, asked: readonly string[], id: string): Promise<unknown> {
  for (const org of await orgIds(store, asked)) {
    const d = await store.get(org, OAUTH_CLIENTS, id);
    if (d !== undefined) return d.body;
  }
  return undefined;
}
