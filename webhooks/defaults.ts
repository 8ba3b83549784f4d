/** Helpers of the `<kind>.default.ts` modules: copy first, then fill in. */
import { asArray, asObject, metaOf } from './access.ts';

/** A deep copy of a JSON value (admission objects are plain JSON). */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Sets `ref.namespace` to `namespace` when `ref` is an object without one. */
export function defaultRefNamespace(ref: unknown, namespace: string): void {
  const o = asObject(ref);
  if (o !== undefined && o.namespace === undefined) o.namespace = namespace;
}

/** Defaults `spec.contextRef.namespace` (every kind that has a contextRef). */
export function defaultContextRef(obj: Record<string, unknown>): void {
  defaultRefNamespace(asObject(obj.spec)?.contextRef, metaOf(obj).namespace);
}

/** Applies `fill` to every object element of `list`. */
export function eachObject(list: unknown, fill: (o: Record<string, unknown>) => void): void {
  for (const item of asArray(list)) {
    const o = asObject(item);
    if (o !== undefined) fill(o);
  }
}
