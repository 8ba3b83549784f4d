/**
 * The gateway ID of a resource without an explicit one: unpadded base64url of
 * `namespace/name`. It depends only on the namespaced name, so a deleted and re-created
 * resource gets the same ID and the keys that refer to it keep working.
 */
export function derivedId(namespace: string, name: string): string {
  return Buffer.from(`${namespace}/${name}`).toString('base64url');
}

/** The hash both the operator and the gateway compute (lib/canonical-hash.ts). */
export { canonicalJson, hashOf } from '../lib/canonical-hash.ts';
