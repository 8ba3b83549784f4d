/**
 * Rules of an API's GraphQL settings, written once for the webhooks and the gateway: the schema
 * (SDL) must parse and build, with the line and column of the first problem; both modes need a
 * schema (a proxyOnly API checks queries against it, and svc does not fetch it by introspection);
 * `type_field_configurations` name a known data source kind, an http(s) URL (or a template of
 * one), and a type and field the schema has. The version 2 form (`graphql.version: "2"`,
 * `graphql.engine`) the same: REST and GraphQL sources with the settings of their kind, root fields
 * the schema has (each served by one source), templates over arguments and the parent object only;
 * Kafka sources (kafka-source rules below: subscription fields only, the settings the stream processor
 * can honour, the others refused by name). The form `version` does not name must be empty. Federation
 * (`subgraph`, `supergraph`): graphql-federation.ts.
 */
import { isObjectType, type GraphQLSchema } from 'graphql';
import type {
  GraphqlConfig,
  GraphqlDataSource,
  GraphqlDataSourceConfig,
  GraphqlEngineConfig,
  GraphqlEngineDataSource,
  GraphqlEngineDataSourceConfig,
  GraphqlFieldConfig,
  GraphqlRootFields,
  TypeFieldConfiguration,
} from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { federationProblems } from './graphql-supergraph.ts';
import { buildGraphqlSchema, parseGraphql } from './graphql-schema.ts';
import { isInternalUrl, parseInternalTarget } from './internal-target.ts';
import { isTargetProblem } from './target.ts';
import { hasContent, isTrue, list, model, problem, text, type Unchecked } from './read.ts';

/** The data source kinds the execution engine knows. */
export const DATA_SOURCE_KINDS = ['GraphQLDataSource', 'HTTPJSONDataSource'];

/** The settings each version 2 data source kind takes. */
const V2_CONFIG_FIELDS: Record<string, readonly string[]> = {
  REST: ['url', 'method', 'headers', 'query', 'body'],
  GraphQL: [
    'url',
    'method',
    'headers',
    'subscription_type',
    'has_operation',
    'operation',
    'variables',
    'default_type_name',
  ],
};

/** The methods each version 2 data source kind calls with. */
const V2_METHODS: Record<string, readonly string[]> = {
  REST: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  GraphQL: ['GET', 'POST'],
};

/** The upstream subscription protocols the reference names. */
const SUBSCRIPTION_TYPES = ['', 'graphql-ws', 'graphql-transport-ws', 'sse'];

