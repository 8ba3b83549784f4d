/**
 * Who may do what. A user's access key is a random value shown once; the store keeps only its
 * SHA-256 (the lookup that finds the user), compared in constant time. Permissions are per
 * resource (`read`, `write`, `deny`; absent is `deny`); a user in a group gets the group's, and
 * the user's own entries override them. An organisation's admin (`user_permissions.IsAdmin =
 * "admin"`) may do everything in it. `analytics` (traffic analytics) is only ever read. System users (the operator) are marked `system_user`; with
 * `api_writes_system_users_only` they alone may write API definitions.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { asPlainObject, isPlainObject } from '../../lib/plain-object.ts';

/** The resources permissions name. */
export const RESOURCES = [
  'apis',
  'keys',
  'policies',
  'users',
  'certs',
  'streams',
  'analytics',
  // The developer portal (dashboard/portal/).
  'portal',
] as const;
/** One of RESOURCES. */
export type Resource = (typeof RESOURCES)[number];
/** Access levels, weakest first. */
export const LEVELS = ['deny', 'read', 'write'] as const;
/** One of LEVELS. */
export type Level = (typeof LEVELS)[number];

/** What a request needs: a level on a resource, or being the organisation's admin. */
export type Requirement = { resource: Resource; level: 'read' | 'write' } | 'admin';

/** The effective rights of an authenticated user. */
export interface Caller {
  org: string;
  userId: string;
  admin: boolean;
  system: boolean;
  permissions: Readonly<Record<Resource, Level>>;
}

/** A new access key: 32 random bytes, hex. */
export function newAccessKey(): string {
  return randomBytes(32).toString('hex');
}

/** The stored form of an access key. */
export function accessKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time equality of two hex hashes of equal length (false otherwise). */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Whether a value is one of LEVELS. */
export function isLevel(v: unknown): v is Level {
  return typeof v === 'string' && (LEVELS as readonly string[]).includes(v);
}

/** Whether `have` allows `need`. */
export function allows(have: Level, need: Level): boolean {
  return LEVELS.indexOf(have) >= LEVELS.indexOf(need);
}

/** `user_permissions` with `IsAdmin: "admin"`. */
export function isAdminPermissions(p: unknown): boolean {
  return isPlainObject(p) && p.IsAdmin === 'admin';
}

/** The effective permission of each resource: the group's, overridden by the user's own. */
export function effectivePermissions(user: unknown, group: unknown): Record<Resource, Level> {
  const out = Object.fromEntries(RESOURCES.map((r) => [r, 'deny'])) as Record<Resource, Level>;
  for (const source of [group, user]) {
    const perms = asPlainObject(asPlainObject(source)?.user_permissions);
    if (perms === undefined) continue;
    for (const r of RESOURCES) {
      const v = perms[r];
      if (isLevel(v)) out[r] = v;
    }
  }
  return out;
}

/** Whether the caller meets `need`. */
export function permits(caller: Caller, need: Requirement): boolean {
  if (caller.admin) return true;
  if (need === 'admin') return false;
  return allows(caller.permissions[need.resource], need.level);
}

/**
 * Problems with `user_permissions` as `<path>: <message>`: unknown resources, unknown levels,
 * and a non-admin granting more than it has (no one can give away rights it lacks).
 */
export function permissionProblems(perms: unknown, path: string, granter: Caller | 'admin-secret'): string[] {
  if (perms === undefined) return [];
  if (!isPlainObject(perms)) {
    return [`${path}: must be an object of resource to read, write or deny`];
  }
  const problems: string[] = [];
  for (const [k, v] of Object.entries(perms)) {
    if (k === 'IsAdmin') {
      if (v !== 'admin' && v !== '') problems.push(`${path}.IsAdmin: must be "admin" or absent`);
      else if (v === 'admin' && granter !== 'admin-secret' && !granter.admin) {
        problems.push(`${path}.IsAdmin: only an organisation admin can make an admin`);
      }
      continue;
    }
    if (!(RESOURCES as readonly string[]).includes(k)) {
      problems.push(`${path}.${k}: unknown resource: use one of ${RESOURCES.join(', ')}`);
    } else if (!isLevel(v)) {
      problems.push(`${path}.${k}: must be one of read, write, deny`);
    } else if (
      granter !== 'admin-secret' &&
      !granter.admin &&
      !allows(granter.permissions[k as Resource], v)
    ) {
      problems.push(
        `${path}.${k}: cannot grant ${v}: you have ${granter.permissions[k as Resource]} on ${k}`,
      );
    }
  }
  return problems;
}
