/**
 * GraphQL of a classic API: a GraphQL proxy, or the execution engine over a universal data
 * graph.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { stringMap, openObject, strings, closedObject, nonEmptyString, objectOf } from '../builders.ts';

const graphqlDataSource: JsonSchema = closedObject(
  {
    title: 'GraphqlDataSource',
    description: 'Where a field of the universal data graph gets its data.',
    required: ['kind', 'data_source_config'],
  },
  {
    kind: {
      type: 'string',
      enum: ['GraphQLDataSource', 'HTTPJSONDataSource'],
      description: 'Kind of the data source.',
    },
    data_source_config: closedObject(
      { title: 'GraphqlDataSourceConfig', description: 'Settings of the data source.', required: ['url'] },
      {
        url: nonEmptyString(
          "URL of the data source. May hold templates over the parent object's fields, such as `{{ .object.id }}`.",
        ),
        method: {
          type: 'string',
          enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
          description: 'HTTP method of the call.',
        },
        body: { type: 'string', description: 'Request body template.' },
        headers: stringMap('Headers of the call.'),
        default_type_name: { type: 'string', description: 'GraphQL type of a successful response.' },
        status_code_type_name_mappings: {
          type: 'array',
          description: 'GraphQL type per response status code.',
          items: closedObject(
            {
              title: 'StatusCodeTypeNameMapping',
              description: 'GraphQL type of a response with this status code.',
              required: ['status_code'],
            },
            {
              status_code: { type: 'integer', minimum: 100, maximum: 599, description: 'HTTP status code.' },
              type_name: { type: 'string', description: 'GraphQL type name.' },
            },
          ),
        },
      },
    ),
  },
);

/** The fields of one type a data source serves (`root_fields`). */
const typeFields: JsonSchema = closedObject(
  {
    title: 'GraphqlRootFields',
    description: 'Fields of one type served by the data source.',
    required: ['type', 'fields'],
  },
  {
    type: nonEmptyString('GraphQL type that holds the fields, such as Query.'),
    fields: { ...strings('Field names.'), minItems: 1 },
  },
);

/**
 * The settings of a version 2 data source. One shape for every kind (the rules check which
 * fields each kind takes): REST takes `url`, `method`, `headers`, `query`, `body`; GraphQL takes
 * `url`, `method`, `headers`, `subscription_type`, `has_operation`, `operation`, `variables`.
 */
const engineDataSourceConfig: JsonSchema = objectOf(
  {
    title: 'GraphqlEngineDataSourceConfig',
    description:
      "Settings of the data source, by kind. REST: `url`, `method`, `headers`, `query`, `body`; GraphQL: `url`, `method`, `headers`, `subscription_type`, `has_operation`, `operation`, `variables`, `default_type_name`; Kafka: `broker_addresses`, `topics`, `group_id`, `client_id`, `kafka_version`, `start_consuming_latest`, `balance_strategy`, `isolation_level`, `sasl`. Templates `{{ .arguments.x }}` (the field's arguments), `{{ .object.x }}` (the parent object's fields) and `{{ .request.headers.x }}` (a header of the client's request) are filled in the URL, query values, headers, body and variables.",
    'x-kubernetes-preserve-unknown-fields': true,
  },
  {
    url: {
      type: 'string',
      description:
        'http(s) URL of the data source, or another API of the gateway (svc://<api>/<path>, called through its chain); may hold templates, such as http://users/{{ .arguments.id }}.',
    },
    method: {
      type: 'string',
      description: 'HTTP method of the call (REST: default GET; GraphQL: POST or GET).',
    },
    headers: stringMap('Headers of the call (values may hold templates); they win over global_headers.'),
    query: {
      type: 'array',
      description: 'REST: query parameters added to the URL (values may hold templates).',
      items: closedObject(
        { title: 'GraphqlEngineQueryVariable', description: 'One query parameter.', required: ['name'] },
        {
          name: nonEmptyString('Parameter name.'),
          value: { type: 'string', description: 'Parameter value (may hold templates).' },
        },
      ),
    },
    body: { type: 'string', description: 'REST: request body template (JSON by default).' },
    subscription_type: {
      type: 'string',
      description:
        'GraphQL: the upstream subscription protocol. Subscriptions the source serves are relayed to it over WebSocket as the client speaks them; `sse` is not supported yet.',
    },
    has_operation: {
      type: 'boolean',
      description: "GraphQL: send `operation` (with `variables`) instead of the client's selection.",
    },
    operation: { type: 'string', description: 'GraphQL: the operation sent when has_operation is true.' },
    variables: {
      ...openObject('GraphQL: variables of `operation`, a JSON object whose strings may hold templates.'),
    },
    default_type_name: {
      type: 'string',
      description:
        'GraphQL: the object type the source answers for its fields (the member of an abstract type an answer without `__typename` is); must be an object type of the schema.',
    },
    broker_addresses: strings(
      'Kafka: addresses (host:port) of the brokers the consumer first connects to; the rest of the cluster is discovered.',
    ),
    topics: strings(
      "Kafka: topics consumed by each subscription (they may hold `{{ .arguments.x }}` templates, filled from the subscription field's arguments).",
    ),
    group_id: {
      type: 'string',
      description:
        'Kafka: consumer group of each subscription: subscriptions (on any gateway) sharing a group share the partitions of its topics, as consumers of one group do.',
    },
    client_id: {
      type: 'string',
      description:
        'Kafka: client ID the consumer gives the brokers (may hold `{{ .arguments.x }}` templates).',
    },
    kafka_version: {
      type: 'string',
      description:
        "Kafka: protocol version the consumer speaks, in the reference's form (`V2_8_0_0`); empty: the stream processor's default (2.1.0).",
    },
    start_consuming_latest: {
      type: 'boolean',
      description:
        'Kafka: a group without committed offsets starts at the newest message (true) or the oldest (false, the default).',
    },
    balance_strategy: {
      type: 'string',
      description:
        'Kafka: how the group assigns partitions. Only `BalanceStrategyRange` (the default) is supported; others are refused.',
    },
    isolation_level: {
      type: 'string',
      description:
        'Kafka: which messages are read. Only `ReadUncommitted` (the default) is supported; `ReadCommitted` is refused.',
    },
    sasl: closedObject(
      {
        title: 'GraphqlKafkaSasl',
        description: 'Kafka: SASL authentication. Not supported yet: `enable: true` is refused.',
      },
      {
        enable: { type: 'boolean', description: 'Authenticate with SASL/PLAIN.' },
        user: { type: 'string', description: 'SASL user.' },
        password: { type: 'string', description: 'SASL password.' },
      },
    ),
  },
);

