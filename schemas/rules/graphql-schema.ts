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

/** `text` (SDL or an operation) parsed, or why it does not parse, with its line and column. */
export function parseGraphql(text: string): DocumentNode | string {
  try {
    return parse(text);
  } catch (err) {
    return err instanceof GraphQLError ? located(err) : String(err);
  }
}

/**
 * The schema built from `sdl` (or a document already parsed, whose nodes keep the lines and
 * columns of the text they were parsed from), or the first problem, with its line and column.
 */
export function buildGraphqlSchema(sdl: string | DocumentNode): GraphQLSchema | string {
  const doc = typeof sdl === 'string' ? parseGraphql(sdl) : sdl;
  if (typeof doc === 'string') return doc;
  const sdlErrors = validateSDL(doc);
  if (sdlErrors[0] !== undefined) return located(sdlErrors[0]);
  const schema = buildASTSchema(doc, { assumeValidSDL: true });
  const errors = validateSchema(schema);
  if (errors[0] !== undefined) return located(errors[0]);
  return schema;
}