/** Every problem of `graphql` (paths relative to the API definition). */
export function graphqlProblems(graphql: Unchecked<GraphqlConfig> | undefined): FieldProblem[] {
  if (graphql === undefined) return [];
  const problems: FieldProblem[] = [];
  const on = isTrue(graphql.enabled);
  const mode = text(graphql.execution_mode) ?? 'proxyOnly';
  const federated = mode === 'supergraph' || mode === 'subgraph';
  if (on && federated) problems.push(...federationProblems(mode, graphql));
  const sdl = text(graphql.schema) ?? '';
  let schema: GraphQLSchema | undefined;
  if (federated) {
    // Its SDL holds the federation directives: read by graphql-federation.ts.
  } else if (sdl !== '') {
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
  problems.push(
    ...versionProblems(graphql),
    ...engineProblems(model<GraphqlEngineConfig>(graphql.engine), schema),
  );
  return problems;
}

/** Whether a version 2 engine config says anything (an empty one is what exports carry). */
function engineHasContent(engine: Unchecked<GraphqlEngineConfig> | undefined): boolean {
  return (
    list(engine?.data_sources).length > 0 ||
    list(engine?.field_configs).length > 0 ||
    list(engine?.global_headers).length > 0
  );
}

/** The form read is the one `version` names: the other one, written too, would be ignored. */
function versionProblems(graphql: Unchecked<GraphqlConfig>): FieldProblem[] {
  const v2 = text(graphql.version) === '2';
  if (!v2 && engineHasContent(model<GraphqlEngineConfig>(graphql.engine))) {
    return [
      problem(
        'graphql.engine',
        'Invalid',
        'the version 2 data graph is read when graphql.version is "2": set graphql.version to "2", or write the graph in graphql.type_field_configurations',
      ),
    ];
  }
  if (v2 && list(graphql.type_field_configurations).length > 0) {
    return [
      problem(
        'graphql.type_field_configurations',
        'Invalid',
        'with graphql.version "2" the data graph is read from graphql.engine: move these fields to engine.data_sources and engine.field_configs, or remove graphql.version',
      ),
    ];
  }
  return [];
}

/** A type and field of the schema, or the problem at `at`. */
function fieldProblem(
  schema: GraphQLSchema | undefined,
  typeName: string | undefined,
  fieldName: string | undefined,
  typeAt: string,
  fieldAt: string,
): FieldProblem | undefined {
  if (schema === undefined || typeName === undefined || fieldName === undefined) return undefined;
  const type = schema.getType(typeName);
  if (!isObjectType(type)) {
    return problem(typeAt, 'Invalid', `${quote(typeName)} is not an object type of graphql.schema`);
  }
  if (type.getFields()[fieldName] === undefined) {
    return problem(
      fieldAt,
      'Invalid',
      `${quote(typeName)} has no field ${quote(fieldName)} in graphql.schema`,
    );
  }
  return undefined;
}

/** Every problem of the version 2 `engine`. */
function engineProblems(
  engine: Unchecked<GraphqlEngineConfig> | undefined,
  schema: GraphQLSchema | undefined,
): FieldProblem[] {
  if (engine === undefined) return [];
  const problems: FieldProblem[] = [];
  list(engine.field_configs).forEach((f, i) => {
    const at = `graphql.engine.field_configs[${i}]`;
    const fc = model<GraphqlFieldConfig>(f);
    const p = fieldProblem(
      schema,
      text(fc?.type_name),
      text(fc?.field_name),
      `${at}.type_name`,
      `${at}.field_name`,
    );
    if (p !== undefined) problems.push(p);
  });
  const servedBy = new Map<string, number>();
  list(engine.data_sources).forEach((d, i) => {
    const at = `graphql.engine.data_sources[${i}]`;
    const ds = model<GraphqlEngineDataSource>(d);
    if (ds === undefined) return;
    const kind = text(ds.kind);
    if (kind === 'Kafka') {
      problems.push(...kafkaSourceProblems(ds, schema, at));
      list(ds.root_fields).forEach((r, j) => {
        const rf = model<GraphqlRootFields>(r);
        list(rf?.fields).forEach((f, k) => {
          const key = `${text(rf?.type) ?? ''}.${text(f) ?? ''}`;
          const earlier = servedBy.get(key);
          if (earlier === undefined) servedBy.set(key, i);
          else
            problems.push(
              problem(
                `${at}.root_fields[${j}].fields[${k}]`,
                'Invalid',
                `${key} is already served by graphql.engine.data_sources[${earlier}]: list each field in one data source`,
              ),
            );
        });
      });
      return;
    }
    list(ds.root_fields).forEach((r, j) => {
      const rf = model<GraphqlRootFields>(r);
      const typeName = text(rf?.type);
      list(rf?.fields).forEach((f, k) => {
        const fieldName = text(f);
        const fieldAt = `${at}.root_fields[${j}].fields[${k}]`;
        const p = fieldProblem(schema, typeName, fieldName, `${at}.root_fields[${j}].type`, fieldAt);
        if (p !== undefined) {
          problems.push(p);
          return;
        }
        if (typeName === undefined || fieldName === undefined) return;
        const key = `${typeName}.${fieldName}`;
        const earlier = servedBy.get(key);
        if (earlier !== undefined) {
          problems.push(
            problem(
              fieldAt,
              'Invalid',
              `${key} is already served by graphql.engine.data_sources[${earlier}]: list each field in one data source`,
            ),
          );
        } else servedBy.set(key, i);
      });
    });
    if (kind === undefined || V2_CONFIG_FIELDS[kind] === undefined) return;
    problems.push(...sourceConfigProblems(kind, ds.config, `${at}.config`, schema));
  });
  return problems;
}

/**
 * The settings of a `kind` data source's `config` (at `at`) that are not among the `known` ones it
 * takes. A neutral value sets nothing (the reference's samples write `body: ""` on GraphQL sources).
 */
function foreignSettings(config: object, kind: string, known: readonly string[], at: string): FieldProblem[] {
  return Object.entries(config)
    .filter(([key, value]) => !known.includes(key) && hasContent(value))
    .map(([key]) =>
      problem(
        `${at}.${key}`,
        'Forbidden',
        `not a setting of a ${kind} data source: it takes ${known.join(', ')}`,
      ),
    );
}

/** The problems of one REST or GraphQL source's `config`. */
function sourceConfigProblems(
  kind: string,
  raw: unknown,
  at: string,
  schema: GraphQLSchema | undefined,
): FieldProblem[] {
  const config = model<GraphqlEngineDataSourceConfig>(raw);
  if (config === undefined) {
    return [problem(at, 'Required', `a ${kind} data source needs its config, with the url it calls`)];
  }
  const problems = foreignSettings(config, kind, V2_CONFIG_FIELDS[kind] ?? [], at);
  const url = text(config.url) ?? '';
  if (url === '') {
    problems.push(problem(`${at}.url`, 'Required', 'set the http(s) URL the data source calls'));
  } else {
    const p = templatedUrlProblem(url) ?? templateProblem(url);
    if (p !== undefined) problems.push(problem(`${at}.url`, 'Invalid', p));
  }
  const method = text(config.method) ?? '';
  const methods = V2_METHODS[kind] ?? [];
  if (method !== '' && !methods.includes(method.toUpperCase())) {
    problems.push(
      problem(
        `${at}.method`,
        'NotSupported',
        `${quote(method)}: a ${kind} data source calls with ${methods.join(', ')}`,
      ),
    );
  }
  for (const [name, value] of Object.entries(model<Record<string, string>>(config.headers) ?? {})) {
    const p = typeof value === 'string' ? templateProblem(value) : undefined;
    if (p !== undefined) problems.push(problem(`${at}.headers.${name}`, 'Invalid', p));
  }
  list(config.query).forEach((q, i) => {
    const value = text(model<{ value: string }>(q)?.value);
    const p = value === undefined ? undefined : templateProblem(value);
    if (p !== undefined) problems.push(problem(`${at}.query[${i}].value`, 'Invalid', p));
  });
  const body = text(config.body);
  const bodyProblem = body === undefined ? undefined : templateProblem(body);
  if (bodyProblem !== undefined) problems.push(problem(`${at}.body`, 'Invalid', bodyProblem));
  const sub = text(config.subscription_type);
  if (sub !== undefined && !SUBSCRIPTION_TYPES.includes(sub)) {
    problems.push(
      problem(
        `${at}.subscription_type`,
        'NotSupported',
        `${quote(sub)}: use ${SUBSCRIPTION_TYPES.filter((t) => t !== '').join(', ')}, or leave it empty`,
      ),
    );
  }
  const typeName = text(config.default_type_name) ?? '';
  if (typeName !== '' && schema !== undefined && !isObjectType(schema.getType(typeName))) {
    problems.push(
      problem(
        `${at}.default_type_name`,
        'Invalid',
        `${quote(typeName)} is not an object type of graphql.schema: name the type the source answers`,
      ),
    );
  }
  if (isTrue(config.has_operation)) {
    const op = text(config.operation) ?? '';
    if (op === '') {
      problems.push(
        problem(`${at}.operation`, 'Required', 'has_operation is true: write the operation sent'),
      );
    } else {
      const parsed = parseGraphql(op);
      if (typeof parsed === 'string') {
        problems.push(problem(`${at}.operation`, 'Invalid', `the operation does not parse: ${parsed}`));
      }
    }
  }
  return problems;
}

/**
 * Templates of the engine fill the field's arguments, its parent object's fields and the client
 * request's headers (`{{ .arguments.id }}`, `{{ .object.id }}`, `{{ .request.headers.x-key }}`);
 * any other template would be sent as written.
 */
function templateProblem(value: string): string | undefined {
  for (const m of value.matchAll(/\{\{[^{}]*\}\}/g)) {
    if (!TEMPLATE_FORM.test(m[0])) {
      return `${quote(m[0])}: templates fill the field's arguments, its parent object's fields or the request's headers, such as {{ .arguments.id }}, {{ .object.id }} or {{ .request.headers.authorization }}`;
    }
  }
  return undefined;
}

const TEMPLATE_FORM =
  /^\{\{\s*\.?(?:(object|arguments)(\.[A-Za-z_][A-Za-z0-9_]*)+|request\.headers\.[A-Za-z0-9_-]+)\s*\}\}$/;

/**
 * A data source URL may hold `{{ .object.id }}` templates; everything else must be an http(s) URL,
 * or another API of the gateway (`svc://<api>/<path>`, called through its chain).
 */
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
  if (parsed.protocol === 'tyk:') {
    return `${quote(url)}: another API of the gateway is written svc://<api>/<path> here (tyk:// is the reference gateway's spelling)`;
  }
  if (isInternalUrl(filled)) {
    const t = parseInternalTarget(filled);
    return isTargetProblem(t) ? `${quote(url)}: ${t.message}` : undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `${quote(url)} has the scheme ${quote(parsed.protocol.slice(0, -1))}: data sources are called over http or https`;
  }
  return undefined;
}

