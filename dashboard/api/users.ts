/**
 * `/api/users[/{id}]` and `/api/usergroups[/{id}]`: the users of the caller's organisation and
 * their groups (permission `users`). A user's access key is returned once, when it is made; the
 * store keeps its SHA-256. No one grants rights it lacks: only an admin makes admins or system
 * users, and a non-admin grants at most its own level on each resource.
 */
import { accessKeyHash, newAccessKey, permissionProblems, type Caller } from '../rbac/rbac.ts';
import type { Doc, StoreTx } from '../store/store.ts';
import { auditedPut, changeExisting, deleteExisting, newId, pageOfKind } from './documents.ts';
import { callerOf, fail, json, ok, readObject, Refusal, type Ctx, type Reply } from './http.ts';

const userNotFound = (): Reply => fail(404, 'User not found');
const groupNotFound = (): Reply => fail(404, 'User group not found');
const USER_FIELDS = [
  'first_name',
  'last_name',
  'email_address',
  'active',
  'user_permissions',
  'group_id',
  'system_user',
];

/** What a client sees of a user: never its key hash. */
function presentedUser(d: Doc, org: string): Record<string, unknown> {
  return { ...d.body, id: d.id, org_id: org };
}

/** Problems of a user body (without the caller-dependent ones), as `<field>: <message>`. */
function userProblems(body: Record<string, unknown>, granter: Caller | 'admin-secret'): string[] {
  const problems: string[] = [];
  for (const k of Object.keys(body)) {
    if (![...USER_FIELDS, 'id', 'org_id', 'password'].includes(k)) {
      problems.push(`${k}: unknown field: use ${USER_FIELDS.join(', ')}`);
    }
  }
  if (typeof body.email_address !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(body.email_address)) {
    problems.push('email_address: Required value: an email address such as ops@example.com');
  }
  for (const k of ['first_name', 'last_name', 'group_id']) {
    if (body[k] !== undefined && typeof body[k] !== 'string') problems.push(`${k}: must be a string`);
  }
  for (const k of ['active', 'system_user']) {
    if (body[k] !== undefined && typeof body[k] !== 'boolean') problems.push(`${k}: must be true or false`);
  }
  if (body.system_user === true && granter !== 'admin-secret' && !granter.admin) {
    problems.push('system_user: only an organisation admin can make a system user');
  }
  problems.push(...permissionProblems(body.user_permissions, 'user_permissions', granter));
  return problems;
}

function userRecord(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { active: true, user_permissions: {}, system_user: false };
  for (const k of USER_FIELDS) if (body[k] !== undefined) out[k] = body[k];
  return out;
}

/** Creates a user in `org`; shared by POST /api/users and POST /admin/users. */
export async function createUser(
  c: Ctx,
  org: string,
  body: Record<string, unknown>,
  granter: Caller | 'admin-secret',
): Promise<Reply> {
  const problems = userProblems(body, granter);
  if (problems.length > 0) return fail(400, `Validation of User failed. Reason: ${problems.join('; ')}`);
  const record = userRecord(body);
  const key = newAccessKey();
  const id = newId();
  return c.deps.store.write(org, async (tx) => {
    await checkGroupAndEmail(tx, org, record, id);
    await auditedPut(c, tx, org, 'users', id, undefined, record, accessKeyHash(key));
    return ok('User created', { ...record, id, org_id: org, access_key: key });
  });
}

async function checkGroupAndEmail(
  tx: StoreTx,
  org: string,
  record: Record<string, unknown>,
  id: string,
): Promise<void> {
  const group = record.group_id;
  if (typeof group === 'string' && group !== '' && (await tx.get(org, 'groups', group)) === undefined) {
    throw new Refusal(
      400,
      `Validation of User failed. Reason: group_id: user group ${JSON.stringify(group)} not found`,
    );
  }
  const users = await tx.list(org, 'users');
  if (users.items.some((u) => u.id !== id && u.body.email_address === record.email_address)) {
    throw new Refusal(409, 'email_address: a user with this email address already exists');
  }
}

/** GET /api/users */
export async function listUsers(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const { items, pages } = await pageOfKind(c, 'users');
  return json({ users: items.map((d) => presentedUser(d, org)), pages });
}

/** GET /api/users/{id} */
export async function getUser(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const d = await c.deps.store.get(org, 'users', c.params[0] ?? '');
  return d === undefined ? userNotFound() : json(presentedUser(d, org));
}

