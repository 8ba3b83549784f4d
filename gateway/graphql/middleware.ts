/**
 * The GraphQL stage of the chain (routes/chain.ts, after authentication and limits). The API's
 * schema is built once when the route compiles. Each request (POST with a JSON body, or GET with
 * `query`, `variables` and `operationName`) is parsed and validated against it before anything
 * else: an invalid one gets 400 with a GraphQL body (`{"errors":[{"message","locations"}]}`) and
 * never reaches the upstream. Then introspection (when the API disables it), the key's
 * `max_query_depth` (its access right's `limit.max_query_depth` when it has a per-API limit) and
 * its field permissions (`restricted_types`, `allowed_types`) refuse with
 * 403 and a GraphQL error. A `proxyOnly` API then sends the request on to its upstream; an
 * `executionEngine` API executes it (engine.ts), a `supergraph` API plans it across its subgraphs
 * (federation.ts). A WebSocket upgrade (subscriptions, `graphql-transport-ws`) is relayed to the
 * upstream message by message (subscriptions.ts), or answered by the gateway (transport-ws.ts)
 * where it runs them itself: Kafka sources, and a supergraph's subscriptions, forwarded to their
 * subgraphs. Either way each operation sent over it is checked as an HTTP request is
 * (checks.ts `checkOperation`), and a refused one gets an `error` message, never sent on.
 */
import { execute, OperationTypeNode, subscribe, type GraphQLSchema } from 'graphql';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { buildGraphqlSchema } from '../../schemas/rules/graphql-schema.ts';
import { reject, respond } from '../pipeline/compose.ts';
import type { Rejection } from '../pipeline/middleware.ts';
import { around } from '../pipeline/steps.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { MAX_READ_BODY, type RequestContext } from '../pipeline/context.ts';
import { isTargetProblem, parseTarget } from '../../schemas/rules/target.ts';
import type { Target } from '../pipeline/router.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { checkOperation, type CheckedRequest, type Refusal } from './checks.ts';
import { fillTemplate, wireEngine, type EngineContext } from './engine.ts';
import { internalSources, internalUpgrades, type InternalUpgrade } from './internal-sources.ts';
import { Supergraph } from './federation.ts';
import { buildSubgraphSchema, buildSupergraphSchema } from '../../schemas/rules/graphql-federation.ts';
import { isGraphql } from './stage.ts';
import {
  subgraphSdl,
  supergraphSdl,
  supergraphSubgraphs,
  type SupergraphSubgraph,
} from '../../schemas/rules/graphql-supergraph.ts';
import { engineFields, type EngineField, type GraphqlSource } from './sources.ts';
import { offeredProtocols, relayUpgrade, UNCHECKABLE_PROTOCOL } from './subscriptions.ts';
import { kafkaEvents } from './kafka.ts';
import { subscribeOverWs } from './transport-ws-client.ts';
import {
  OperationErrors,
  offersTransportWs,
  serveTransportWs,
  TRANSPORT_WS,
  type OperationOutcome,
  type SubscribePayload,
} from './transport-ws.ts';

