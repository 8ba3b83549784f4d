/**
 * `/api/keys[/{key}]` and `/api/apis/keys/basic/{username}`: the organisation's keys (sessions)
 * and basic-auth users. A key is stored under the SHA-256 of its value (returned once, when it
 * is generated) and a password as an scrypt hash, as the gateway stores them; `?hashed=true`
 * names a key by its hash; `POST /api/keys/{key}` imports a key of a given value. Every API a
 * key grants, and every policy it applies, must be the organisation's: a key's `org_id` is the
 * organisation of its APIs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hashPassword } from '../../lib/password.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { sessionModel } from '../../schemas/models/session.ts';
import { checkSession } from '../../schemas/rules/access.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { keyIdProblem } from '../../schemas/rules/ids.ts';
import { compile } from '../../schemas/validate.ts';
import type { Doc, StoreTx } from '../store/store.ts';
import { apiExists } from './apis.ts';
import { auditedPut, changeExisting, pageOfKind } from './documents.ts';
import { callerOf, fail, json, ok, readObject, Refusal, type Ctx, type Reply } from './http.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';

const schemaCheck = compile(sessionModel);
const HASHED = /^[0-9a-f]{64}$/;
const notFound = (): Reply => fail(404, 'Key not found');
const invalid = (problems: string[]): string => `Validation of Key failed. Reason: ${problems.join('; ')}`;

/** The stored ID of a key or user name. */
export function keyHash(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}

/** What a client sees of a stored key: never a password hash. */
function presented(d: Doc): Record<string, unknown> {
  const { basic_auth_data, ...rest } = d.body;
  return { ...rest, ...(basic_auth_data === undefined ? {} : { basic_auth_data: { hash_type: 'scrypt' } }) };
}

/** The key answer: `{"api_model":{},"key_id":...,"data":{...},"key_hash":...}` */
function keyReply(keyId: string, d: Doc): Reply {
  return json({ api_model: {}, key_id: keyId, data: presented(d), key_hash: d.id });
}

/** Checks a session body against the model and the organisation; the session to store. */
async function checkedSession(
  c: Ctx,
  tx: StoreTx,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const org = callerOf(c).org;
  if (body.org_id !== undefined && body.org_id !== '' && body.org_id !== org) {
    throw new Refusal(400, invalid([`org_id: must be the organisation of the key's APIs, yours (${org})`]));
  }
  const s: Record<string, unknown> = { ...body, org_id: org };
  const schema = schemaCheck(s).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  if (schema.length > 0) throw new Refusal(400, invalid(schema));
  const problems = checkSession(s as unknown as GatewaySession).map(formatProblem);
  for (const apiId of Object.keys(s.access_rights ?? {})) {
    if (!(await apiExists(tx, org, apiId))) {
      problems.push(`access_rights.${apiId}: API ${JSON.stringify(apiId)} not found in your organisation`);
    }
  }
  for (const [i, pid] of ((s.apply_policies ?? []) as string[]).entries()) {
    if ((await tx.get(org, 'policies', pid)) === undefined) {
      problems.push(`apply_policies[${i}]: policy ${JSON.stringify(pid)} not found in your organisation`);
    }
  }
  if (problems.length > 0) throw new Refusal(400, invalid(problems));
  return s;
}

/** The hash the path names: of the key value, or the hash itself with `?hashed=true`. */
function idOf(c: Ctx): string | undefined {
  const given = c.params[0] ?? '';
  if (c.url.searchParams.get('hashed') === 'true') return HASHED.test(given) ? given : undefined;
  return given === '' ? undefined : keyHash(given);
}

/** GET /api/keys: `{"data": {"keys": [<hash>...]}, "pages": n}` */
export async function listKeys(c: Ctx): Promise<Reply> {
  const { items, pages } = await pageOfKind(c, 'keys');
  return json({ data: { keys: items.map((d) => d.id) }, pages });
}

/** POST /api/keys: a generated key, returned once. */
export async function createKey(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const body = withoutNulls(await readObject(c.req));
  if (body.basic_auth_data !== undefined) {
    return fail(
      400,
      invalid(['basic_auth_data: register basic-auth users at /api/apis/keys/basic/{username}']),
    );
  }
  const raw = `${org}${randomBytes(16).toString('hex')}`;
  const id = keyHash(raw);
  return c.deps.store.write(org, async (tx) => {
    const s = await checkedSession(c, tx, body);
    await auditedPut(c, tx, org, 'keys', id, undefined, s);
    return keyReply(raw, { id, body: s, created: 0, updated: 0 });
  });
}

/**
 * POST /api/keys/{key}: imports a custom key: stored under the hash of the value the path gives
 * (never the value itself), 409 when that key exists. Keys sharing a `counter_id` count against
 * one allowance, so two values can work as one key (a rotation's overlap).
 */