/** POST /api/users */
export async function postUser(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  return createUser(c, caller.org, await readObject(c.req), caller);
}

/** PUT /api/users/{id}: the whole user; its key stays. */
export async function putUser(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const id = c.params[0] ?? '';
  const body = await readObject(c.req);
  if (body.id !== undefined && body.id !== id) return fail(400, 'id: must match the ID in the path');
  const problems = userProblems(body, caller);
  if (problems.length > 0) return fail(400, `Validation of User failed. Reason: ${problems.join('; ')}`);
  return changeExisting(c, 'users', id, userNotFound, async (tx, org, before) => {
    const record = userRecord(body);
    await checkGroupAndEmail(tx, org, record, id);
    await auditedPut(c, tx, org, 'users', id, before, record);
    return ok('User updated');
  });
}

/** DELETE /api/users/{id} */
export async function deleteUser(c: Ctx): Promise<Reply> {
  return deleteExisting(c, 'users', userNotFound, 'User deleted');
}

/** POST /api/users/{id}/actions/key/reset: a new access key; the old one stops working at once. */
export async function resetUserKey(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  const key = newAccessKey();
  return changeExisting(c, 'users', id, userNotFound, async (tx, org, before) => {
    await auditedPut(c, tx, org, 'users', id, before, { ...before.body }, accessKeyHash(key));
    return ok('User key reset', { access_key: key });
  });
}

/** Problems of a group body. */
function groupProblems(body: Record<string, unknown>, caller: Caller): string[] {
  const problems: string[] = [];
  if (typeof body.name !== 'string' || body.name.trim() === '')
    problems.push('name: Required value: the name of the group');
  for (const k of Object.keys(body)) {
    if (!['id', 'name', 'description', 'user_permissions', 'org_id'].includes(k)) {
      problems.push(`${k}: unknown field: use name, description, user_permissions`);
    }
  }
  problems.push(...permissionProblems(body.user_permissions, 'user_permissions', caller));
  if ((body.user_permissions as Record<string, unknown> | undefined)?.IsAdmin !== undefined) {
    problems.push('user_permissions.IsAdmin: a group cannot make admins: set it on the user');
  }
  return problems;
}

function groupRecord(body: Record<string, unknown>): Record<string, unknown> {
  return {
    name: body.name,
    description: body.description ?? '',
    user_permissions: body.user_permissions ?? {},
  };
}

/** GET /api/usergroups */
export async function listGroups(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const { items, pages } = await pageOfKind(c, 'groups');
  return json({ groups: items.map((d) => ({ ...d.body, id: d.id, org_id: org })), pages });
}

/** GET /api/usergroups/{id} */
export async function getGroup(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const d = await c.deps.store.get(org, 'groups', c.params[0] ?? '');
  return d === undefined ? groupNotFound() : json({ ...d.body, id: d.id, org_id: org });
}

/** POST /api/usergroups */
export async function createGroup(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const body = await readObject(c.req);
  const problems = groupProblems(body, caller);
  if (problems.length > 0)
    return fail(400, `Validation of User group failed. Reason: ${problems.join('; ')}`);
  const id = newId();
  await c.deps.store.write(caller.org, (tx) =>
    auditedPut(c, tx, caller.org, 'groups', id, undefined, groupRecord(body)),
  );
  return ok('User group created', id);
}

/** PUT /api/usergroups/{id} */
export async function updateGroup(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const id = c.params[0] ?? '';
  const body = await readObject(c.req);
  const problems = groupProblems(body, caller);
  if (problems.length > 0)
    return fail(400, `Validation of User group failed. Reason: ${problems.join('; ')}`);
  return changeExisting(c, 'groups', id, groupNotFound, async (tx, org, before) => {
    await auditedPut(c, tx, org, 'groups', id, before, groupRecord(body));
    return ok('User group updated');
  });
}

/** DELETE /api/usergroups/{id}: refused while users are in it. */
export async function deleteGroup(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  return changeExisting(c, 'groups', id, groupNotFound, async (tx, org, before) => {
    const members = (await tx.list(org, 'users')).items.filter((u) => u.body.group_id === id);
    if (members.length > 0) return fail(409, `User group has ${members.length} users: move them first`);
    await auditedPut(c, tx, org, 'groups', id, before, undefined);
    return ok('User group deleted');
  });
}
