/**
 * A GraphQL schema built from SDL, or its first problem with the line and column: the one build
 * the API rules (graphql.ts), federation (graphql-federation.ts) and the gateway share.
 */
import {
  buildASTSchema,
  GraphQLError,
  parse,
  validateSchema,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';
import { validateSDL } from 'graphql/validation/validate.js';

/** `line L, column C: message` of a GraphQL error (its first location). */
export function located(err: GraphQLError): string {
  const at = err.locations?.[0];
  return at === undefined ? err.message : `line ${at.line}, column ${at.column}: ${err.message}`;
}

/**
 * The schema built from `sdl` (or a document already parsed, whose nodes keep the lines and
 * columns of the text they were parsed from), or the first problem, with its line and column.
 */
export function buildGraphqlSchema(sdl: string | DocumentNode): GraphQLSchema | string {
  let doc;
  try {
    doc = typeof sdl === 'string' ? parse(sdl) : sdl;
  } catch (err) {
    return err instanceof GraphQLError ? located(err) : String(err);
  }
  const sdlErrors = validateSDL(doc);
  if (sdlErrors[0] !== undefined) return located(sdlErrors[0]);
  const schema = buildASTSchema(doc, { assumeValidSDL: true });
  const errors = validateSchema(schema);
  if (errors[0] !== undefined) return located(errors[0]);
  return schema;
}
