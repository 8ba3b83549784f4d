/**
 * `/admin/organisations[/{id}]` and `/admin/users`, behind the admin secret: organisations (an
 * ID, a name `owner_name` and a domain `cname`) and the first user of each, usually its admin.
 */
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { portalDomainKey, portalDomainProblem } from '../../schemas/rules/portal.ts';
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
  const badCname = body.cname === undefined ? undefined : portalDomainProblem(body.cname);
  if (badCname !== undefined) problems.push(`cname: ${badCname}`);
  const bad = body.id === undefined ? undefined : idProblem('id', body.id);
  if (bad !== undefined) problems.push(formatProblem(bad));
  return problems;
}

/**
 * A 409 when another organisation has `cname` as its portal domain (ports aside: one Host would
 * name both), else undefined. Two organisations created at once with one cname are not told apart.
 */
async function cnameTaken(tx: StoreTx, id: string, cname: unknown): Promise<Reply | undefined> {
  if (typeof cname !== 'string' || cname === '') return undefined;
  const key = portalDomainKey(cname, false);
  for (const o of (await tx.listOrgs()).items) {
    const other = o.body.cname;
    if (o.id !== id && typeof other === 'string' && other !== '' && portalDomainKey(other, false) === key) {
      return fail(
        409,
        `cname: ${JSON.stringify(cname)} is the portal domain of organisation ${o.id} already`,
      );
    }
  }
  return undefined;
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
    const taken = await cnameTaken(tx, id, rest.cname);
    if (taken !== undefined) return taken;
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
    const taken = await cnameTaken(tx, id, rest.cname);
    if (taken !== undefined) return taken;
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
