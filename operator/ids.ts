import { createHash } from 'node:crypto';
import { isPlainObject } from '../lib/plain-object.ts';

/**
 * The gateway ID of a resource without an explicit one: unpadded base64url of
 * `namespace/name`. It depends only on the namespaced name, so a deleted and re-created
 * resource gets the same ID and the keys that refer to it keep working.
 */
export function derivedId(namespace: string, name: string): string {
  return Buffer.from(`${namespace}/${name}`).toString('base64url');
}

/** Canonical JSON: object keys sorted at every depth, so equal objects hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isPlainObject(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Hash of an object's canonical JSON (sha256, hex). */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