/** A GraphQL request as clients send it. */
interface GraphqlParams {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/** A GraphQL-shaped answer (JSON), made by the gateway (`respond`). */
function answer(ctx: RequestContext, status: number, body: unknown): Rejection {
  return respond(ctx, status, JSON.stringify(body), { 'content-type': 'application/json' });
}

/** The request's GraphQL parameters, or the message of why it has none. */
function paramsOf(method: string, query: string, body: Buffer | undefined): GraphqlParams | string {
  let raw: Record<string, unknown>;
  if (method === 'GET') {
    const q = new URLSearchParams(query);
    const vars = q.get('variables');
    let variables: unknown;
    if (vars !== null && vars !== '') {
      try {
        variables = JSON.parse(vars);
      } catch {
        return 'variables is not JSON';
      }
    }
    raw = { query: q.get('query'), variables, operationName: q.get('operationName') ?? undefined };
  } else {
    let parsed: unknown;
    try {
      parsed = JSON.parse((body ?? Buffer.alloc(0)).toString('utf8'));
    } catch {
      return 'the body is not JSON: send {"query": "...", "variables": {...}}';
    }
    if (Array.isArray(parsed)) return 'batched queries are not supported: send one query per request';
    if (parsed === null || typeof parsed !== 'object') return 'the body is not a JSON object';
    raw = parsed as Record<string, unknown>;
  }
  if (typeof raw.query !== 'string' || raw.query === '') return 'the request has no query';
  const variables = raw.variables ?? undefined;
  if (variables !== undefined && (typeof variables !== 'object' || Array.isArray(variables))) {
    return 'variables must be a JSON object';
  }
  const op = raw.operationName;
  return {
    query: raw.query,
    variables: variables as Record<string, unknown> | undefined,
    operationName: typeof op === 'string' && op !== '' ? op : undefined,
  };
}

/** What the middleware compiles once per API. */
interface CompiledGraphql {
  schema: GraphQLSchema;
  engine: boolean;
  /** A supergraph API's planner (federation.ts). */
  supergraph?: Supergraph;
  introspection: boolean;
  /**
   * The engine's subscriptions: the GraphQL source they are relayed to, `own` when the gateway
   * answers them itself (Kafka sources, a supergraph's: transport-ws.ts), or why there are none.
   */
  subscriptions: { target: Target; path: string; source: GraphqlSource } | string;
}

/**
 * The GraphQL source an engine's subscriptions are relayed to: one source serving every field of
 * the Subscription type, each read as the source answers it (the default mapping), over an
 * http(s) URL without templates and a WebSocket protocol (not server-sent events), so the
 * client's messages mean to the source what they mean to the API.
 */
function subscriptionSource(
  schema: GraphQLSchema,
  fields: readonly EngineField[],
): CompiledGraphql['subscriptions'] {
  const type = schema.getSubscriptionType();
  if (type === null || type === undefined) return 'the schema has no subscriptions';
  // Kafka sources are consumed by the gateway: it speaks to the client itself.
  if (fields.some((f) => f.typeName === type.name && f.source?.kind === 'kafka')) return 'own';
  let source: GraphqlSource | undefined;
  for (const name of Object.keys(type.getFields())) {
    const f = fields.find((x) => x.typeName === type.name && x.fieldName === name);
    const s = f?.source;
    if (s?.kind !== 'graphql' || s.operation !== undefined) {
      return `subscription ${name} is not served by a GraphQL data source sending the client's selection`;
    }
    if (f?.path?.length !== 1 || f.path[0] !== name) {
      return `subscription ${name} is mapped: subscriptions are relayed as the source answers them`;
    }
    if (source !== undefined && source !== s) return 'the subscriptions are served by several data sources';
    source = s;
  }
  if (source === undefined) return 'the schema has no subscriptions';
  if (source.subscriptionType === 'sse') return 'subscriptions over server-sent events are not supported yet';
  const t = source.url.includes('{{') ? undefined : parseTarget(source.url);
  if (t === undefined || isTargetProblem(t) || !/^https?:\/\//.test(t.origin)) {
    return 'subscriptions are relayed to a data source with an http(s) URL without templates';
  }
  const u = new URL(source.url);
  return { target: t, path: `${u.pathname}${u.search}`, source };
}

function compile(api: GatewayApiDefinition): CompiledGraphql {
  const g = api.graphql;
  const mode = g?.execution_mode;
  if (g !== undefined && mode === 'subgraph') {
    // A federation subgraph: its SDL with `_service` and `_entities`, proxied to its upstream.
    const built = buildSubgraphSchema(subgraphSdl(g));
    if (typeof built === 'string') throw new Error(`graphql.subgraph.sdl: ${built}`);
    return {
      schema: built,
      engine: false,
      introspection: g.introspection?.disabled !== true,
      subscriptions: '',
    };
  }
  if (g !== undefined && mode === 'supergraph') {
    const built = buildSupergraphSchema(supergraphSdl(g));
    if (typeof built === 'string') throw new Error(`graphql.schema: ${built}`);
    return {
      schema: built,
      engine: false,
      supergraph: new Supergraph(
        built,
        supergraphSubgraphs(g.supergraph),
        (g.supergraph as { disable_query_batching?: unknown } | undefined)?.disable_query_batching !== true,
      ),
      introspection: g.introspection?.disabled !== true,
      subscriptions: 'own',
    };
  }
  const built = buildGraphqlSchema(g?.schema ?? '');
  if (typeof built === 'string') throw new Error(`graphql.schema: ${built}`);
  const engine = mode === 'executionEngine';
  const fields = engine && g !== undefined ? engineFields(g) : [];
  if (engine) wireEngine(built, fields);
  return {
    schema: built,
    engine,
    introspection: g?.introspection?.disabled !== true,
    subscriptions: engine ? subscriptionSource(built, fields) : 'not the execution engine',
  };
}

/** `checkOperation` (checks.ts) of one operation the client of `ctx` sends to the API. */
const check = (
  c: CompiledGraphql,
  ctx: RequestContext,
  query: string,
  operationName: string | undefined,
): CheckedRequest | Refusal => checkOperation(c, ctx.session, ctx.route.id, query, operationName);

/**
 * Runs one operation of a graphql-transport-ws session (transport-ws.ts) of an API whose
 * subscriptions the gateway answers itself: checked as an HTTP request is (validity, then
 * `refused`: depth and field limits), then a supergraph's planned (a subscription forwarded to
 * its subgraph), an engine's subscription run with graphql-js's `subscribe`, anything else
 * executed.
 */
async function runOperation(
  c: CompiledGraphql,
  ctx: RequestContext,
  context: EngineContext,
  payload: SubscribePayload,
  upgrades: (url: string) => InternalUpgrade | string,
): Promise<OperationOutcome> {
  const checked = check(c, ctx, payload.query, payload.operationName);
  if (!('document' in checked)) return { errors: checked.errors };
  if (c.supergraph !== undefined) {
    if (checked.operation.operation !== OperationTypeNode.SUBSCRIPTION)
      return {
        result: await c.supergraph.run(context, checked.document, checked.operation, payload.variables),
      };
    const started = c.supergraph.subscribe(
      context,
      checked.document,
      checked.operation,
      payload.variables,
      (sub, query, variables) => subgraphEvents(sub, query, variables, upgrades),
    );
    return 'errors' in started ? { errors: started.errors.map((e) => e.toJSON()) } : { results: started };
  }
  const args = {
    schema: c.schema,
    document: checked.document,
    contextValue: context,
    variableValues: payload.variables,
    operationName: payload.operationName,
  };
  if (checked.operation.operation !== OperationTypeNode.SUBSCRIPTION) {
    return { result: await execute(args) };
  }
  const results = await subscribe(args);
  if (Symbol.asyncIterator in results) return { results };
  const errors = results.errors ?? [];
  return {
    errors:
      errors.length > 0 ? errors.map((e) => e.toJSON()) : [{ message: 'the subscription did not start' }],
  };
}

/**
 * A subscription's events from a subgraph (federation.ts forwards it): over WebSocket to its URL
 * (http(s) as ws(s)), or through its API's chain for `svc://`, with the subgraph's headers.
 */
function subgraphEvents(
  sub: SupergraphSubgraph,
  query: string,
  variables: Record<string, unknown>,
  upgrades: (url: string) => InternalUpgrade | string,
): AsyncIterableIterator<Record<string, unknown>> {
  const name = `subgraph ${sub.name}`;
  if (/^svc:\/\//i.test(sub.url)) {
    const to = upgrades(sub.url);
    if (typeof to === 'string') throw new OperationErrors([{ message: `${name}: ${to}` }]);
    return subscribeOverWs({
      url: `ws://localhost${to.path}`,
      headers: { ...sub.headers, host: to.host },
      connect: to.connect,
      query,
      variables,
      name,
    });
  }
  return subscribeOverWs({
    url: sub.url.replace(/^http/i, 'ws'),
    headers: sub.headers,
    query,
    variables,
    name,
  });
}

/** See the module comment; the chain lists it through stage.ts, which loads this module. */
export const graphql: GatewayMiddleware = {
  name: 'graphql',
  enabled: isGraphql,
  // Every request's query is read from its body: never the fast path.
  readsBody: isGraphql,
  create(api, deps) {
    const c = compile(api);
    const routes = deps.routes;
    const streams = deps.streams;
    return around(async (ctx, next) => {
      if ((ctx.headers.upgrade ?? '').toLowerCase() === 'websocket') {
        // Subscriptions: the client's connection itself is relayed, on an entrance that hands it
        // over (node:http; the fast path takes no upgrade, nor a route of this middleware).
        const conn = ctx.clientConnection();
        if (conn === undefined) return reject(ctx, GatewayError.bodyTooLarge());
        if (c.subscriptions === 'own') {
          if (!offersTransportWs(ctx)) {
            return answer(ctx, 400, {
              errors: [
                { message: `subscriptions are served over WebSocket with the subprotocol ${TRANSPORT_WS}` },
              ],
            });
          }
          const controller = new AbortController();
          const context: EngineContext = {
            calls: new Map(),
            signal: controller.signal,
            requestHeaders: ctx.headers,
            internal: internalSources(ctx, routes),
            consume: (source, args) => kafkaEvents(streams, source, args),
          };
          const upgrades = internalUpgrades(ctx, routes);
          await serveTransportWs(ctx, conn, (payload) =>
            // Each operation its own loader: a subscription's events are not one request.
            runOperation(c, ctx, { ...context, calls: new Map() }, payload, upgrades),
          );
          controller.abort();
          return undefined;
        }
        // Relayed: each operation the client sends is checked as an HTTP request is.
        const relayed = async (
          target: Target,
          source?: { path: string; headers: Record<string, string> },
        ): Promise<Rejection | undefined> => {
          if (offeredProtocols(ctx).length === 0)
            return answer(ctx, 400, { errors: [{ message: UNCHECKABLE_PROTOCOL }] });
          const refusedUpgrade = await relayUpgrade(
            ctx,
            conn,
            target,
            (query, operationName) => {
              const checked = check(c, ctx, query, operationName);
              return 'document' in checked ? undefined : checked.errors;
            },
            source,
          );
          if (refusedUpgrade === undefined) return undefined;
          return respond(ctx, refusedUpgrade.status, refusedUpgrade.body, {
            'content-type': refusedUpgrade.contentType,
          });
        };
        if (c.engine) {
          const sub = c.subscriptions;
          if (typeof sub === 'string') return answer(ctx, 400, { errors: [{ message: sub }] });
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(sub.source.headers))
            headers[k] = fillTemplate(v, undefined, {}, undefined, ctx.headers);
          return relayed(sub.target, { path: sub.path, headers });
        }
        if (ctx.route.target === undefined) {
          return answer(ctx, 400, {
            errors: [{ message: 'subscriptions are relayed to a proxyOnly upstream only' }],
          });
        }
        return relayed(ctx.route.target);
      }
      if (ctx.method !== 'GET' && ctx.method !== 'POST') {
        ctx.responseHeaders.allow = 'GET, POST';
        return answer(ctx, 405, { errors: [{ message: 'GraphQL requests are sent with GET or POST' }] });
      }
      let body: Buffer | undefined;
      if (ctx.method === 'POST') {
        body = await ctx.readBody(MAX_READ_BODY);
        if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
      }
      const params = paramsOf(ctx.method, ctx.query, body);
      if (typeof params === 'string') {
        return answer(ctx, 400, { errors: [{ message: params }] });
      }
      const checked = check(c, ctx, params.query, params.operationName);
      if (!('document' in checked)) return answer(ctx, checked.status, { errors: checked.errors });
      if (!c.engine && c.supergraph === undefined) {
        await next();
        return undefined;
      }
      if (checked.operation.operation === OperationTypeNode.SUBSCRIPTION) {
        return answer(ctx, 400, {
          errors: [
            {
              message: 'a subscription is sent over WebSocket (graphql-transport-ws), not as an HTTP request',
            },
          ],
        });
      }
      const context: EngineContext = {
        calls: new Map(),
        signal: ctx.signal,
        requestHeaders: ctx.headers,
        internal: internalSources(ctx, routes),
      };
      if (c.supergraph !== undefined) {
        return answer(
          ctx,
          200,
          await c.supergraph.run(context, checked.document, checked.operation, params.variables),
        );
      }
      const result = await execute({
        schema: c.schema,
        document: checked.document,
        contextValue: context,
        variableValues: params.variables,
        operationName: params.operationName,
      });
      return answer(ctx, 200, result);
    });
  },
};
