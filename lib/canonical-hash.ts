/**
 * The hash of a JSON document that the operator and the gateway both compute: the operator keeps
 * it as `latestSvcSpecHash` of what the gateway held after a push, and each gateway reports it
 * as the revision it has applied (`GET /svc/applied`), so the two can be compared.
 */
import { createHash } from 'node:crypto';
import { isPlainObject } from './plain-object.ts';

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
