/**
 * `/admin/organisations[/{id}]` and `/admin/users`, behind the admin secret: organisations (an
 * ID, a name `owner_name` and a domain `cname`) and the first user of each, usually its admin.
 */
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { actorOf, newId } from './documents.ts';
import { fail, hashOf, json, ok, pageOf, readObject, Refusal, type Ctx, type Reply } from './http.ts';
import type { StoreTx } from '../store/store.ts';
import { createUser } from './users.ts';

const notFound = (): Reply => fail(404, 'Organisation not found');

/** Problems of an organisation body, as `<field>: <message>`. */
function orgProblems(body: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof body.owner_name !== 'string' || body.owner_name.trim() === '') {
    problems.push('owner_name: Required value: the name of the organisation');
  }
  if (
    body.cname !== undefined &&
    (typeof body.cname !== 'string' || !/^[a-z0-9.-]*(:\d+)?$/i.test(body.cname))
  ) {
    problems.push('cname: Invalid value: a domain name such as api.example.com');
  }
  const bad = body.id === undefined ? undefined : idProblem('id', body.id);
  if (bad !== undefined) problems.push(formatProblem(bad));
  return problems;
}

function presented(o: { id: string; body: Record<string, unknown> }): Record<string, unknown> {
  return { ...o.body, id: o.id };
}

/** GET /admin/organisations */
export async function listOrgs(c: Ctx): Promise<Reply> {
  const page = pageOf(c);
  const { items, total } = await c.deps.store.listOrgs(page.slice);
  return json({ organisations: items.map(presented), pages: page.pages(total) });
}

/** GET /admin/organisations/{id} */
export async function getOrg(c: Ctx): Promise<Reply> {
  const org = await c.deps.store.getOrg(c.params[0] ?? '');
  return org === undefined ? notFound() : json(presented(org));
}

/** POST /admin/organisations: `{"owner_name": ..., "cname": ..., "id"?: ...}` */
export async function createOrg(c: Ctx): Promise<Reply> {
  const body = await readObject(c.req);
  const problems = orgProblems(body);
  if (problems.length > 0)
    return fail(400, `Validation of Organisation failed. Reason: ${problems.join('; ')}`);
  const id = typeof body.id === 'string' ? body.id : newId();
  const { id: _id, ...rest } = body;
  return c.deps.store.write(id, async (tx) => {
    if ((await tx.getOrg(id)) !== undefined) return fail(409, 'Organisation already exists');
    await tx.putOrg(id, rest);
    await tx.audit(orgAudit(c, id, undefined, rest));
    c.log.info('organisation created', { org_id: id });
    return ok('Org created', id);
  });
}

/** PUT /admin/organisations/{id}: the whole organisation; an `id` in the body must be the path's. */
export async function updateOrg(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  const body = await readObject(c.req);
  if (body.id !== undefined && body.id !== id) return fail(400, 'id: must match the ID in the path');
  const problems = orgProblems(body);
  if (problems.length > 0)
    return fail(400, `Validation of Organisation failed. Reason: ${problems.join('; ')}`);
  const { id: _id, ...rest } = body;
  return c.deps.store.write(id, async (tx) => {
    const before = await tx.getOrg(id);
    if (before === undefined) return notFound();
    await tx.putOrg(id, rest);
    await tx.audit(orgAudit(c, id, before.body, rest));
    return ok('Org updated');
  });
}

/** DELETE /admin/organisations/{id}: the organisation and everything it owns. */
export async function deleteOrg(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  const deleted = await c.deps.store.write(id, (tx) => tx.deleteOrg(id));
  if (!deleted) return notFound();
  c.log.info('organisation deleted', { org_id: id });
  return ok('Org deleted');
}

/** POST /admin/users: a user of the organisation `org_id` (its admin with `{"IsAdmin":"admin"}`). */
export async function adminCreateUser(c: Ctx): Promise<Reply> {
  const body = await readObject(c.req);
  const org = typeof body.org_id === 'string' ? body.org_id : '';
  if (org === '')
    return fail(
      400,
      'Validation of User failed. Reason: org_id: Required value: the organisation of the user',
    );
  if ((await c.deps.store.getOrg(org)) === undefined) throw new Refusal(404, 'Organisation not found');
  return createUser(c, org, body, 'admin-secret');
}

function orgAudit(c: Ctx, id: string, before: unknown, after: unknown): Parameters<StoreTx['audit']>[0] {
  return {
    org_id: id,
    at: c.deps.now(),
    actor: actorOf(c),
    action: before === undefined ? 'create' : 'update',
    kind: 'organisations',
    object_id: id,
    before_hash: hashOf(before),
    after_hash: hashOf(after),
  };
}
