/**
 * The execution engine (universal data graph): the gateway answers queries itself with
 * graphql-js's executor over the API's schema; each field of the graph (sources.ts: one model read
 * from `type_field_configurations` or from the version 2 `engine`) resolves through its source:
 * - REST (`HTTPJSONDataSource`, `REST`): an HTTP call whose URL, query parameters, body and
 *   headers are templates over the parent object's fields and the field's arguments
 *   (`{{ .object.id }}`, `{{ .arguments.id }}`); a union or interface member is chosen by status
 *   code (`status_code_type_name_mappings`, else `default_type_name`) or the `__typename` the
 *   answer carries;
 * - GraphQL (`GraphQLDataSource`, `GraphQL`): the field with its sub-selection, sent as a GraphQL
 *   query (with the variables it uses) to another GraphQL server, or a fixed operation with its
 *   templated variables; the selection is rewritten for the source (source-query.ts: fields
 *   other sources serve left out, the fields their templates read added, aliases read back);
 * - Kafka (`Kafka`): a subscription field whose events are the messages of topics (kafka.ts),
 *   each message the source's answer for one event.
 * The field's key path selects its value in the answer (a GraphQL answer's `data`). graphql-js
 * resolves the fields of one level concurrently; identical calls in one request are made once (a
 * per-request loader). A failed call becomes a GraphQL error with the field's path, never a 500.
 */
import {
  defaultFieldResolver,
  GraphQLError,
  GraphQLObjectType,
  getNamedType,
  isAbstractType,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { DataSourceAnswer, InternalSource } from './internal-sources.ts';
import { answered, readAnswer, sourceQuery, type Graph } from './source-query.ts';
import type { EngineField, GraphqlSource, KafkaSource, RestSource } from './sources.ts';

/** What resolvers share in one request. */
export interface EngineContext {
  /** Calls made in this request, by method, URL, body and headers (the loader). */
  calls: Map<string, Promise<DataSourceAnswer>>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** The client request's headers (`{{ .request.headers.x }}`). */
  requestHeaders: RequestHeaders;
  /**
   * A call to another API of the gateway (`svc://<api>/<path>`, internal-sources.ts): how it is
   * sent, or why it can't be.
   */
  internal: (url: string) => InternalSource;
  /**
   * The events of a subscription to a field a Kafka source feeds (kafka.ts), one value per
   * message; absent where subscriptions are not served (an HTTP request).
   */
  consume?:
    ((source: KafkaSource, args: Record<string, unknown>) => Promise<AsyncIterable<unknown>>) | undefined;
}

/** The key each value of an abstract type carries to name its member (`__typename`). */
const TYPENAME = '__typename';

const TEMPLATE =
  /\{\{\s*\.?(?:(object|arguments)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)|request\.headers\.([A-Za-z0-9_-]+))\s*\}\}/g;
const WHOLE_TEMPLATE = /^\{\{\s*\.?(object|arguments)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\}\}$/;