export async function importKey(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const raw = c.params[0] ?? '';
  if (c.url.searchParams.get('hashed') === 'true')
    return fail(400, 'A key is imported by its value, not its hash');
  const bad = keyIdProblem('key', raw);
  if (bad !== undefined) return fail(400, invalid([formatProblem(bad)]));
  const body = withoutNulls(await readObject(c.req));
  if (body.basic_auth_data !== undefined) {
    return fail(
      400,
      invalid(['basic_auth_data: register basic-auth users at /api/apis/keys/basic/{username}']),
    );
  }
  const id = keyHash(raw);
  return c.deps.store.write(org, async (tx) => {
    if ((await tx.get(org, 'keys', id)) !== undefined) return fail(409, 'Key already exists');
    const s = await checkedSession(c, tx, body);
    await auditedPut(c, tx, org, 'keys', id, undefined, s);
    return keyReply(raw, { id, body: s, created: 0, updated: 0 });
  });
}

/** GET /api/keys/{key} */
export async function getKey(c: Ctx): Promise<Reply> {
  const id = idOf(c);
  const d = id === undefined ? undefined : await c.deps.store.get(callerOf(c).org, 'keys', id);
  return d === undefined ? notFound() : keyReply(c.params[0] ?? '', d);
}

/**
 * Runs `change` on the key the path names, in one write of the caller's organisation; 404 when
 * there is no such key.
 */
async function changeKey(
  c: Ctx,
  change: (tx: StoreTx, org: string, id: string, before: Doc) => Promise<Reply>,
): Promise<Reply> {
  const id = idOf(c);
  if (id === undefined) return notFound();
  return changeExisting(c, 'keys', id, notFound, (tx, org, before) => change(tx, org, id, before));
}

/** PUT /api/keys/{key}: the whole session; a basic-auth user keeps its password unless a new one is sent. */
export async function updateKey(c: Ctx): Promise<Reply> {
  const body = withoutNulls(await readObject(c.req));
  return changeKey(c, async (tx, org, id, before) => {
    const s = await withPassword(await checkedSession(c, tx, body), before);
    await auditedPut(c, tx, org, 'keys', id, before, s);
    return keyReply(c.params[0] ?? '', { ...before, body: s });
  });
}

/** DELETE /api/keys/{key} */
export async function deleteKey(c: Ctx): Promise<Reply> {
  return changeKey(c, async (tx, org, id, before) => {
    await auditedPut(c, tx, org, 'keys', id, before, undefined);
    if ((await tx.get(org, 'quota-resets', id)) !== undefined) await tx.delete(org, 'quota-resets', id);
    return ok('Key deleted');
  });
}

/**
 * POST /api/keys/{key}/reset: a new quota period starts now with the full `quota_max`. The
 * gateways count quotas themselves (memory or Redis): the reset is also written as the key's
 * `quota-resets` record, whose change tells each gateway to end the key's periods.
 */
export async function resetKeyQuota(c: Ctx): Promise<Reply> {
  return changeKey(c, async (tx, org, id, before) => {
    const max = Number(before.body.quota_max ?? -1);
    const rate = Number(before.body.quota_renewal_rate ?? 0);
    const s = {
      ...before.body,
      quota_remaining: max,
      quota_renews: Math.floor(c.deps.now() / 1000) + Math.max(0, rate),
    };
    await auditedPut(c, tx, org, 'keys', id, before, s);
    await tx.put(org, 'quota-resets', id, { key_hash: id, at: c.deps.now() });
    return ok('Quota reset');
  });
}

/** A session with its password hashed: the new one sent, or the stored one kept. */
async function withPassword(
  s: Record<string, unknown>,
  before: Doc | undefined,
): Promise<Record<string, unknown>> {
  const basic = s.basic_auth_data as { password?: string; hash_type?: string } | undefined;
  const stored = before?.body.basic_auth_data as { password?: string } | undefined;
  if (basic?.hash_type === 'scrypt') {
    throw new Refusal(
      400,
      invalid([
        'basic_auth_data.hash_type: Forbidden: send the password in clear over TLS; the dashboard hashes it',
      ]),
    );
  }
  if (basic?.password !== undefined && basic.password !== '') {
    return { ...s, basic_auth_data: { password: await hashPassword(basic.password), hash_type: 'scrypt' } };
  }
  if (stored?.password !== undefined)
    return { ...s, basic_auth_data: { password: stored.password, hash_type: 'scrypt' } };
  return s;
}

/** POST /api/apis/keys/basic/{username} creates; PUT updates. */
export async function writeBasicUser(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const username = c.params[0] ?? '';
  const creating = c.req.method === 'POST';
  const bad = creating ? keyIdProblem('username', username) : undefined;
  if (bad !== undefined) return fail(400, invalid([formatProblem(bad)]));
  const body = withoutNulls(await readObject(c.req));
  const password = (body.basic_auth_data as { password?: unknown } | undefined)?.password;
  if (creating && (typeof password !== 'string' || password === '')) {
    return fail(400, invalid(['basic_auth_data.password: Required value: the password of the user']));
  }
  const id = keyHash(username);
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'keys', id);
    if (creating && before !== undefined) return fail(409, 'User already exists');
    if (!creating && before === undefined) return notFound();
    const s = await withPassword(await checkedSession(c, tx, body), before);
    await auditedPut(c, tx, org, 'keys', id, before, s);
    return keyReply(username, { id, body: s, created: 0, updated: 0 });
  });
}