/** The settings a Kafka data source takes. */
const KAFKA_FIELDS = [
  'broker_addresses',
  'topics',
  'group_id',
  'client_id',
  'kafka_version',
  'start_consuming_latest',
  'balance_strategy',
  'isolation_level',
  'sasl',
];

/** The reference's Kafka protocol versions (`V2_8_0_0`), as the stream processor's consumer reads them. */
export const KAFKA_VERSION = /^V(\d+)_(\d+)_(\d+)_(\d+)$/;

/** A Kafka template fills the subscription field's arguments only (a root field has no parent). */
const KAFKA_TEMPLATE = /^\{\{\s*\.?arguments(\.[A-Za-z_][A-Za-z0-9_]*)+\s*\}\}$/;

function kafkaTemplateProblem(value: string): string | undefined {
  for (const m of value.matchAll(/\{\{[^{}]*\}\}/g)) {
    if (!KAFKA_TEMPLATE.test(m[0])) {
      return `${quote(m[0])}: a Kafka source fills the subscription field's arguments only, such as {{ .arguments.name }}`;
    }
  }
  const filled = value.replace(/\{\{[^{}]*\}\}/g, 'x');
  if (filled.includes('{{') || filled.includes('}}')) {
    return `${quote(value)} has an unbalanced template: close each {{ with }}, such as {{ .arguments.name }}`;
  }
  return undefined;
}

