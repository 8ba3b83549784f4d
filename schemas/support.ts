/**
 * What svc supports of a model, read from the schema's own flags (`x-svc-support`): the one check
 * the webhooks and the gateway run to refuse a field svc does not enforce yet, and the field list
 * docs/compatibility.md is generated from.
 *
 * A `not-supported` field is refused only when its value changes behaviour: false, 0, '', null,
 * and lists and maps of such values are neutral, and an object with a switch (`x-svc-switch`,
 * such as `CORS.enable`) is neutral while its switch is not true.
 */
import type { JsonSchema, SvcSupport } from './json-schema.ts';
import { fieldPath } from './validate.ts';
import { isPlainObject } from '../lib/plain-object.ts';

/** The message of a refused field: the path comes first, as `spec.<path>: not supported by svc yet`. */
export const NOT_SUPPORTED_YET = 'not supported by svc yet';

/** Whether a value says anything: false, 0, '', null, and lists and maps of such values say nothing. */
export function hasContent(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.some(hasContent);
  if (typeof v === 'object') return Object.values(v).some(hasContent);
  return true;
}

/** Whether `value`, at a field of schema `node`, changes nothing. */
export function isNeutral(node: JsonSchema, value: unknown): boolean {
  const sw = node['x-svc-switch'];
  if (sw !== undefined) {
    return !(value !== null && typeof value === 'object' && (value as Record<string, unknown>)[sw] === true);
  }
  return !hasContent(value);
}

const escape = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The field paths (`cache_options`, `version_data.versions.Default.extended_paths.white_list`) of
 * `value` that set a `not-supported` field of `schema` to a value that changes behaviour, every
 * one of them, in document order. Values of the wrong type are left to the schema check.
 */
export function notSupportedPaths(schema: JsonSchema, value: unknown): string[] {
  const out: string[] = [];
  const walk = (node: JsonSchema, v: unknown, pointer: string): void => {
    if (node.anyOf !== undefined) return;
    if (Array.isArray(v)) {
      const items = node.items;
      if (items) {
        v.forEach((item, i) => {
          walk(items, item, `${pointer}/${i}`);
        });
      }
      return;
    }
    if (!isPlainObject(v)) return;
    for (const [key, child] of Object.entries(v)) {
      const sub =
        node.properties?.[key] ??
        (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
      if (sub === undefined) continue;
      const at = `${pointer}/${escape(key)}`;
      if (sub['x-svc-support'] === 'not-supported') {
        if (!isNeutral(sub, child)) out.push(fieldPath(at));
      } else {
        walk(sub, child, at);
      }
    }
  };
  walk(schema, value, '');
  return out;
}

/** One field of a model with its support state, for docs/compatibility.md. */
export interface FieldSupport {
  /** Dotted path; `*` stands for any key of a map, `[]` for the items of a list. */
  path: string;
  support: SvcSupport;
  description: string;
  /** What the field holds: `string`, `boolean`, `list of object`, `map of string`, ... */
  type: string;
  /** The switch of a not-supported object, when it has one. */
  switch?: string;
  /** Why a not-supported field is not supported yet: its own `x-svc-reason`, else its parent's. */
  reason?: string;
}

function typeOf(node: JsonSchema): string {
  if (node.anyOf) return node.anyOf.map(typeOf).join(' or ');
  if (node.type === 'array') return `list of ${node.items ? typeOf(node.items) : 'any'}`;
  if (
    node.type === 'object' &&
    node.properties === undefined &&
    typeof node.additionalProperties === 'object'
  )
    return `map of ${typeOf(node.additionalProperties)}`;
  return node.type ?? 'any';
}

/**
 * Every field below `schema`, with its support state: its own flag, else its parent's (`inherit`
 * for the root), and for a not-supported field its reason, its own or its parent's. Items of
 * lists and values of maps are walked (as `[]` and `*`).
 */
export function fieldSupport(schema: JsonSchema, inherit: SvcSupport = 'supported'): FieldSupport[] {
  const out: FieldSupport[] = [];
  const walk = (node: JsonSchema, path: string, state: SvcSupport, why: string | undefined): void => {
    const children: [string, JsonSchema][] = [];
    if (node.properties) {
      for (const [k, v] of Object.entries(node.properties))
        children.push([path === '' ? k : `${path}.${k}`, v]);
    } else if (typeof node.additionalProperties === 'object') {
      const v = node.additionalProperties;
      if (v.properties || typeof v.additionalProperties === 'object' || v.items)
        children.push([`${path}.*`, v]);
    }
    if (node.items && (node.items.properties || node.items.items)) {
      walk(node.items, `${path}[]`, state, why);
    }
    for (const [p, child] of children) {
      const own = child['x-svc-support'] ?? state;
      const reason = own === 'supported' ? undefined : (child['x-svc-reason'] ?? why);
      const isMapValue = p.endsWith('.*');
      if (!isMapValue) {
        out.push({
          path: p,
          support: own,
          description: child.description ?? '',
          type: typeOf(child),
          ...(child['x-svc-switch'] === undefined ? {} : { switch: child['x-svc-switch'] }),
          ...(reason === undefined ? {} : { reason }),
        });
      }
      walk(child, p, own, reason);
    }
  };
  walk(schema, '', inherit, undefined);
  return out;
}
