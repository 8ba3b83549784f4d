/**
 * Reading an OAS document for its conversion (./convert.ts): the conversion's state (the classic
 * form being built, where each classic field came from, which document fields were read so that
 * the rest can be refused), paths into the document, and `$ref` resolution.
 */
import type { GatewayApiDefinition } from '../generated/models.ts';
import { quote, type FieldProblem, type FieldProblemType } from '../rules/field-problem.ts';
import { hasContent, model, text } from '../rules/read.ts';
import { fieldPath } from '../validate.ts';

/** The name of the gateway extension. */
export const OAS_EXTENSION = 'x-svc-api-gateway';
/** The extension's name, as paths into the document start with it. */
export const EXT = OAS_EXTENSION;

/** An object of the document. */
export type Json = Record<string, unknown>;
/** A step of a path into the document: a key or a list index. */
export type Part = string | number;

/** `v` as an object, or undefined. */
export const obj = (v: unknown): Json | undefined => model<Json>(v);
/** `v` when it is a string other than ''. */
export const nonEmpty = (v: unknown): string | undefined => (text(v) === '' ? undefined : text(v));

/** Whether a setting the gateway does not read would matter: it has content and is not switched off. */
export const saysSomething = (v: unknown): boolean => hasContent(v) && obj(v)?.enabled !== false;

/** The JSON pointer of a place in the document. */
export const pointer = (parts: readonly Part[]): string =>
  parts.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** The field path of a place in the document (`x-svc-api-gateway.server.listenPath.value`). */
export const documentPath = (parts: readonly Part[]): string => fieldPath(pointer(parts));

/** How a refusal says that the gateway does not do something. */
export const NOT_YET = 'not supported yet by this gateway';

/** The keys of a path item that are operations. */
export const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** The outcome of converting a document. */
export interface OasConversion {
  /** The classic form; it is valid once `checkOasDocument` finds no problem. */
  api: GatewayApiDefinition;
  /** What the conversion itself refuses, at paths in the document. */
  problems: FieldProblem[];
  /** The document path a field of the classic form came from, or undefined. */
  documentPathOf(classicPath: string): string | undefined;
}

/** One conversion: the classic form being built, where its fields came from, what was read. */
export class Conversion {
  readonly api: Json = { is_oas: true };
  readonly problems: FieldProblem[] = [];
  readonly #origins = new Map<string, string>();
  readonly #read = new Set<string>();
  readonly doc: Json;

  constructor(doc: Json) {
    this.doc = doc;
  }

  /** The value at `parts`, without marking it read. */
  peek(parts: readonly Part[]): unknown {
    let v: unknown = this.doc;
    for (const p of parts) {
      if (typeof p === 'number') v = Array.isArray(v) ? (v[p] as unknown) : undefined;
      else v = obj(v)?.[p];
      if (v === undefined) return undefined;
    }
    return v;
  }

  /** The value at `parts`, marked read (with everything under it). */
  take(parts: readonly Part[]): unknown {
    this.#read.add(pointer(parts));
    return this.peek(parts);
  }

  /** Sets a classic field, remembering the document field it came from. */
  set(classicPath: string, value: unknown, from: readonly Part[]): void {
    this.#origins.set(classicPath, documentPath(from));
    if (value === undefined) return;
    const keys = classicPath.split('.');
    const last = keys.pop() ?? '';
    let at = this.api;
    for (const k of keys) {
      const next = obj(at[k]) ?? {};
      at[k] = next;
      at = next;
    }
    at[last] = value;
  }

  /** Whether the setting at `parts` is enabled; a disabled one is read whole (it says nothing). */
  enabled(parts: readonly Part[]): boolean {
    if (this.take([...parts, 'enabled']) === true) return true;
    this.take(parts);
    return false;
  }

  /** Copies document fields under `from` to classic fields as they are: [document, classic] pairs. */
  copyAll(from: readonly Part[], fields: readonly (readonly [string, string])[]): void {
    for (const [field, classicPath] of fields) this.copy(classicPath, [...from, field]);
  }

  /** Copies a document field to a classic field as it is. */
  copy(classicPath: string, from: readonly Part[]): void {
    this.set(classicPath, this.take(from), from);
  }

  /** Records a problem at a place in the document. */
  problem(parts: readonly Part[], type: FieldProblemType, message: string): void {
    this.problems.push({ path: documentPath(parts), type, message });
  }

  /** Refuses what was not read under `parts` and says something. */
  refuseUnread(parts: readonly Part[]): void {
    const here = pointer(parts);
    if (this.#read.has(here)) return;
    const value = this.peek(parts);
    const o = obj(value);
    const below = `${here}/`;
    if (o !== undefined && [...this.#read].some((r) => r.startsWith(below))) {
      for (const key of Object.keys(o)) this.refuseUnread([...parts, key]);
    } else if (saysSomething(value)) {
      this.problem(
        parts,
        'NotSupported',
        `${NOT_YET}: remove it (the gateway keeps no setting it does not enforce)`,
      );
    }
  }

  /** The classic form built, the problems found, and where each classic field came from. */
  result(): OasConversion {
    const origins = this.#origins;
    return {
      api: this.api as unknown as GatewayApiDefinition,
      problems: this.problems,
      documentPathOf(classicPath) {
        let best: string | undefined;
        for (const k of origins.keys()) {
          const under =
            classicPath === k || classicPath.startsWith(`${k}.`) || classicPath.startsWith(`${k}[`);
          if (under && (best === undefined || k.length > best.length)) best = k;
        }
        return best === undefined ? undefined : `${origins.get(best) ?? ''}${classicPath.slice(best.length)}`;
      },
    };
  }
}

/** A `$ref` to `#/components/...` replaced by what it names (cycles and other refs are refused). */
export function resolveRefs(
  c: Conversion,
  schema: unknown,
  at: readonly Part[],
  seen: readonly string[] = [],
): unknown {
  if (Array.isArray(schema)) return schema.map((s, i) => resolveRefs(c, s, [...at, i], seen));
  const o = obj(schema);
  if (o === undefined) return schema;
  const ref = o.$ref;
  if (typeof ref === 'string') {
    const parts = ref.startsWith('#/')
      ? ref
          .slice(2)
          .split('/')
          .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
      : [];
    const target = parts.length > 0 ? c.peek(parts) : undefined;
    if (target === undefined || seen.includes(ref)) {
      c.problem(
        [...at, '$ref'],
        'NotSupported',
        `${quote(ref)}: validateRequest reads references into this document only, without cycles`,
      );
      return {};
    }
    return resolveRefs(c, target, at, [...seen, ref]);
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolveRefs(c, v, [...at, k], seen)]));
}