/** The universal data graph in the reference's version 2 form (`graphql.version: "2"`). */
const graphqlEngine: JsonSchema = closedObject(
  {
    title: 'GraphqlEngineConfig',
    description:
      'The universal data graph in its version 2 form (with `graphql.version: "2"`): data sources serving root fields, and field mappings. Read into the same engine as `type_field_configurations`.',
  },
  {
    field_configs: {
      type: 'array',
      description: 'How fields map onto data source responses.',
      items: closedObject(
        {
          title: 'GraphqlFieldConfig',
          description:
            'Mapping of one field. By default a field reads the key of its own name in the value its data source answered (or its parent object); `path` names another key path; `disable_default_mapping` with an empty path takes the value whole.',
          required: ['type_name', 'field_name'],
        },
        {
          type_name: nonEmptyString('GraphQL type that holds the field.'),
          field_name: nonEmptyString('Field name.'),
          disable_default_mapping: {
            type: 'boolean',
            description: 'Do not read the key named as the field: read `path`, or the value whole.',
          },
          path: strings('Key path of the value in the response, such as [data, items].'),
        },
      ),
    },
    data_sources: {
      type: 'array',
      description: 'Data sources, each serving the fields listed in its `root_fields`.',
      items: closedObject(
        { title: 'GraphqlEngineDataSource', description: 'One data source.', required: ['kind'] },
        {
          kind: {
            type: 'string',
            enum: ['REST', 'GraphQL', 'Kafka'],
            description:
              "Kind of the data source: `REST`, `GraphQL`, or `Kafka` (subscription fields fed by Kafka topics, consumed through the gateway's stream processor).",
          },
          name: { type: 'string', description: 'Name of the data source (for people).' },
          internal: {
            type: 'boolean',
            description:
              'Marks a data source that is another API of the gateway (for people; the URL decides).',
          },
          root_fields: { type: 'array', description: 'Fields the data source serves.', items: typeFields },
          config: engineDataSourceConfig,
        },
      ),
    },
    global_headers: {
      type: 'array',
      description: 'Headers sent to every data source.',
      items: closedObject(
        { title: 'GraphqlEngineGlobalHeader', description: 'One header.' },
        {
          key: { type: 'string', description: 'Header name.' },
          value: { type: 'string', description: 'Header value.' },
        },
      ),
    },
  },
);

