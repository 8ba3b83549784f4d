/**
 * RFC 6902 JSON Patch between two JSON values: the defaulters return a new object and the
 * adapter sends the difference. Arrays of equal length are patched element by element; an
 * array that changed length is replaced whole (the defaulters never insert into arrays).
 */
import { isPlainObject } from '../lib/plain-object.ts';

/** One JSON Patch operation (the subset a diff needs). */
export type PatchOp =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/** Escapes one JSON Pointer token (RFC 6901). */
export function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The operations that turn `from` into `to`. */
export function diff(from: unknown, to: unknown, path = ''): PatchOp[] {
  if (isPlainObject(from) && isPlainObject(to)) {
    const ops: PatchOp[] = [];
    for (const key of Object.keys(from)) {
      const at = `${path}/${pointerToken(key)}`;
      if (!(key in to) || to[key] === undefined) {
        if (from[key] !== undefined) ops.push({ op: 'remove', path: at });
      } else {
        ops.push(...diff(from[key], to[key], at));
      }
    }
    for (const key of Object.keys(to)) {
      if ((!(key in from) || from[key] === undefined) && to[key] !== undefined) {
        ops.push({ op: 'add', path: `${path}/${pointerToken(key)}`, value: to[key] });
      }
    }
    return ops;
  }
  if (Array.isArray(from) && Array.isArray(to) && from.length === to.length) {
    return from.flatMap((v, i) => diff(v, to[i], `${path}/${i}`));
  }
  if (equal(from, to)) return [];
  return [{ op: 'replace', path, value: to }];
}

/** Deep equality of JSON values. */
export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => equal(v, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => k in b && equal(a[k], b[k]));
  }
  return false;
}
