/**
 * `/svc/org/keys/{orgID}`: the session of an organisation, whose quota every key of the
 * organisation shares on APIs with `enforce_org_quotas`. Same shape and rules as a key;
 * `?reset_quota=1` starts a new quota period. Takes effect at once, without a reload.
 */
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { sessionModel } from '../../schemas/models/session.ts';
import { checkSession } from '../../schemas/rules/access.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { compile } from '../../schemas/validate.ts';
import { counterName, orgGroup } from '../limits/counters.ts';
import { readJsonObject, statusBody, type AdminResponse } from './http.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';
import type { AdminRequest } from './types.ts';

const schemaCheck = compile(sessionModel);
const notFound = (): AdminResponse => statusBody(404, 'error', 'Org not found');

function wantsReset(r: AdminRequest): boolean {
  const url = r.req.url ?? '';
  const q = url.indexOf('?');
  const v = new URLSearchParams(q === -1 ? '' : url.slice(q + 1)).get('reset_quota');
  return v === '1' || v === 'true';
}

async function write(r: AdminRequest, mode: 'create' | 'update'): Promise<AdminResponse> {
  const orgId = r.params[0] ?? '';
  const bad = idProblem('orgID', orgId);
  if (bad !== undefined) {
    return statusBody(400, 'error', `Validation of Org session failed. Reason: ${formatProblem(bad)}`);
  }
  const body = withoutNulls(await readJsonObject(r.req));
  body.org_id ??= orgId;
  const problems = [...schemaCheck(body).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`)];
  if (problems.length === 0) problems.push(...checkSession(body as GatewaySession).map(formatProblem));
  if (problems.length > 0) {
    return statusBody(400, 'error', `Validation of Org session failed. Reason: ${problems.join('; ')}`);
  }
  const outcome = await r.deps.store.put('orgs', orgId, body, mode === 'create' ? 'upsert' : 'update');
  if (outcome === 'missing') return notFound();
  if (wantsReset(r)) await r.deps.counters.resetGroup(orgGroup(orgId));
  await r.deps.changed('orgs', orgId);
  r.deps.log.info('org session stored', { org_id: orgId, action: outcome });
  return {
    status: 200,
    body: { key: orgId, status: 'ok', action: outcome === 'added' ? 'added' : 'modified' },
  };
}

/** GET /svc/org/keys/{orgID}: the session, with the quota as it stands. */
export async function getOrg(r: AdminRequest): Promise<AdminResponse> {
  const orgId = r.params[0] ?? '';
  const s = (await r.deps.store.get('orgs', orgId)) as GatewaySession | undefined;
  if (s === undefined) return notFound();
  const max = s.quota_max ?? -1;
  if (max <= 0) return { status: 200, body: s };
  const use = await r.deps.counters.peekQuota(counterName.org(orgId));
  return {
    status: 200,
    body: {
      ...s,
      quota_remaining: Math.max(0, max - (use?.used ?? 0)),
      quota_renews: Math.ceil((r.deps.now() + (use?.ttlMs ?? 0)) / 1000),
    },
  };
}

/** POST /svc/org/keys/{orgID} */
export function createOrg(r: AdminRequest): Promise<AdminResponse> {
  return write(r, 'create');
}

/** PUT /svc/org/keys/{orgID} */
export function updateOrg(r: AdminRequest): Promise<AdminResponse> {
  return write(r, 'update');
}

/** DELETE /svc/org/keys/{orgID} */
export async function deleteOrg(r: AdminRequest): Promise<AdminResponse> {
  const orgId = r.params[0] ?? '';
  if (!(await r.deps.store.delete('orgs', orgId))) return notFound();
  await r.deps.changed('orgs', orgId);
  return { status: 200, body: { key: orgId, status: 'ok', action: 'deleted' } };
}
