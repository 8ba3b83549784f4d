/**
 * "JSON Schema first": the full schemas of schemas/ (they say more than the CRDs can), compiled
 * once when the module loads.
 */
import { kinds, models } from '../schemas/index.ts';
import { compile, resourceSchema } from '../schemas/validate.ts';
import type { SchemaCheck } from '../schemas/validate.ts';
import { fromSchemaProblem } from './field-error.ts';
import type { FieldError } from './field-error.ts';

const checks = new Map<string, SchemaCheck>(kinds.map((def) => [def.kind, compile(resourceSchema(def))]));

/** Problems of a whole custom resource against the full schema of its kind. */
export function schemaErrors(kind: string, obj: unknown): FieldError[] {
  const check = checks.get(kind);
  if (check === undefined) throw new Error(`no schema for kind ${kind}`);
  return check(obj).map((p) => fromSchemaProblem(p));
}

const oasCheck = compile(models.OasApiDocument ?? {});

/** Problems of an OAS document (the body of an OAS or streams API) against its schema. */
export function oasDocumentProblems(doc: unknown): { path: string; message: string }[] {
  return oasCheck(doc);
}
