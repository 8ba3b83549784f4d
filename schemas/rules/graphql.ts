/**
 * Rules of an API's GraphQL settings, written once for the webhooks and the gateway: the schema
 * (SDL) must parse and build, with the line and column of the first problem; both modes need a
 * schema (a proxyOnly API checks queries against it, and svc does not fetch it by introspection);
 * `type_field_configurations` name a known data source kind, an http(s) URL (or a template of
 * one), and a type and field the schema has. Federation modes are refused by name.
 */
import {
  buildASTSchema,
  GraphQLError,
  isObjectType,
  parse,
  validateSchema,
  type GraphQLSchema,
} from 'graphql';
import { validateSDL } from 'graphql/validation/validate.js';
import type {
  GraphqlConfig,
  GraphqlDataSource,
  GraphqlDataSourceConfig,
  TypeFieldConfiguration,
} from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { isTrue, list, model, problem, text, type Unchecked } from './read.ts';

/** The data source kinds the execution engine knows. */
export const DATA_SOURCE_KINDS = ['GraphQLDataSource', 'HTTPJSONDataSource'];

/** `line L, column C: message` of a GraphQL error (its first location). */
function located(err: GraphQLError): string {
  const at = err.locations?.[0];
  return at === undefined ? err.message : `line ${at.line}, column ${at.column}: ${err.message}`;
}

/** The schema built from `sdl`, or the first problem, with its line and column. */
export function buildGraphqlSchema(sdl: string): GraphQLSchema | string {
  let doc;
  try {
    doc = parse(sdl);
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

/** Every problem of `graphql` (paths relative to the API definition). */
export function graphqlProblems(graphql: Unchecked<GraphqlConfig> | undefined): FieldProblem[] {
  if (graphql === undefined) return [];
  const problems: FieldProblem[] = [];
  const on = isTrue(graphql.enabled);
  const mode = text(graphql.execution_mode) ?? 'proxyOnly';
  if (on && (mode === 'supergraph' || mode === 'subgraph')) {
    problems.push(
      problem(
        'graphql.execution_mode',
        'NotSupported',
        `${quote(mode)}: federation is not supported by svc yet: use proxyOnly or executionEngine`,
      ),
    );
  }
  const sdl = text(graphql.schema) ?? '';
  let schema: GraphQLSchema | undefined;
  if (sdl !== '') {
    const built = buildGraphqlSchema(sdl);
    if (typeof built === 'string') {
      problems.push(problem('graphql.schema', 'Invalid', `the schema does not parse: ${built}`));
    } else schema = built;
  } else if (on && mode === 'executionEngine') {
    problems.push(
      problem(
        'graphql.schema',
        'Required',
        'execution_mode executionEngine needs the GraphQL schema (SDL) of the API: set graphql.schema',
      ),
    );
  } else if (on && mode === 'proxyOnly') {
    // Without a schema nothing could be checked (validity, depth, field and type limits), and
    // svc does not fetch one from the upstream by introspection.
    problems.push(
      problem(
        'graphql.schema',
        'Required',
        'a proxyOnly GraphQL API checks each query against the GraphQL schema (SDL) of its upstream, which svc does not fetch by introspection: set graphql.schema, or set graphql.enabled to false to proxy it as plain HTTP',
      ),
    );
  }
  const playground = model<{ enabled?: boolean; path?: string }>(graphql.playground);
  const playgroundPath = text(playground?.path) ?? '';
  if (on && isTrue(playground?.enabled) && !playgroundPath.startsWith('/')) {
    problems.push(
      problem(
        'graphql.playground.path',
        'Invalid',
        `${quote(playgroundPath)}: write the playground's path under the listen path, starting with /, such as /playground`,
      ),
    );
  }
  list(graphql.type_field_configurations).forEach((f, i) => {
    const at = `graphql.type_field_configurations[${i}]`;
    const field = model<TypeFieldConfiguration>(f);
    const typeName = text(field?.type_name);
    const fieldName = text(field?.field_name);
    if (schema !== undefined && typeName !== undefined && fieldName !== undefined) {
      const type = schema.getType(typeName);
      if (!isObjectType(type)) {
        problems.push(
          problem(`${at}.type_name`, 'Invalid', `${quote(typeName)} is not an object type of graphql.schema`),
        );
      } else if (type.getFields()[fieldName] === undefined) {
        problems.push(
          problem(
            `${at}.field_name`,
            'Invalid',
            `${quote(typeName)} has no field ${quote(fieldName)} in graphql.schema`,
          ),
        );
      }
    }
    const base = `${at}.data_source`;
    const source = model<GraphqlDataSource>(field?.data_source);
    if (source === undefined) return;
    const kind = source.kind;
    if (typeof kind === 'string' && !DATA_SOURCE_KINDS.includes(kind)) {
      problems.push(
        problem(
          `${base}.kind`,
          'NotSupported',
          `${quote(kind)}: use GraphQLDataSource or HTTPJSONDataSource`,
        ),
      );
    }
    const url = text(model<GraphqlDataSourceConfig>(source.data_source_config)?.url);
    if (url === undefined || url === '') return;
    const p = templatedUrlProblem(url);
    if (p !== undefined) problems.push(problem(`${base}.data_source_config.url`, 'Invalid', p));
  });
  return problems;
}

/** A data source URL may hold `{{ .object.id }}` templates; everything else must be a URL. */
function templatedUrlProblem(url: string): string | undefined {
  const filled = url.replace(/\{\{[^{}]*\}\}/g, 'x');
  if (filled.includes('{{') || filled.includes('}}')) {
    return `${quote(url)} has an unbalanced template: close each {{ with }}, such as {{ .object.id }}`;
  }
  let parsed: URL;
  try {
    parsed = new URL(filled);
  } catch {
    return `${quote(url)} is not an absolute http(s) URL: write the scheme and host, such as http://users.default.svc:8080/graphql`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `${quote(url)} has the scheme ${quote(parsed.protocol.slice(0, -1))}: data sources are called over http or https`;
  }
  return undefined;
}
