/**
 * The JSON Schemas of `extended_paths.validate_json`, written once for the webhooks and the
 * gateway: the schema an entry holds (`schema`, or `schema_b64`, base64) and how it is compiled
 * (ajv, JSON Schema draft-07 rules; a `$schema` naming an older draft is ignored). The gateway's
 * validate-json middleware compiles with `compileBodySchema`; the rule refuses, when written, a
 * schema that does not compile, with ajv's reason, so it is never stored and left unserved.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { ValidatePathMeta } from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { nestingMessage, tooDeep } from './nesting.ts';
import { model, problem, text, type Unchecked } from './read.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** ajv as the gateway runs it: lenient about unknown keywords, the first error only. */
const AJV_OPTIONS = { strict: false, allErrors: false, validateSchema: false } as const;

/**
 * The schema of an entry: `schema` when it has keys, else `schema_b64` decoded; undefined when
 * neither says anything. Throws when `schema_b64` is not base64 JSON of an object.
 */
export function bodySchemaOf(e: Unchecked<ValidatePathMeta>): Record<string, unknown> | undefined {
  const schema = model<Record<string, unknown>>(e.schema);
  if (schema !== undefined && Object.keys(schema).length > 0) return schema;
  const b64 = text(e.schema_b64) ?? '';
  if (b64 === '') return undefined;
  const parsed: unknown = JSON.parse(Buffer.from(b64, 'base64').toString('utf8'));
  if (!isPlainObject(parsed)) throw new Error('not the base64 of a JSON object');
  const deep = tooDeep(parsed);
  if (deep !== undefined) throw new Error(nestingMessage('the schema', deep));
  return parsed;
}

/**
 * `schema` compiled (each compilation has an ajv of its own, so compiling at every write keeps
 * nothing), or why it does not compile.
 */
export function compileBodySchema(schema: Record<string, unknown>): ValidateFunction | string {
  const { $schema: _ignored, ...rest } = schema;
  try {
    return new Ajv(AJV_OPTIONS).compile(rest);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Problems of one `validate_json` entry (`where`: its field path). */
export function bodySchemaProblems(where: string, e: unknown): FieldProblem[] {
  const entry = model<ValidatePathMeta>(e);
  if (entry === undefined || entry.disabled === true) return [];
  let schema: Record<string, unknown> | undefined;
  try {
    schema = bodySchemaOf(entry);
  } catch (err) {
    return [
      problem(
        `${where}.schema_b64`,
        'Invalid',
        `${quote(text(entry.schema_b64) ?? '', 40)}: ${err instanceof SyntaxError ? 'not the base64 of JSON' : (err as Error).message}: give the JSON Schema in schema instead, or base64 its JSON text`,
      ),
    ];
  }
  if (schema === undefined) return [];
  const compiled = compileBodySchema(schema);
  if (typeof compiled !== 'string') return [];
  const field = Object.keys(model<object>(entry.schema) ?? {}).length > 0 ? 'schema' : 'schema_b64';
  return [problem(`${where}.${field}`, 'Invalid', `the JSON Schema does not compile: ${compiled}`)];
}
