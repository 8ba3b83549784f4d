/**
 * `/svc/policies[/{id}]`: security policies in the classic shape. A write is checked (schema,
 * then schemas/rules/access.ts) and takes effect at once on every gateway process sharing the
 * store: the keys that apply the policy are recomputed, without a reload.
 */
import { randomUUID } from 'node:crypto';
import type { GatewayPolicy } from '../../schemas/generated/models.ts';
import { policyModel } from '../../schemas/models/policy.ts';
import { checkPolicy } from '../../schemas/rules/access.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { policyInUseByClients } from '../../schemas/rules/oauth2.ts';
import { compile } from '../../schemas/validate.ts';
import { OAUTH_CLIENTS, type StoredClient } from '../oauth2/clients.ts';
import { idFromPath, readJsonObject, statusBody, writeBody, type AdminResponse } from './http.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';
import type { AdminRequest } from './types.ts';

const schemaCheck = compile(policyModel);
const notFound = (): AdminResponse => statusBody(404, 'error', 'Policy not found');
/** 400 naming what is wrong with the ID in the path, or undefined when it can be a policy's. */
function badId(id: string): AdminResponse | undefined {
  const p = idProblem('id', id);
  return p === undefined ? undefined : statusBody(400, 'error', formatProblem(p));
}

/** Every reason a policy is refused, as `<field>: <message>`. */
export function policyProblems(value: unknown): string[] {
  const schema = schemaCheck(value).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  if (schema.length > 0) return schema;
  return checkPolicy(value as GatewayPolicy).map(formatProblem);
}

function invalid(problems: string[]): AdminResponse {
  return statusBody(400, 'error', `Validation of Policy failed. Reason: ${problems.join('; ')}`);
}

/** The answer to a policy stored: every process hears of it first (its keys are recomputed). */
async function stored(r: AdminRequest, id: string, action: 'added' | 'modified'): Promise<AdminResponse> {
  await r.deps.changed('policies', id);
  r.deps.log.info('policy stored', { policy_id: id, action });
  return writeBody(id, action);
}

/** GET /svc/policies */
export async function listPolicies(r: AdminRequest): Promise<AdminResponse> {
  const entries = await r.deps.store.list('policies');
  return { status: 200, body: entries.flatMap((e) => ('value' in e ? [e.value] : [])) };
}

/** GET /svc/policies/{id} */
export async function getPolicy(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const bad = badId(id);
  if (bad !== undefined) return bad;
  const p = await r.deps.store.get('policies', id);
  return p === undefined ? notFound() : { status: 200, body: p };
}

/** Why a policy's own `id` is refused when `policies.allow_explicit_policy_id` is off. */
const EXPLICIT_ID_REFUSED =
  'id: explicit policy IDs are refused: leave id out (one is generated), or set policies.allow_explicit_policy_id (SVC_GW_POLICIES_ALLOW_EXPLICIT_POLICY_ID) to true in the gateway configuration';

/**
 * POST /svc/policies: an ID is generated when the policy has none; one it has is kept only with
 * `policies.allow_explicit_policy_id` (the default).
 */
export async function createPolicy(r: AdminRequest): Promise<AdminResponse> {
  const body = withoutNulls(await readJsonObject(r.req));
  if (body.id !== undefined && body.id !== '' && r.deps.allowExplicitPolicyId === false) {
    return invalid([EXPLICIT_ID_REFUSED]);
  }
  if (body.id === undefined || body.id === '') body.id = randomUUID().replaceAll('-', '');
  const bad = idProblem('id', body.id);
  const problems = bad === undefined ? policyProblems(body) : [formatProblem(bad)];
  if (problems.length > 0) return invalid(problems);
  const id = String(body.id);
  if ((await r.deps.store.put('policies', id, body, 'create')) === 'exists') {
    return statusBody(409, 'error', 'Policy already exists');
  }
  return stored(r, id, 'added');
}

/** PUT /svc/policies/{id}: the body's id, when present, must be the path's. */
export async function updatePolicy(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const bad = badId(id);
  if (bad !== undefined) return bad;
  const body = withoutNulls(await readJsonObject(r.req));
  const mismatch = 'Request ID does not match that in the policy! For Update operations these must match.';
  const other = idFromPath(body, 'id', id, mismatch);
  if (other !== undefined) return other;
  const problems = policyProblems(body);
  if (problems.length > 0) return invalid(problems);
  if ((await r.deps.store.put('policies', id, body, 'update')) === 'missing') return notFound();
  return stored(r, id, 'modified');
}

/** DELETE /svc/policies/{id}: refused (409, naming them) while OAuth clients use the policy. */
export async function deletePolicy(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const bad = badId(id);
  if (bad !== undefined) return bad;
  const clients = (await r.deps.store.list(OAUTH_CLIENTS)).flatMap((e) => {
    const c = 'value' in e ? (e.value as StoredClient | undefined) : undefined;
    return c?.policy_id === id ? [c] : [];
  });
  const inUse = policyInUseByClients(id, clients);
  if (inUse !== undefined) return statusBody(409, 'error', inUse);
  if (!(await r.deps.store.delete('policies', id))) return notFound();
  await r.deps.changed('policies', id);
  r.deps.log.info('policy deleted', { policy_id: id });
  return writeBody(id, 'deleted');
}
