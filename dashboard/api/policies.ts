/**
 * `/api/portal/policies[/{id}]`: the organisation's security policies. A policy is checked by the
 * gateway's rules (schemas/), and every API it grants must be one of the organisation's. An `id`
 * on create is accepted only with `allow_explicit_policy_id` (how the operator keeps policy IDs
 * stable); without it the ID is generated.
 */
import type { GatewayPolicy } from '../../schemas/generated/models.ts';
import { policyModel } from '../../schemas/models/policy.ts';
import { checkPolicy } from '../../schemas/rules/access.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { policyInUseByClients } from '../../schemas/rules/oauth2.ts';
import { compile } from '../../schemas/validate.ts';
import type { StoreTx } from '../store/store.ts';
import { apiExists } from './apis.ts';
import { auditedPut, changeExisting, newId, pageOfKind } from './documents.ts';
import { OAUTH_CLIENTS } from './oauth.ts';
import { callerOf, fail, json, ok, readObject, Refusal, type Ctx, type Reply } from './http.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';

const schemaCheck = compile(policyModel);
const notFound = (): Reply => fail(404, 'Policy not found');
const invalid = (problems: string[]): string => `Validation of Policy failed. Reason: ${problems.join('; ')}`;

/** Every reason the gateway would refuse the policy, as `<field>: <message>`. */
export function policyProblems(value: Record<string, unknown>): string[] {
  const schema = schemaCheck(value).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  if (schema.length > 0) return schema;
  return checkPolicy(value as unknown as GatewayPolicy).map(formatProblem);
}

/** APIs the policy grants that the organisation does not have. */
async function foreignApis(tx: StoreTx, org: string, p: Record<string, unknown>): Promise<string[]> {
  const rights = (p.access_rights ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  for (const apiId of Object.keys(rights)) {
    if (!(await apiExists(tx, org, apiId))) {
      problems.push(`access_rights.${apiId}: API ${JSON.stringify(apiId)} not found in your organisation`);
    }
  }
  return problems;
}

function checked(c: Ctx, body: Record<string, unknown>, id: string): Record<string, unknown> {
  const org = callerOf(c).org;
  if (body.org_id !== undefined && body.org_id !== '' && body.org_id !== org) {
    throw new Refusal(400, invalid([`org_id: must be your organisation's ID (${org})`]));
  }
  const p = { ...body, id, org_id: org };
  const problems = policyProblems(p);
  if (problems.length > 0) throw new Refusal(400, invalid(problems));
  return p;
}

/** GET /api/portal/policies: `{"Data": [...], "Pages": n}` */
export async function listPolicies(c: Ctx): Promise<Reply> {
  const { items, pages } = await pageOfKind(c, 'policies');
  return json({ Data: items.map((d) => d.body), Pages: pages });
}

/** GET /api/portal/policies/{id} */
export async function getPolicy(c: Ctx): Promise<Reply> {
  const d = await c.deps.store.get(callerOf(c).org, 'policies', c.params[0] ?? '');
  return d === undefined ? notFound() : json(d.body);
}

/** POST /api/portal/policies: answers the policy's ID as `Message`. */
export async function createPolicy(c: Ctx): Promise<Reply> {
  const body = withoutNulls(await readObject(c.req));
  const given = body.id ?? body._id;
  if (given !== undefined && given !== '' && !c.deps.config.allow_explicit_policy_id) {
    return fail(
      400,
      invalid([
        'id: explicit policy IDs are refused: leave id out, or set allow_explicit_policy_id (SVC_DB_ALLOW_EXPLICIT_POLICY_ID) to true in the dashboard configuration',
      ]),
    );
  }
  const bad = idProblem(body.id === undefined ? '_id' : 'id', given ?? '');
  if (given !== undefined && given !== '' && bad !== undefined)
    return fail(400, invalid([formatProblem(bad)]));
  const id = typeof given === 'string' && given !== '' ? given : newId();
  const { _id: _ignored, ...rest } = body;
  const policy = checked(c, rest, id);
  const org = callerOf(c).org;
  return c.deps.store.write(org, async (tx) => {
    const foreign = await foreignApis(tx, org, policy);
    if (foreign.length > 0) return fail(400, invalid(foreign));
    if ((await tx.get(org, 'policies', id)) !== undefined) return fail(409, 'Policy already exists');
    await auditedPut(c, tx, org, 'policies', id, undefined, policy);
    return ok(id);
  });
}

/** PUT /api/portal/policies/{id}: the full policy; an `id` in the body must be the path's. */
export async function updatePolicy(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  const body = withoutNulls(await readObject(c.req));
  if ((body.id !== undefined && body.id !== id) || (body._id !== undefined && body._id !== id)) {
    return fail(400, 'Request ID does not match that in the policy! For Update operations these must match.');
  }
  const { _id: _ignored, ...rest } = body;
  const policy = checked(c, rest, id);
  return changeExisting(c, 'policies', id, notFound, async (tx, org, before) => {
    const foreign = await foreignApis(tx, org, policy);
    if (foreign.length > 0) return fail(400, invalid(foreign));
    await auditedPut(c, tx, org, 'policies', id, before, policy);
    return ok('Data updated');
  });
}

/**
 * DELETE /api/portal/policies/{id}: refused (409, naming them) while OAuth clients use the policy,
 * checked in the same write as the deletion.
 */
export async function deletePolicy(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  return changeExisting(c, 'policies', id, notFound, async (tx, org, before) => {
    const clients = (await tx.list(org, OAUTH_CLIENTS)).items
      .map((d) => d.body)
      .filter((b) => b.policy_id === id)
      .map((b) => ({ api_id: String(b.api_id), client_id: String(b.client_id) }));
    const inUse = policyInUseByClients(id, clients);
    if (inUse !== undefined) return fail(409, inUse);
    await auditedPut(c, tx, org, 'policies', id, before, undefined);
    return ok('Data deleted');
  });
}
