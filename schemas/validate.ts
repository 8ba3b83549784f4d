import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import {
  KUBERNETES_EXTENSIONS,
  SVC_EXTENSIONS,
  type JsonSchema,
  type KindDefinition,
} from './json-schema.ts';
import { API_VERSION } from './common.ts';
import { ID_PATTERN, ID_RULE } from './rules/ids.ts';

/** One way a value breaks its schema: where (`spec.proxy.listen_path`) and why. */
export interface SchemaProblem {
  path: string;
  message: string;
}

/** Checks a value against a schema; an empty list means valid. */
export type SchemaCheck = (value: unknown) => SchemaProblem[];

function newAjv(opts: { useDefaults: boolean; coerceTypes: boolean }): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, ...opts });
  // Kubernetes extensions are data for the CRD generator; ajv need not act on them.
  for (const keyword of KUBERNETES_EXTENSIONS) {
    ajv.addKeyword({ keyword, schemaType: ['boolean', 'array', 'string'] });
  }
  // Support flags are read by schemas/support.ts, not by ajv.
  for (const keyword of SVC_EXTENSIONS) ajv.addKeyword({ keyword, schemaType: ['string'] });
  // The one format we use; ajv-formats would add a dependency for one regular expression.
  ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i);
  return ajv;
}

/** Validates as it is: admission, management API bodies. */
const strictAjv = newAjv({ useDefaults: false, coerceTypes: false });
/** Fills defaults and turns strings into numbers and booleans: configuration from env and flags. */
const configAjv = newAjv({ useDefaults: true, coerceTypes: true });

/** The whole-object schema of a custom resource kind. */
export function resourceSchema(def: KindDefinition): JsonSchema {
  return {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    properties: {
      apiVersion: { const: API_VERSION, description: 'API version.' },
      kind: { const: def.kind, description: 'Kind.' },
      metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      spec: def.spec,
      status: def.status,
    },
  };
}

/**
 * Compiles a schema once; the returned check is cheap to call. With `forConfig`, the check also
 * fills defaults and coerces strings (from environment variables and flags) in place.
 */
export function compile(schema: JsonSchema, opts: { forConfig?: boolean } = {}): SchemaCheck {
  const validate = (opts.forConfig ? configAjv : strictAjv).compile(schema);
  return (value) => {
    if (validate(value)) return [];
    return (validate.errors ?? []).map(problem);
  };
}

/** Turns a JSON pointer (`/spec/items/0/name`) into a field path (`spec.items[0].name`). */
export function fieldPath(pointer: string): string {
  let path = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (/^\d+$/.test(part)) path += `[${part}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(part)) path += path === '' ? part : `.${part}`;
    else path += `[${JSON.stringify(part)}]`;
  }
  return path;
}

function join(path: string, field: string): string {
  return fieldPath(`${path}/${field.replaceAll('~', '~0').replaceAll('/', '~1')}`);
}

function problem(e: ErrorObject): SchemaProblem {
  const at = fieldPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return {
        path: join(e.instancePath, String(p.missingProperty)),
        message: 'Required value: add this field',
      };
    case 'additionalProperties':
      return {
        path: join(e.instancePath, String(p.additionalProperty)),
        message: 'unknown field: remove it, or check its spelling and nesting',
      };
    case 'enum':
      return {
        path: at,
        message: `Unsupported value: must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'const':
      return { path: at, message: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'type':
      return { path: at, message: `Invalid type: must be ${String(p.type)}` };
    case 'pattern':
      // The ID rule says what it wants in words: its pattern is hard to read.
      if (p.pattern === ID_PATTERN) return { path: at, message: `Invalid value: ${ID_RULE}` };
      return { path: at, message: `Invalid value: must match ${String(p.pattern)}` };
    default:
      return { path: at, message: `Invalid value: ${e.message ?? e.keyword}` };
  }
}
