/**
 * The execution engine (universal data graph): the gateway answers queries itself with
 * graphql-js's executor over the API's schema; each field listed in `type_field_configurations`
 * resolves through its data source:
 * - `HTTPJSONDataSource`: an HTTP call whose URL, body and headers are templates over the parent
 *   object's fields and the field's arguments (`{{ .object.id }}`, `{{ .arguments.id }}`); a union
 *   or interface member is chosen by status code (`status_code_type_name_mappings`, else
 *   `default_type_name`);
 * - `GraphQLDataSource`: the field with its sub-selection, sent as a GraphQL query (with the
 *   variables it uses) to another GraphQL server.
 * `mapping.path` selects the value in the response (a dot path); `mapping.disabled`, or no path,
 * takes it whole. graphql-js resolves the fields of one level concurrently; identical calls in one
 * request are made once (a per-request loader). A failed call becomes a GraphQL error with the
 * field's path, never a 500.
 */
import {
  GraphQLError,
  GraphQLObjectType,
  getNamedType,
  isAbstractType,
  Kind,
  OperationTypeNode,
  print,
  visit,
  type FieldNode,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import type { GraphqlDataSourceConfig, TypeFieldConfiguration } from '../../schemas/generated/models.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** What resolvers share in one request. */
export interface EngineContext {
  /** Calls made in this request, by method, URL, body and headers (the loader). */
  calls: Map<string, Promise<DataSourceAnswer>>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** A data source's answer: status and parsed JSON (undefined when the body was not JSON). */
export interface DataSourceAnswer {
  status: number;
  body: unknown;
}

/** The key each value of an abstract type carries to name its member (`__typename`). */
const TYPENAME = '__typename';

const TEMPLATE = /\{\{\s*\.?(object|arguments)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\}\}/g;

function pick(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/** Fills `{{ .object.x }}` and `{{ .arguments.y }}` (`encode` for URLs). */
export function fillTemplate(
  template: string,
  object: unknown,
  args: Record<string, unknown>,
  encode: (s: string) => string = (s) => s,
): string {
  return template.replace(TEMPLATE, (_all, root: string, rest: string) => {
    const v = pick(root === 'object' ? object : args, rest.slice(1).split('.'));
    if (v === undefined || v === null) return '';
    return encode(typeof v === 'string' ? v : JSON.stringify(v));
  });
}

/** The value at a dot path of `mapping.path` (`data.items`), or the whole value. */
function mapped(value: unknown, path: string | undefined): unknown {
  if (path === undefined || path === '') return value;
  return pick(value, path.split('.'));
}

async function call(
  ctx: EngineContext,
  req: { method: string; url: string; body?: string; headers: Record<string, string> },
): Promise<DataSourceAnswer> {
  const key = JSON.stringify([req.method, req.url, req.body ?? null, req.headers]);
  let answer = ctx.calls.get(key);
  if (answer === undefined) {
    answer = (async () => {
      const res = await fetch(req.url, {
        method: req.method,
        headers: req.headers,
        ...(req.body === undefined ? {} : { body: req.body }),
        signal: ctx.signal,
      });
      const text = await res.text();
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: res.status, body };
    })();
    ctx.calls.set(key, answer);
  }
  return answer;
}

function httpJsonResolver(
  config: GraphqlDataSourceConfig,
  mappingPath: string | undefined,
  abstract: boolean,
): GraphQLFieldResolver<unknown, EngineContext> {
  const method = config.method ?? 'GET';
  const typeByStatus = new Map(
    (config.status_code_type_name_mappings ?? [])
      .filter((m) => m.type_name !== undefined && m.type_name !== '')
      .map((m) => [m.status_code, m.type_name ?? '']),
  );
  return async (source, rawArgs, ctx) => {
    const args = rawArgs as Record<string, unknown>;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers ?? {})) headers[k] = fillTemplate(v, source, args);
    const body =
      config.body === undefined || config.body === '' ? undefined : fillTemplate(config.body, source, args);
    if (body !== undefined && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json';
    const url = fillTemplate(config.url, source, args, encodeURIComponent);
    let answer: DataSourceAnswer;
    try {
      answer = await call(ctx, { method, url, headers, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      throw new GraphQLError(`data source unreachable: ${err instanceof Error ? err.message : String(err)}`);
    }
    const member = typeByStatus.get(answer.status);
    const ok = answer.status >= 200 && answer.status < 300;
    if (member === undefined && !ok) {
      throw new GraphQLError(`data source answered ${answer.status}`, {
        extensions: { status: answer.status },
      });
    }
    const value = mapped(answer.body, mappingPath);
    if (!abstract) return value;
    const typename = member ?? config.default_type_name;
    const tag = (v: unknown): unknown =>
      isPlainObject(v) && typename !== undefined ? { ...v, [TYPENAME]: typename } : v;
    return Array.isArray(value) ? value.map(tag) : tag(value);
  };
}

/** The query sending `info`'s field, with its sub-selection and the fragments it uses. */
function subQuery(info: GraphQLResolveInfo): { query: string; variables: Record<string, unknown> } {
  const first = info.fieldNodes[0];
  if (first === undefined) throw new GraphQLError('no field to send');
  const field: FieldNode = { ...first, alias: undefined };
  const selections = info.fieldNodes.flatMap((n) => n.selectionSet?.selections ?? []);
  const node: FieldNode = {
    ...field,
    ...(selections.length > 0 ? { selectionSet: { kind: Kind.SELECTION_SET, selections } } : {}),
  };
  const used = new Set<string>();
  const vars = new Set<string>();
  const walk = (n: unknown): void => {
    visit(n as FieldNode, {
      FragmentSpread(s) {
        if (used.has(s.name.value)) return;
        used.add(s.name.value);
        const f = info.fragments[s.name.value];
        if (f !== undefined) walk(f);
      },
      Variable(v) {
        vars.add(v.name.value);
      },
    });
  };
  walk(node);
  const defs = (info.operation.variableDefinitions ?? []).filter((d) => vars.has(d.variable.name.value));
  const header = defs.length === 0 ? '' : `(${defs.map((d) => print(d)).join(', ')})`;
  const opType = info.operation.operation === OperationTypeNode.MUTATION ? 'mutation' : 'query';
  const fragments = [...used].map((n) => info.fragments[n]).filter((f) => f !== undefined);
  const query = [`${opType}${header} { ${print(node)} }`, ...fragments.map((f) => print(f))].join('\n');
  const variables: Record<string, unknown> = {};
  for (const v of vars) if (v in info.variableValues) variables[v] = info.variableValues[v];
  return { query, variables };
}

function graphqlResolver(
  config: GraphqlDataSourceConfig,
  mappingPath: string | undefined,
): GraphQLFieldResolver<unknown, EngineContext> {
  const method = config.method ?? 'POST';
  return async (_source, _args, ctx, info) => {
    const { query, variables } = subQuery(info);
    const headers: Record<string, string> = { ...(config.headers ?? {}) };
    let url = config.url;
    let body: string | undefined;
    if (method === 'GET') {
      const u = new URL(url);
      u.searchParams.set('query', query);
      u.searchParams.set('variables', JSON.stringify(variables));
      url = u.toString();
    } else {
      body = JSON.stringify({ query, variables });
      headers['content-type'] = 'application/json';
    }
    let answer: DataSourceAnswer;
    try {
      answer = await call(ctx, { method, url, headers, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      throw new GraphQLError(`data source unreachable: ${err instanceof Error ? err.message : String(err)}`);
    }
    const res = answer.body as
      { data?: Record<string, unknown> | null; errors?: { message?: string }[] } | undefined;
    const first = res?.errors?.[0];
    if (first !== undefined) throw new GraphQLError(first.message ?? 'data source error');
    if (res?.data === undefined || res.data === null) {
      throw new GraphQLError(`data source answered ${answer.status}`, {
        extensions: { status: answer.status },
      });
    }
    return mapped(res.data[info.fieldName], mappingPath);
  };
}

/**
 * Sets the resolvers of `schema` (built for this API alone, from its SDL) from the API's
 * `type_field_configurations`. Abstract types resolve by the `__typename` the data sources set.
 */
export function wireEngine(schema: GraphQLSchema, fields: readonly TypeFieldConfiguration[]): void {
  for (const f of fields) {
    const type = schema.getType(f.type_name);
    if (!(type instanceof GraphQLObjectType)) continue;
    const field = type.getFields()[f.field_name];
    if (field === undefined) continue;
    const path = f.mapping?.disabled === true ? undefined : f.mapping?.path;
    const source = f.data_source;
    if (source === undefined) {
      if (path !== undefined && path !== '') field.resolve = (parent) => mapped(parent, path);
      continue;
    }
    const config = source.data_source_config;
    const named = getNamedType(field.type);
    field.resolve =
      source.kind === 'GraphQLDataSource'
        ? graphqlResolver(config, path)
        : httpJsonResolver(config, path, isAbstractType(named));
  }
  for (const t of Object.values(schema.getTypeMap())) {
    if (isAbstractType(t) && t.resolveType === undefined) {
      t.resolveType = (value) =>
        value !== null && typeof value === 'object'
          ? ((value as Record<string, unknown>)[TYPENAME] as string | undefined)
          : undefined;
    }
  }
}
