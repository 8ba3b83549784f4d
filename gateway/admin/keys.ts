/**
 * `/svc/keys[/{keyID}]`: keys (sessions) in the classic shape. `POST /svc/keys` generates a key
 * and returns it once; `POST /svc/keys/{keyID}` imports a custom key (or, with `basic_auth_data`,
 * registers the basic-auth user `{keyID}`). A key is stored under the SHA-256 of its value and a
 * password as an scrypt hash, so neither can be read back from the store; an HMAC secret
 * (`hmac_string`) is stored encrypted under the gateway secret (sessions/secrets.ts) and never
 * returned; `?hashed=true` names a key by its stored ID instead of its value. A write takes effect at once on every gateway
 * process sharing the store, without a reload.
 */
import type { GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import { sessionModel } from '../../schemas/models/session.ts';
import { checkSession } from '../../schemas/rules/access.ts';
import { formatProblem, quote } from '../../schemas/rules/field-problem.ts';
import { keyIdProblem } from '../../schemas/rules/ids.ts';
import { compile } from '../../schemas/validate.ts';
import { CERTS, certKeyOf, fingerprintOfId, type StoredCert } from '../certs/certs.ts';
import { counterIdOf, counterName } from '../limits/counters.ts';
import { classicOf } from '../routes/check.ts';
import { generateKey, hashPassword, keyIdOf } from '../sessions/credentials.ts';
import { isSealed, sealSecret } from '../sessions/secrets.ts';
import { readJsonObject, statusBody, type AdminResponse } from './http.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';
import type { AdminRequest } from './types.ts';

const schemaCheck = compile(sessionModel);
const notFound = (): AdminResponse => statusBody(404, 'error', 'Key not found');
const HASHED_ID = /^[0-9a-f]{64}$/;

function invalid(problems: string[]): AdminResponse {
  return statusBody(400, 'error', `Validation of Key failed. Reason: ${problems.join('; ')}`);
}

function queryOf(r: AdminRequest): URLSearchParams {
  const url = r.req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}

/** The stored ID the path names: the hash of the key, or the hash itself with `?hashed=true`. */
function storedIdOf(r: AdminRequest): string | undefined {
  const given = r.params[0] ?? '';
  if (given === '') return undefined;
  if (queryOf(r).get('hashed') === 'true') return HASHED_ID.test(given) ? given : undefined;
  return keyIdOf(given);
}

/** What a client sees of a stored key: never the password hash, nor the HMAC secret. */
function presented(id: string, s: GatewaySession): Record<string, unknown> {
  const { basic_auth_data, hmac_string: _secret, ...rest } = s;
  return {
    ...rest,
    ...(basic_auth_data === undefined
      ? {}
      : { basic_auth_data: { hash_type: basic_auth_data.hash_type ?? 'scrypt' } }),
    key_hash: id,
  };
}

/**
 * Why the key's policies forbid creating or updating it. A new key without `expires` gets the
 * longest `key_expires_in` of its policies.
 */
async function policyProblems(r: AdminRequest, s: GatewaySession, isNew: boolean): Promise<string[]> {
  const problems: string[] = [];
  let lifetime = 0;
  for (const [i, pid] of (s.apply_policies ?? []).entries()) {
    const p = (await r.deps.store.get('policies', pid)) as GatewayPolicy | undefined;
    lifetime = Math.max(lifetime, p?.key_expires_in ?? 0);
    const at = `apply_policies[${i}]`;
    if (p === undefined) problems.push(`${at}: policy ${quote(pid)} not found: create it first`);
    else if (p.state === 'draft' || p.state === 'deny') {
      problems.push(
        `${at}: policy ${quote(pid)} is ${p.state}: no key can be created for it; set its state to active`,
      );
    } else if (p.active === false || p.is_inactive === true) {
      problems.push(`${at}: policy ${quote(pid)} is not active: no key can be created for it`);
    }
  }
  if (isNew && lifetime > 0 && (s.expires ?? 0) <= 0) {
    s.expires = Math.floor(r.deps.now() / 1000) + lifetime;
  }
  return problems;
}

/**
 * A key's quota counters start again when it is written, unless the call says
 * `?suppress_reset=1` or an API it is granted says `dont_set_quota_on_create`
 * (`skipQuotaReset`).
 */
async function resetQuotasOnWrite(r: AdminRequest, id: string, s: GatewaySession): Promise<void> {
  if (['1', 'true'].includes(queryOf(r).get('suppress_reset') ?? '')) return;
  for (const apiId of Object.keys(s.access_rights ?? {})) {
    const stored = await r.deps.store.get('apis', apiId);
    if (stored !== undefined && classicOf(stored).dont_set_quota_on_create === true) return;
  }
  await r.deps.counters.resetGroup(counterIdOf(id, s));
}

/** The stored key with its live quota: `quota_remaining` and `quota_renews`, root and per API. */
async function withLiveQuota(r: AdminRequest, id: string, s: GatewaySession): Promise<GatewaySession> {
  const loaded = await r.deps.sessions.byId(id);
  const applied = loaded?.applied.ok === true ? loaded.applied.session : s;
  const counted = counterIdOf(id, s);
  const out: GatewaySession = structuredClone(s);
  const now = r.deps.now();
  const live = async (
    name: string,
    max: number,
  ): Promise<{ quota_remaining: number; quota_renews: number }> => {
    const use = await r.deps.counters.peekQuota(name);
    return {
      quota_remaining: Math.max(0, max - (use?.used ?? 0)),
      quota_renews: Math.ceil((now + (use?.ttlMs ?? 0)) / 1000),
    };
  };
  if ((applied.quota_max ?? -1) > 0)
    Object.assign(out, await live(counterName.quota(counted), applied.quota_max ?? 0));
  for (const [apiId, ar] of Object.entries(applied.access_rights ?? {})) {
    const max = ar.limit?.quota_max ?? -1;
    const target = out.access_rights?.[apiId]?.limit;
    if (max > 0 && target !== undefined)
      Object.assign(target, await live(counterName.quota(counted, apiId), max));
  }
  return out;
}

/** Checks a key body and turns its password into a hash; the problems, or the session to store. */
async function prepare(
  r: AdminRequest,
  body: Record<string, unknown>,
  previous: GatewaySession | undefined,
): Promise<GatewaySession | string[]> {
  const s = body as GatewaySession;
  const previousHash = previous?.basic_auth_data?.password;
  // An update without a password keeps the stored one.
  if (
    s.basic_auth_data !== undefined &&
    (s.basic_auth_data.password ?? '') === '' &&
    previousHash !== undefined
  ) {
    s.basic_auth_data = { password: previousHash, hash_type: 'scrypt' };
  } else if (s.basic_auth_data?.password !== undefined && s.basic_auth_data.password !== '') {
    if (s.basic_auth_data.hash_type === 'scrypt') {
      return [
        'basic_auth_data.hash_type: Forbidden: send the password in clear over TLS; the gateway hashes it',
      ];
    }
    s.basic_auth_data = { password: await hashPassword(s.basic_auth_data.password), hash_type: 'scrypt' };
  }
  // An update without an HMAC secret keeps the stored one; a new one is encrypted.
  if ((s.hmac_string ?? '') === '') {
    if (previous?.hmac_string !== undefined) s.hmac_string = previous.hmac_string;
    else delete s.hmac_string;
  } else if (s.hmac_string !== undefined) {
    if (isSealed(s.hmac_string)) {
      return ['hmac_string: Forbidden: send the secret in clear over TLS; the gateway encrypts it'];
    }
    s.hmac_string = sealSecret(s.hmac_string, r.deps.secret);
  }
  const schema = schemaCheck(s).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  if (schema.length > 0) return schema;
  const rules = checkSession(s).map(formatProblem);
  if (rules.length > 0) return rules;
  const policy = await policyProblems(r, s, previous === undefined);
  if (policy.length > 0) return policy;
  s.date_created ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return s;
}

/** GET /svc/keys: the stored IDs (hashes); `?api_id=` keeps the keys granted that API. */
export async function listKeys(r: AdminRequest): Promise<AdminResponse> {
  const apiId = queryOf(r).get('api_id');
  const entries = await r.deps.store.list('keys');
  const keys = entries.flatMap((e) => {
    if (!('value' in e)) return [];
    if (apiId === null) return [e.id];
    const s = e.value as GatewaySession;
    return s.access_rights?.[apiId] !== undefined ? [e.id] : [];
  });
  return { status: 200, body: { keys } };
}

/** GET /svc/keys/{keyID} */
export async function getKey(r: AdminRequest): Promise<AdminResponse> {
  const id = storedIdOf(r);
  if (id === undefined) return notFound();
  const s = (await r.deps.store.get('keys', id)) as GatewaySession | undefined;
  return s === undefined ? notFound() : { status: 200, body: presented(id, await withLiveQuota(r, id, s)) };
}

async function create(r: AdminRequest, raw: string, body: Record<string, unknown>): Promise<AdminResponse> {
  const prepared = await prepare(r, body, undefined);
  if (Array.isArray(prepared)) return invalid(prepared);
  const id = keyIdOf(raw);
  if ((await r.deps.store.put('keys', id, prepared, 'create')) === 'exists') {
    return statusBody(409, 'error', 'Key already exists');
  }
  await resetQuotasOnWrite(r, id, prepared);
  await r.deps.changed('keys', id);
  r.deps.log.info('key stored', { key_hash: id, action: 'added' });
  return { status: 200, body: { key: raw, key_hash: id, status: 'ok', action: 'added' } };
}

/** POST /svc/keys: the gateway generates the key and returns it, once. */
export async function createKey(r: AdminRequest): Promise<AdminResponse> {
  const body = withoutNulls(await readJsonObject(r.req));
  if (body.basic_auth_data !== undefined) {
    return statusBody(400, 'error', 'A basic-auth user is created with POST /svc/keys/{username}');
  }
  const orgId = typeof body.org_id === 'string' ? body.org_id : undefined;
  // A generated key starts with the organisation's ID: it must be a key a URL can name.
  const orgProblem = orgId === undefined || orgId === '' ? undefined : keyIdProblem('org_id', orgId);
  if (orgProblem !== undefined) return invalid([formatProblem(orgProblem)]);
  // Dynamic mTLS: a key bound to a certificate is named by it (certs/certs.ts certKeyOf).
  const certificate = typeof body.certificate === 'string' ? body.certificate : '';
  if (certificate !== '') {
    const bound = await boundKeyOf(r, certificate, orgId ?? '');
    if (typeof bound !== 'string') return bound;
    return create(r, bound, body);
  }
  return create(r, generateKey(orgId), body);
}

/** The raw key a certificate-bound key is stored under, or 400 naming the unknown certificate. */
async function boundKeyOf(r: AdminRequest, certId: string, orgId: string): Promise<string | AdminResponse> {
  const fingerprint = fingerprintOfId(certId);
  const cert = (await r.deps.store.get(CERTS, certId)) as StoredCert | undefined;
  if (fingerprint === undefined || cert === undefined) {
    return invalid([
      `certificate: certificate ${quote(certId)} not found: upload it with POST /svc/certs first`,
    ]);
  }
  return certKeyOf(orgId, cert.fingerprint);
}

/** POST /svc/keys/{keyID}: imports a custom key, or registers the basic-auth user {keyID}. */
export async function importKey(r: AdminRequest): Promise<AdminResponse> {
  const raw = r.params[0] ?? '';
  if (raw === '' || queryOf(r).get('hashed') === 'true') {
    return statusBody(400, 'error', 'A key is imported by its value, not its hash');
  }
  const bad = keyIdProblem('keyID', raw);
  if (bad !== undefined) return invalid([formatProblem(bad)]);
  const body = withoutNulls(await readJsonObject(r.req));
  if (typeof body.certificate === 'string' && body.certificate !== '') {
    return invalid(['certificate: a key bound to a certificate is created with POST /svc/keys/create']);
  }
  return create(r, raw, body);
}

/** PUT /svc/keys/{keyID} */
export async function updateKey(r: AdminRequest): Promise<AdminResponse> {
  const id = storedIdOf(r);
  if (id === undefined) return notFound();
  const body = withoutNulls(await readJsonObject(r.req));
  const previous = (await r.deps.store.get('keys', id)) as GatewaySession | undefined;
  if (previous === undefined) return notFound();
  if ((body.certificate ?? '') !== (previous.certificate ?? '')) {
    return invalid(['certificate: the certificate of a key cannot change: create a new key for it']);
  }
  const prepared = await prepare(r, body, previous);
  if (Array.isArray(prepared)) return invalid(prepared);
  if ((await r.deps.store.put('keys', id, prepared, 'update')) === 'missing') return notFound();
  await resetQuotasOnWrite(r, id, prepared);
  await r.deps.changed('keys', id);
  r.deps.log.info('key stored', { key_hash: id, action: 'modified' });
  return { status: 200, body: { key: r.params[0] ?? '', key_hash: id, status: 'ok', action: 'modified' } };
}

/** DELETE /svc/keys/{keyID} */
export async function deleteKey(r: AdminRequest): Promise<AdminResponse> {
  const id = storedIdOf(r);
  if (id === undefined || !(await r.deps.store.delete('keys', id))) return notFound();
  await r.deps.changed('keys', id);
  r.deps.log.info('key deleted', { key_hash: id });
  return { status: 200, body: { key: r.params[0] ?? '', key_hash: id, status: 'ok', action: 'deleted' } };
}

/**
 * POST /svc/keys/{keyID}/reset: the key's quota starts again at its next request (every scope,
 * or one API's with `?api_id=`).
 */
export async function resetKeyQuota(r: AdminRequest): Promise<AdminResponse> {
  const id = storedIdOf(r);
  const s =
    id === undefined ? undefined : ((await r.deps.store.get('keys', id)) as GatewaySession | undefined);
  if (id === undefined || s === undefined) return notFound();
  const counted = counterIdOf(id, s);
  const apiId = queryOf(r).get('api_id');
  if (apiId === null || apiId === '') await r.deps.counters.resetGroup(counted);
  else await r.deps.counters.resetQuota(counterName.quota(counted, apiId));
  r.deps.log.info('key quota reset', { key_hash: id, api_id: apiId ?? undefined });
  return { status: 200, body: { key: r.params[0] ?? '', key_hash: id, status: 'ok', action: 'reset' } };
}
