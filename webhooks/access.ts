/**
 * Guarded reads of objects that have not passed the schema yet. The rules run even when the
 * schema refused the object (so the user sees every problem at once); these accessors make a
 * wrongly typed field read as absent instead of crashing the rule.
 */
import { resolveRef } from '../schemas/rules/references.ts';

/** A plain object, or undefined. */
export function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/** An array, or an empty one. */
export function asArray(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

/** A string, or undefined. */
export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A number, or undefined. */
export function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** True only for the boolean true. */
export function isTrue(v: unknown): boolean {
  return v === true;
}

/** Reads a dotted path of object keys (`spec.proxy.listen_path`). */
export function at(root: unknown, path: string): unknown {
  let cur: unknown = root;
  for (const part of path.split('.')) {
    const o = asObject(cur);
    if (o === undefined) return undefined;
    cur = o[part];
  }
  return cur;
}

/** Name and namespace of an object (namespace defaults to `default`, as kubectl does). */
export function metaOf(obj: unknown): { name: string; namespace: string } {
  return {
    name: asString(at(obj, 'metadata.name')) ?? asString(at(obj, 'metadata.generateName')) ?? '',
    namespace: asString(at(obj, 'metadata.namespace')) ?? 'default',
  };
}

/**
 * A reference in either form (`"namespace/name"`, `"name"`, or `{name, namespace?}`), its
 * namespace defaulted to `ns` (schemas/rules/references.ts).
 */
export function refOf(v: unknown, ns: string): { name: string; namespace: string } | undefined {
  return resolveRef(v, ns);
}