/**
 * A Kafka data source (`kind: Kafka`): it feeds subscription fields, one consumer of its group per
 * subscription, through the gateway's stream processor (Bento's `kafka` input). What that consumer
 * cannot do is refused by name: SASL, a balance strategy other than range, read-committed isolation.
 */
function kafkaSourceProblems(
  ds: Unchecked<GraphqlEngineDataSource>,
  schema: GraphQLSchema | undefined,
  at: string,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const subscription = schema?.getSubscriptionType()?.name ?? 'Subscription';
  list(ds.root_fields).forEach((r, j) => {
    const rf = model<GraphqlRootFields>(r);
    const typeName = text(rf?.type);
    if (typeName !== undefined && typeName !== subscription) {
      problems.push(
        problem(
          `${at}.root_fields[${j}].type`,
          'Invalid',
          `${quote(typeName)}: a Kafka data source feeds subscription fields: list fields of ${subscription}`,
        ),
      );
      return;
    }
    list(rf?.fields).forEach((f, k) => {
      const p = fieldProblem(
        schema,
        typeName,
        text(f),
        `${at}.root_fields[${j}].type`,
        `${at}.root_fields[${j}].fields[${k}]`,
      );
      if (p !== undefined) problems.push(p);
    });
  });
  const config = model<GraphqlEngineDataSourceConfig>(ds.config);
  const c = `${at}.config`;
  if (config === undefined) {
    return [
      ...problems,
      problem(c, 'Required', 'a Kafka data source needs its config: broker_addresses, topics, group_id'),
    ];
  }
  problems.push(...foreignSettings(config, 'Kafka', KAFKA_FIELDS, c));
  const brokers = list(config.broker_addresses);
  if (brokers.length === 0) {
    problems.push(
      problem(`${c}.broker_addresses`, 'Required', 'list the brokers (host:port) the consumer connects to'),
    );
  }
  brokers.forEach((b, i) => {
    const addr = text(b) ?? '';
    if (!/^[^\s:/{}]+:\d{1,5}$/.test(addr) && !/^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(addr)) {
      problems.push(
        problem(
          `${c}.broker_addresses[${i}]`,
          'Invalid',
          `${quote(addr)}: write a broker as host:port, such as kafka.default.svc:9092`,
        ),
      );
    }
  });
  const topics = list(config.topics);
  if (topics.length === 0) {
    problems.push(problem(`${c}.topics`, 'Required', 'list the topics each subscription consumes'));
  }
  topics.forEach((t, i) => {
    const topic = text(t) ?? '';
    const p =
      topic === ''
        ? 'a topic cannot be empty'
        : (kafkaTemplateProblem(topic) ??
          (/[\s,]/.test(topic.replace(/\{\{[^{}]*\}\}/g, 'x'))
            ? `${quote(topic)}: one topic per entry, without spaces or commas`
            : undefined));
    if (p !== undefined) problems.push(problem(`${c}.topics[${i}]`, 'Invalid', p));
  });
  if ((text(config.group_id) ?? '') === '') {
    problems.push(
      problem(
        `${c}.group_id`,
        'Required',
        'name the consumer group: subscriptions sharing a group share the partitions of its topics',
      ),
    );
  } else if ((text(config.group_id) ?? '').includes('{{')) {
    problems.push(
      problem(`${c}.group_id`, 'Invalid', 'the consumer group is written as it is, without templates'),
    );
  }
  const client = text(config.client_id) ?? '';
  const clientProblem = client === '' ? undefined : kafkaTemplateProblem(client);
  if (clientProblem !== undefined) problems.push(problem(`${c}.client_id`, 'Invalid', clientProblem));
  const version = text(config.kafka_version) ?? '';
  if (version !== '' && !KAFKA_VERSION.test(version)) {
    problems.push(
      problem(
        `${c}.kafka_version`,
        'Invalid',
        `${quote(version)}: write the protocol version as the reference does, such as V2_8_0_0, or leave it empty`,
      ),
    );
  }
  const balance = text(config.balance_strategy) ?? '';
  if (balance !== '' && balance !== 'BalanceStrategyRange') {
    problems.push(
      problem(
        `${c}.balance_strategy`,
        'NotSupported',
        `${quote(balance)}: the gateway's Kafka consumer assigns partitions by range only: use BalanceStrategyRange, or leave it empty`,
      ),
    );
  }
  const isolation = text(config.isolation_level) ?? '';
  if (isolation !== '' && isolation !== 'ReadUncommitted') {
    problems.push(
      problem(
        `${c}.isolation_level`,
        'NotSupported',
        `${quote(isolation)}: the gateway's Kafka consumer reads uncommitted only: use ReadUncommitted, or leave it empty`,
      ),
    );
  }
  if (isTrue(model<{ enable?: boolean }>(config.sasl)?.enable)) {
    problems.push(
      problem(
        `${c}.sasl.enable`,
        'NotSupported',
        'SASL is not supported yet by the Kafka data source: reach the brokers without SASL, or set enable to false',
      ),
    );
  }
  return problems;
}
