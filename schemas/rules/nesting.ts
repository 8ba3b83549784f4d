/**
 * How deep a document may nest, written once for the webhooks (an OAS or streams document in a
 * ConfigMap, a resource's spec), the operator, the gateway's management API and the dashboard (API
 * definitions, OAS documents, policies, keys, any JSON body). Parsers and checks walk documents
 * recursively: a document nested thousands of levels deep would exhaust the stack and answer an
 * internal error instead of a refusal. It is refused by name and limit before anything else looks
 * at it. Real documents nest a few dozen levels at most (a JSON Schema inside an OAS operation
 * included).
 */
import type * as Yaml from 'yaml';
import { lazyModule } from '../../lib/lazy.ts';
import type { FieldProblem } from './field-problem.ts';

/** The YAML parser, loaded by the first document that is not JSON (most are). */
const yaml = lazyModule<typeof Yaml>(import.meta.url, 'yaml');

/** The deepest nesting accepted: objects and lists inside one another, the outermost counted. */
export const MAX_NESTING_DEPTH = 128;

/** Where a value nests too deep: the first field of the deep branch (`x-deep`, `[0]`), if any. */
export interface TooDeep {
  under: string;
}

const segment = (key: string): string => (/^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key));

/**
 * Whether `value` nests more than `max` objects and lists inside one another, and under which
 * top-level field; undefined when it does not. Walks without recursion, so any depth is safe.
 */
export function tooDeep(value: unknown, max = MAX_NESTING_DEPTH): TooDeep | undefined {
  const stack: [unknown, number, string][] = [[value, 1, '']];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [v, depth, under] = next;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return { under };
    // Only objects and lists nest: scalars are not walked (a batch of flat records, such as
    // the dashboard's analytics ingest, then costs one pass over its records).
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (x !== null && typeof x === 'object')
          stack.push([x, depth + 1, depth === 1 ? `[${String(i)}]` : under]);
      }
    } else {
      for (const k of Object.keys(v)) {
        const x: unknown = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') stack.push([x, depth + 1, depth === 1 ? segment(k) : under]);
      }
    }
  }
  return undefined;
}

/** `<what> is nested more than 128 levels deep (under x): ...`, the one message of the rule. */
export function nestingMessage(what: string, deep: TooDeep | undefined): string {
  const where = deep === undefined || deep.under === '' ? '' : ` (under ${deep.under})`;
  return `${what} is nested more than ${String(MAX_NESTING_DEPTH)} levels deep${where}: at most ${String(MAX_NESTING_DEPTH)} objects and lists may be nested in one another`;
}

/** The problem of a value nested too deep, at the field `path`; undefined when it is not. */
export function nestingProblem(
  path: string,
  value: unknown,
  what = 'the document',
): FieldProblem | undefined {
  const deep = tooDeep(value);
  return deep === undefined ? undefined : { path, type: 'Invalid', message: nestingMessage(what, deep) };
}

/** Whether an error is the stack running out (a parser's recursion on a deep document). */
function stackExhausted(err: unknown): boolean {
  return err instanceof RangeError || (err instanceof Error && err.message.includes('Maximum call stack'));
}

/**
 * A document's text, JSON (when it starts with `{`) or YAML, parsed and checked for depth. The
 * refusal is a sentence: the nesting message, or the parser's first line.
 */
export function parseDocumentText(
  text: string,
): { value: unknown } | { nesting: string } | { syntax: string } {
  let value: unknown;
  try {
    value = text.trimStart().startsWith('{') ? JSON.parse(text) : yaml().parse(text, { prettyErrors: true });
  } catch (err) {
    if (stackExhausted(err)) return { nesting: nestingMessage('the document', undefined) };
    const detail = ((err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '').replace(
      /:$/,
      '',
    );
    return { syntax: detail };
  }
  const deep = tooDeep(value);
  return deep === undefined ? { value } : { nesting: nestingMessage('the document', deep) };
}
