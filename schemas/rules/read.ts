/**
 * Guarded reads of models the rules check before (or beside) their schema: a field of the wrong
 * type reads as absent, so every rule can run on anything a client sent.
 */
import type { GatewayApiDefinition } from '../generated/models.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import { fieldPath } from '../validate.ts';
import type { FieldProblem, FieldProblemType } from './field-problem.ts';

/** A model read before its schema check: its fields, each of which may hold anything. */
export type Unchecked<T> = Partial<Record<keyof T, unknown>>;

/** A classic API definition as the rules read it: the gateway's model, or an ApiDefinition spec. */
export type ClassicApiInput = Unchecked<GatewayApiDefinition>;

type Depth = [never, 0, 1, 2, 3, 4, 5];

/**
 * Dotted paths of the fields of a model, checked by the compiler against the generated types;
 * `*` stands for any key of a map (`version_data.versions.*.expires`).
 */
export type ModelPath<T, D extends number = 5> = [D] extends [never]
  ? never
  : T extends readonly unknown[]
    ? never
    : T extends object
      ? string extends keyof T
        ? '*' | `*.${ModelPath<NonNullable<T[string & keyof T]>, Depth[D]>}`
        : { [K in keyof T & string]-?: K | `${K}.${ModelPath<NonNullable<T[K]>, Depth[D]>}` }[keyof T &
            string]
      : never;

/** A field of the classic API definition. */
export type ClassicApiPath = ModelPath<GatewayApiDefinition>;

/** `v` as an object of model `T`, or undefined when it is no object. */
export function model<T extends object>(v: unknown): Unchecked<T> | undefined {
  return isPlainObject(v) ? (v as Unchecked<T>) : undefined;
}

/** `v` when it is a string. */
export const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `v` when it is a list, else an empty one. */
export const list = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);

/** Whether `v` is exactly true. */
export const isTrue = (v: unknown): boolean => v === true;

/** Whether a value says anything (the support check's rule of a neutral value). */
export { hasContent } from '../support.ts';

/** The values at `path` (`*` expanded over map keys), each with its field path. */
export function valuesAt(root: unknown, path: string): { path: string; value: unknown }[] {
  let found: { pointer: string; value: unknown }[] = [{ pointer: '', value: root }];
  for (const part of path.split('.')) {
    const next: typeof found = [];
    for (const { pointer, value } of found) {
      const o = model<Record<string, unknown>>(value);
      if (o === undefined) continue;
      for (const key of part === '*' ? Object.keys(o) : [part]) {
        if (!Object.hasOwn(o, key) || o[key] === undefined) continue;
        next.push({
          pointer: `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`,
          value: o[key],
        });
      }
    }
    found = next;
  }
  return found.map((f) => ({ path: fieldPath(f.pointer), value: f.value }));
}

/** A field problem. */
export const problem = (path: string, type: FieldProblemType, message: string): FieldProblem => ({
  path,
  type,
  message,
});
