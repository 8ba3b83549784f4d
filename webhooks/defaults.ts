/** Helpers of the `<kind>.default.ts` modules: copy first, then fill in. */
import { asArray, asObject, metaOf } from './access.ts';
import {
  EARLIER_CONTEXT,
  EARLIER_SECRET,
  movedEarlierName,
  type EarlierName,
} from '../schemas/rules/earlier-names.ts';

/** A deep copy of a JSON value (admission objects are plain JSON). */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Sets `ref.namespace` to `namespace` when `ref` is an object without one. */
export function defaultRefNamespace(ref: unknown, namespace: string): void {
  const o = asObject(ref);
  if (o !== undefined && o.namespace === undefined) o.namespace = namespace;
}

/**
 * Moves a reference's earlier field to its current name (schemas/rules/earlier-names.ts):
 * `spec.context` to `spec.contextRef` on the kinds that had it (ApiDefinition, SecurityPolicy),
 * `spec.fromSecret` to `spec.secretRef` on OperatorContext.
 */
export function moveEarlierName(obj: Record<string, unknown>, alias: EarlierName = EARLIER_CONTEXT): void {
  const spec = asObject(obj.spec);
  const moved = spec === undefined ? undefined : movedEarlierName(alias, spec, metaOf(obj).namespace);
  if (moved !== undefined) obj.spec = moved.spec;
}

/** Defaults `spec.contextRef.namespace` (every kind that has a contextRef). */
export function defaultContextRef(obj: Record<string, unknown>): void {
  defaultRefNamespace(asObject(obj.spec)?.contextRef, metaOf(obj).namespace);
}

/**
 * A defaulted copy of an object of a kind whose `contextRef` had an earlier name (ApiDefinition,
 * SecurityPolicy): the earlier name moved, `contextRef.namespace` filled in, then `fill` applied to
 * its spec with the object's namespace; `obj` itself when it is no object.
 */
export function withContextDefaults(
  obj: unknown,
  fill: (spec: Record<string, unknown>, namespace: string) => void,
): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  moveEarlierName(out);
  defaultContextRef(out);
  const spec = asObject(out.spec);
  if (spec !== undefined) fill(spec, metaOf(out).namespace);
  return out;
}

/** Applies `fill` to every object element of `list`. */
export function eachObject(list: unknown, fill: (o: Record<string, unknown>) => void): void {
  for (const item of asArray(list)) {
    const o = asObject(item);
    if (o !== undefined) fill(o);
  }
}

/** The warning of the mutating webhook when it moves an earlier field (`moveEarlierName`). */
export const earlierNameWarnings =
  (alias: EarlierName) =>
  (obj: unknown): string[] => {
    const o = asObject(obj);
    const spec = asObject(o?.spec);
    if (o === undefined || spec === undefined) return [];
    const moved = movedEarlierName(alias, spec, metaOf(o).namespace);
    return moved === undefined ? [] : [moved.warning];
  };

export { EARLIER_CONTEXT, EARLIER_SECRET };