/** GraphQL settings of a classic API. */
export const graphql: JsonSchema = closedObject(
  {
    title: 'GraphqlConfig',
    description: 'GraphQL handling: a GraphQL proxy, or the execution engine over a universal data graph.',
    'x-svc-support': 'supported',
    'x-svc-switch': 'enabled',
  },
  {
    enabled: { type: 'boolean', description: 'Enables GraphQL handling.' },
    execution_mode: {
      type: 'string',
      enum: ['', 'proxyOnly', 'executionEngine', 'supergraph', 'subgraph'],
      default: 'proxyOnly',
      description:
        '`proxyOnly` proxies GraphQL to the upstream; `executionEngine` resolves the schema from its data sources (`type_field_configurations`, or `engine` with version 2); `subgraph` serves a federation subgraph (`subgraph.sdl`) from the upstream; `supergraph` plans each query across the subgraphs of `supergraph`.',
    },
    version: {
      type: 'string',
      description:
        'Version of the GraphQL configuration format: "2" reads the data graph from `engine`, anything else from `type_field_configurations`.',
    },
    schema: { type: 'string', description: 'GraphQL schema (SDL) of the API.' },
    playground: closedObject(
      {
        title: 'GraphqlPlayground',
        description:
          'A GraphQL IDE page served by the gateway at `path` under the listen path (no outside hosts); its queries go through the API like any other request.',
      },
      {
        enabled: { type: 'boolean', description: 'Serve the playground.' },
        path: { type: 'string', description: 'Path of the playground, relative to the listen path.' },
      },
    ),
    type_field_configurations: {
      type: 'array',
      description: 'Data source of each field (universal data graph).',
      items: closedObject(
        {
          title: 'TypeFieldConfiguration',
          description: 'Data source and mapping of one field.',
          required: ['type_name', 'field_name'],
        },
        {
          type_name: nonEmptyString('GraphQL type that holds the field.'),
          field_name: nonEmptyString('Field name.'),
          mapping: closedObject(
            { title: 'FieldMapping', description: 'How the response maps onto the field.' },
            {
              disabled: { type: 'boolean', description: 'Use the response as it is.' },
              path: { type: 'string', description: 'Dot path of the value in the response.' },
            },
          ),
          data_source: graphqlDataSource,
        },
      ),
    },
    last_schema_update: {
      type: 'string',
      format: 'date-time',
      description: 'When the schema was last updated from the upstream.',
    },
    engine: graphqlEngine,
    proxy: closedObject(
      {
        title: 'GraphqlProxyConfig',
        description: 'Settings of a proxy-only GraphQL API.',
        'x-svc-support': 'not-supported',
        'x-svc-reason':
          'not built yet: a proxy-only GraphQL API is proxied with the headers of the API (`global_headers`); these extra header maps and proxy features are not applied',
      },
      {
        auth_headers: stringMap('Headers sent to the upstream for introspection.'),
        request_headers: stringMap('Headers added to upstream requests.'),
        use_response_extensions: openObject('Response extensions passed through.'),
        features: openObject('Proxy features.'),
        request_headers_rewrite: openObject('Request header rewrites.'),
      },
    ),
    subgraph: closedObject(
      {
        title: 'GraphqlSubgraphConfig',
        description:
          'Settings of a federation subgraph (`execution_mode: subgraph`): queries are checked against its SDL (with `_service` and `_entities`) and proxied to the upstream.',
      },
      {
        sdl: {
          type: 'string',
          description: 'The subgraph SDL, with the federation directives (`@key`, `@external`, ...).',
        },
      },
    ),
    supergraph: {
      ...openObject(
        'Settings of a federation supergraph (`execution_mode: supergraph`): `subgraphs` (each `url`, `svc://<subgraph api>` or http(s), its `sdl`, `headers` and `subscription_type`, `graphql-transport-ws` or empty), `merged_sdl`, `global_headers`, `disable_query_batching`, `updated_at`. Each query is planned across the subgraphs: root fields from the subgraph owning them, entity fields through `_entities` with its `@key`. A subscription is forwarded over WebSocket (`graphql-transport-ws`) to the subgraph owning its field, and the entity fields of each event resolved the same way.',
      ),
    },
    graph_ref: {
      type: 'string',
      'x-svc-support': 'not-supported',
      'x-svc-reason':
        'needs a client of a GraphQL schema registry, which svc does not have: set the schema itself in `graphql.schema`',
      description: 'Reference to the graph in a schema registry.',
    },
    introspection: closedObject(
      { title: 'GraphqlIntrospectionConfig', description: 'Introspection queries.' },
      { disabled: { type: 'boolean', description: 'Refuse introspection queries.' } },
    ),
  },
);