function pick(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/** The client request's headers, by lower-case name (`{{ .request.headers.x }}`). */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Fills `{{ .object.x }}`, `{{ .arguments.y }}` and `{{ .request.headers.z }}` (`encode` for
 * URLs) in one pass, so a filled value is never read as a template itself.
 */
export function fillTemplate(
  template: string,
  object: unknown,
  args: Record<string, unknown>,
  encode: (s: string) => string = (s) => s,
  headers: RequestHeaders = {},
): string {
  return template.replace(
    TEMPLATE,
    (_all, root: string, rest: string | undefined, header: string | undefined) => {
      let v: unknown;
      if (header !== undefined) {
        const h = headers[header.toLowerCase()];
        v = Array.isArray(h) ? h.join(', ') : h;
      } else v = pick(root === 'object' ? object : args, (rest ?? '').slice(1).split('.'));
      if (v === undefined || v === null) return '';
      return encode(typeof v === 'string' ? v : JSON.stringify(v));
    },
  );
}

/** The value at a key path (`[data, items]`), or the whole value. */
function mapped(value: unknown, path: readonly string[] | undefined): unknown {
  if (path === undefined || path.length === 0) return value;
  return pick(value, path);
}

/** One call of a data source. */
export interface SourceRequest {
  method: string;
  url: string;
  body?: string;
  headers: Record<string, string>;
}

/** Makes a call once per request (`ctx.calls`): over HTTP, or through `internal` (an API of the gateway). */
async function call(
  ctx: EngineContext,
  req: SourceRequest,
  internal?: Exclude<InternalSource, string>,
): Promise<DataSourceAnswer> {
  const key = JSON.stringify([req.method, req.url, req.body ?? null, req.headers]);
  let answer = ctx.calls.get(key);
  if (answer === undefined) {
    answer = (async () => {
      if (internal !== undefined) return internal(req);
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

/** The headers of a call, each value's templates filled. */
function filledHeaders(
  headers: Readonly<Record<string, string>>,
  object: unknown,
  args: Record<string, unknown>,
  request: RequestHeaders,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = fillTemplate(v, object, args, undefined, request);
  return out;
}

const hasHeader = (headers: Record<string, string>, name: string): boolean =>
  Object.keys(headers).some((k) => k.toLowerCase() === name);

/** Calls a data source (over HTTP, or another API of the gateway for `svc://`); errors become GraphQL errors. */
export async function callSource(ctx: EngineContext, req: SourceRequest): Promise<DataSourceAnswer> {
  const internal = /^svc:\/\//i.test(req.url) ? ctx.internal(req.url) : undefined;
  if (typeof internal === 'string') throw new GraphQLError(internal);
  try {
    return await call(ctx, req, internal);
  } catch (err) {
    throw new GraphQLError(`data source unreachable: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function restResolver(
  source: RestSource,
  path: readonly string[] | undefined,
  abstract: boolean,
): GraphQLFieldResolver<unknown, EngineContext> {
  return async (parent, rawArgs, ctx) => {
    const args = rawArgs as Record<string, unknown>;
    const req = ctx.requestHeaders;
    const headers = filledHeaders(source.headers, parent, args, req);
    const body =
      source.body === undefined ? undefined : fillTemplate(source.body, parent, args, undefined, req);
    if (body !== undefined && !hasHeader(headers, 'content-type'))
      headers['content-type'] = 'application/json';
    let url = fillTemplate(source.url, parent, args, encodeURIComponent, req);
    if (source.query.length > 0) {
      const u = new URL(url);
      for (const q of source.query)
        u.searchParams.append(q.name, fillTemplate(q.value, parent, args, undefined, req));
      url = u.toString();
    }
    const answer = await callSource(ctx, {
      method: source.method,
      url,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const member = source.typeByStatus.get(answer.status);
    const ok = answer.status >= 200 && answer.status < 300;
    if (member === undefined && !ok) {
      throw new GraphQLError(`data source answered ${answer.status}`, {
        extensions: { status: answer.status },
      });
    }
    const value = mapped(answer.body, path);
    if (!abstract) return value;
    const typename = member ?? source.defaultTypeName;
    const tag = (v: unknown): unknown =>
      isPlainObject(v) && typename !== undefined ? { ...v, [TYPENAME]: typename } : v;
    return Array.isArray(value) ? value.map(tag) : tag(value);
  };
}

/**
 * The variables of a fixed operation, each string's templates filled; a string that is one
 * template alone takes the value as it is (a number stays a number).
 */
function filledVariables(
  v: unknown,
  object: unknown,
  args: Record<string, unknown>,
  request: RequestHeaders,
): unknown {
  if (typeof v === 'string') {
    const whole = WHOLE_TEMPLATE.exec(v);
    if (whole !== null) {
      return pick(whole[1] === 'object' ? object : args, (whole[2] ?? '').slice(1).split('.')) ?? null;
    }
    return fillTemplate(v, object, args, undefined, request);
  }
  if (Array.isArray(v)) return v.map((x) => filledVariables(x, object, args, request));
  if (isPlainObject(v)) {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, filledVariables(x, object, args, request)]),
    );
  }
  return v;
}

function graphqlResolver(
  source: GraphqlSource,
  path: readonly string[] | undefined,
  graph: Graph,
): GraphQLFieldResolver<unknown, EngineContext> {
  return async (parent, rawArgs, ctx, info) => {
    // A field of an object this source answered was asked along with it.
    const own = answered(parent);
    if (own?.source === source) return own.values[info.path.key];
    const args = rawArgs as Record<string, unknown>;
    const { query, variables, plan } =
      source.operation === undefined
        ? sourceQuery(info, graph, source)
        : {
            query: source.operation.query,
            variables: filledVariables(
              source.operation.variables,
              parent,
              args,
              ctx.requestHeaders,
            ) as Record<string, unknown>,
            plan: undefined,
          };
    const headers = filledHeaders(source.headers, parent, args, ctx.requestHeaders);
    let url = source.url;
    let body: string | undefined;
    if (source.method === 'GET') {
      const u = new URL(url);
      u.searchParams.set('query', query);
      u.searchParams.set('variables', JSON.stringify(variables));
      url = u.toString();
    } else {
      body = JSON.stringify({ query, variables });
      headers['content-type'] = 'application/json';
    }
    const answer = await callSource(ctx, {
      method: source.method,
      url,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const res = answer.body as
      { data?: Record<string, unknown> | null; errors?: { message?: string }[] } | undefined;
    const first = res?.errors?.[0];
    if (first !== undefined) throw new GraphQLError(first.message ?? 'data source error');
    if (res?.data === undefined || res.data === null) {
      throw new GraphQLError(`data source answered ${answer.status}`, {
        extensions: { status: answer.status },
      });
    }
    if (plan === undefined) return mapped(res.data, path);
    const data = { ...res.data, [info.fieldName]: readAnswer(res.data[info.fieldName], plan, source) };
    return mapped(data, path);
  };
}

/** A resolver whose values without `__typename` are tagged as `typename` (v2 `default_type_name`). */
function typed(
  resolve: GraphQLFieldResolver<unknown, EngineContext>,
  typename: string | undefined,
): GraphQLFieldResolver<unknown, EngineContext> {
  if (typename === undefined) return resolve;
  const tag = (v: unknown): unknown =>
    isPlainObject(v) && v[TYPENAME] === undefined ? { ...v, [TYPENAME]: typename } : v;
  return async (parent, args, ctx, info) => {
    const value: unknown = await resolve(parent, args, ctx, info);
    return Array.isArray(value) ? value.map(tag) : tag(value);
  };
}

/**
 * Sets the resolvers of `schema` (built for this API alone, from its SDL) from the API's data
 * graph (sources.ts reads either form into `fields`). Abstract types resolve by the `__typename`
 * the data sources set.
 */
export function wireEngine(schema: GraphQLSchema, fields: readonly EngineField[]): void {
  const graph: Graph = { schema, fields: new Map(fields.map((f) => [`${f.typeName}.${f.fieldName}`, f])) };
  for (const f of fields) {
    const type = schema.getType(f.typeName);
    if (!(type instanceof GraphQLObjectType)) continue;
    const field = type.getFields()[f.fieldName];
    if (field === undefined) continue;
    const path = f.path;
    const source = f.source;
    if (source === undefined) {
      if (path !== undefined && path.length > 0) {
        // A GraphQL source was asked for the path's first key under the client's response key.
        field.resolve = (parent, _args, _ctx, info) => {
          const a = answered(parent);
          return a === undefined ? mapped(parent, path) : pick(a.values[info.path.key], path.slice(1));
        };
      }
      continue;
    }
    const abstract = isAbstractType(getNamedType(field.type));
    if (source.kind === 'kafka') {
      field.subscribe = async (_parent, args, ctx: EngineContext) => {
        if (ctx.consume === undefined)
          throw new GraphQLError('a subscription is sent over WebSocket (graphql-transport-ws)');
        return ctx.consume(source, args as Record<string, unknown>);
      };
      // Each message is the source's answer for one event (the subscription's root value).
      field.resolve = (event: unknown) => {
        if (event instanceof GraphQLError) throw event;
        return mapped(event, path);
      };
      continue;
    }
    field.resolve =
      source.kind === 'graphql'
        ? typed(graphqlResolver(source, path, graph), abstract ? source.defaultTypeName : undefined)
        : restResolver(source, path, abstract);
  }
  // Every other field reads its parent: an object a GraphQL source answered by the response key.
  for (const t of Object.values(schema.getTypeMap())) {
    if (!(t instanceof GraphQLObjectType) || t.name.startsWith('__')) continue;
    for (const field of Object.values(t.getFields())) {
      if (field.resolve !== undefined) continue;
      field.resolve = (parent, args, ctx, info) => {
        const a = answered(parent);
        return a === undefined ? defaultFieldResolver(parent, args, ctx, info) : a.values[info.path.key];
      };
    }
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
