/**
 * Who calls the dashboard: the admin secret (compared by hash in constant time) and a user's
 * access key, looked up by its hash, with the permissions of the user and its group.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { DashboardDeps } from '../api/http.ts';
import {
  accessKeyHash,
  effectivePermissions,
  isAdminPermissions,
  sameHash,
  type Caller,
} from '../rbac/rbac.ts';

/** Whether an `admin-auth` header holds the admin secret `secret`. */
export function adminCheck(secret: string): (given: string | string[] | undefined) => boolean {
  const adminHash = createHash('sha256').update(secret).digest();
  return (given) =>
    typeof given === 'string' &&
    given !== '' &&
    timingSafeEqual(createHash('sha256').update(given).digest(), adminHash);
}

/** The active user whose access key is in the Authorization header `header`, if any. */
export async function authenticate(
  store: DashboardDeps['store'],
  header: string | undefined,
): Promise<Caller | undefined> {
  if (header === undefined || header === '') return undefined;
  const key = header.replace(/^Bearer\s+/i, '').trim();
  const hash = accessKeyHash(key);
  const found = await store.findByLookup('users', hash);
  if (found === undefined || !sameHash(found.lookup, hash) || found.doc.body.active === false)
    return undefined;
  const user = found.doc.body;
  const groupId = typeof user.group_id === 'string' && user.group_id !== '' ? user.group_id : undefined;
  const group = groupId === undefined ? undefined : await store.get(found.org, 'groups', groupId);
  return {
    org: found.org,
    userId: found.doc.id,
    admin: isAdminPermissions(user.user_permissions),
    system: user.system_user === true,
    permissions: effectivePermissions(user, group?.body),
  };
}
