/**
 * JSON Schema validation of request bodies per endpoint (`extended_paths.validate_json`): the
 * first entry matching the method and path reads the body (at most 1 MiB; more gets 413) and
 * checks it against `schema` (or `schema_b64`, base64), compiled once as
 * schemas/rules/validate-json.ts compiles it (ajv, JSON Schema draft-07 rules; a `$schema` naming
 * an older draft is ignored; a schema that does not compile is refused when written). A body that
 * is not JSON, or does not match, gets `error_response_code` (default 422) with the first error:
 * `{"error": "<where>: <what>"}`, `<where>` being the JSON pointer of the value (`/name`) or
 * `payload` for the whole body. As it reads the body, a route with it is served by node:http.
 */
import type { ValidateFunction } from 'ajv';
import { bodySchemaOf, compileBodySchema } from '../../../schemas/rules/validate-json.ts';
import type { VersionInfo } from '../../../schemas/generated/models.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { MAX_READ_BODY } from '../../pipeline/context.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersion,
  perVersionMiddleware,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

interface Entry {
  endpoint: CompiledEndpoint;
  validate: ValidateFunction;
  status: number;
}

/** The validations of a version, compiled; undefined when it has none. Throws on a bad schema. */
export function compileValidations(v: VersionInfo): Entry[] | undefined {
  return compileEndpointEntries(v, v.extended_paths?.validate_json, (e) => {
    // schemas/rules/validate-json.ts refuses, when written, a schema that does not compile.
    let validate: ValidateFunction | string;
    try {
      const schema = bodySchemaOf(e);
      if (schema === undefined) return undefined;
      validate = compileBodySchema(schema);
    } catch (err) {
      validate = String(err);
    }
    if (typeof validate === 'string')
      throw new Error(`validate_json: the schema of ${e.path} does not compile: ${validate}`);
    return { validate, status: e.error_response_code ?? 422 };
  });
}

/** The first error of a failed validation, as the client reads it. */
export function firstError(validate: ValidateFunction): string {
  const e = validate.errors?.[0];
  if (e === undefined) return 'payload: does not match the schema';
  const where = e.instancePath === '' ? 'payload' : e.instancePath;
  const extra =
    e.keyword === 'additionalProperties'
      ? ` (${String((e.params as { additionalProperty?: unknown }).additionalProperty)})`
      : '';
  return `${where}: ${e.message ?? 'does not match the schema'}${extra}`;
}

/** See the module comment. */
export const validateJson: GatewayMiddleware = {
  ...perVersionMiddleware('validate-json', 'validations', compileValidations, (of) =>
    around(async (ctx, next) => {
      const hit = matchingEntry(of(ctx), ctx);
      if (hit !== undefined) {
        const body = await ctx.readBody(MAX_READ_BODY);
        if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
        let value: unknown;
        try {
          value = JSON.parse(body.toString('utf8'));
        } catch {
          return reject(ctx, GatewayError.bodyInvalid(hit.status, 'payload: the body is not JSON'));
        }
        if (!hit.validate(value))
          return reject(ctx, GatewayError.bodyInvalid(hit.status, firstError(hit.validate)));
      }
      await next();
      return undefined;
    }),
  ),
  readsBody: (api) => perVersion(api, compileValidations) !== undefined,
};
