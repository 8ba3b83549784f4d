/**
 * GraphQL of a classic API: a GraphQL proxy, or the execution engine over a universal data
 * graph.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { stringMap, openObject } from './builders.ts';

const graphqlDataSource: JsonSchema = {
  title: 'GraphqlDataSource',
  description: 'Where a field of the universal data graph gets its data.',
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'data_source_config'],
  properties: {
    kind: {
      type: 'string',
      enum: ['GraphQLDataSource', 'HTTPJSONDataSource'],
      description: 'Kind of the data source.',
    },
    data_source_config: {
      title: 'GraphqlDataSourceConfig',
      description: 'Settings of the data source.',
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: {
          type: 'string',
          minLength: 1,
          description:
            "URL of the data source. May hold templates over the parent object's fields, such as `{{ .object.id }}`.",
        },
        method: {
          type: 'string',
          enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
          description: 'HTTP method of the call.',
        },
        body: { type: 'string', description: 'Request body template.' },
        headers: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description: 'Headers of the call.',
        },
        default_type_name: { type: 'string', description: 'GraphQL type of a successful response.' },
        status_code_type_name_mappings: {
          type: 'array',
          description: 'GraphQL type per response status code.',
          items: {
            title: 'StatusCodeTypeNameMapping',
            description: 'GraphQL type of a response with this status code.',
            type: 'object',
            additionalProperties: false,
            required: ['status_code'],
            properties: {
              status_code: { type: 'integer', minimum: 100, maximum: 599, description: 'HTTP status code.' },
              type_name: { type: 'string', description: 'GraphQL type name.' },
            },
          },
        },
      },
    },
  },
};

/** GraphQL settings of a classic API. */
export const graphql: JsonSchema = {
  title: 'GraphqlConfig',
  description: 'GraphQL handling: a GraphQL proxy, or the execution engine over a universal data graph.',
  type: 'object',
  additionalProperties: false,
  'x-svc-support': 'supported',
  'x-svc-switch': 'enabled',
  properties: {
    enabled: { type: 'boolean', description: 'Enables GraphQL handling.' },
    execution_mode: {
      type: 'string',
      enum: ['', 'proxyOnly', 'executionEngine', 'supergraph', 'subgraph'],
      default: 'proxyOnly',
      description:
        '`proxyOnly` proxies GraphQL to the upstream; `executionEngine` resolves the schema from `type_field_configurations`.',
    },
    version: { type: 'string', description: 'Version of the GraphQL configuration format.' },
    schema: { type: 'string', description: 'GraphQL schema (SDL) of the API.' },
    playground: {
      title: 'GraphqlPlayground',
      description:
        'A GraphQL IDE page served by the gateway at `path` under the listen path (no outside hosts); its queries go through the API like any other request.',
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean', description: 'Serve the playground.' },
        path: { type: 'string', description: 'Path of the playground, relative to the listen path.' },
      },
    },
    type_field_configurations: {
      type: 'array',
      description: 'Data source of each field (universal data graph).',
      items: {
        title: 'TypeFieldConfiguration',
        description: 'Data source and mapping of one field.',
        type: 'object',
        additionalProperties: false,
        required: ['type_name', 'field_name'],
        properties: {
          type_name: { type: 'string', minLength: 1, description: 'GraphQL type that holds the field.' },
          field_name: { type: 'string', minLength: 1, description: 'Field name.' },
          mapping: {
            title: 'FieldMapping',
            description: 'How the response maps onto the field.',
            type: 'object',
            additionalProperties: false,
            properties: {
              disabled: { type: 'boolean', description: 'Use the response as it is.' },
              path: { type: 'string', description: 'Dot path of the value in the response.' },
            },
          },
          data_source: graphqlDataSource,
        },
      },
    },
    last_schema_update: {
      type: 'string',
      format: 'date-time',
      description: 'When the schema was last updated from the upstream.',
    },
    engine: {
      title: 'GraphqlEngineConfig',
      description: 'Settings of the version 2 execution engine.',
      type: 'object',
      'x-svc-support': 'not-supported',
      'x-svc-reason':
        'not built yet: the execution engine reads `type_field_configurations` (data sources per field); the version 2 form (`field_configs`, `data_sources`) is not translated to it',
      additionalProperties: false,
      properties: {
        field_configs: {
          type: 'array',
          description: 'How fields map onto data source responses.',
          items: openObject(
            'Mapping of one field: `type_name`, `field_name`, `disable_default_mapping`, `path`.',
          ),
        },
        data_sources: {
          type: 'array',
          description:
            'Data sources: `kind` (REST, GraphQL, Kafka), `name`, `internal`, `root_fields`, `config`.',
          items: openObject('One data source.'),
        },
        global_headers: {
          type: 'array',
          description: 'Headers sent to every data source.',
          items: {
            title: 'GraphqlEngineGlobalHeader',
            description: 'One header.',
            type: 'object',
            additionalProperties: false,
            properties: {
              key: { type: 'string', description: 'Header name.' },
              value: { type: 'string', description: 'Header value.' },
            },
          },
        },
      },
    },
    proxy: {
      title: 'GraphqlProxyConfig',
      description: 'Settings of a proxy-only GraphQL API.',
      type: 'object',
      'x-svc-support': 'not-supported',
      'x-svc-reason':
        'not built yet: a proxy-only GraphQL API is proxied with the headers of the API (`global_headers`); these extra header maps and proxy features are not applied',
      additionalProperties: false,
      properties: {
        auth_headers: stringMap('Headers sent to the upstream for introspection.'),
        request_headers: stringMap('Headers added to upstream requests.'),
        use_response_extensions: openObject('Response extensions passed through.'),
        features: openObject('Proxy features.'),
        request_headers_rewrite: openObject('Request header rewrites.'),
      },
    },
    subgraph: {
      title: 'GraphqlSubgraphConfig',
      description: 'Settings of a federation subgraph.',
      type: 'object',
      'x-svc-support': 'not-supported',
      'x-svc-reason': 'GraphQL federation (subgraphs merged into a supergraph) is not built yet',
      additionalProperties: false,
      properties: { sdl: { type: 'string', description: 'The subgraph SDL.' } },
    },
    supergraph: {
      ...openObject(
        'Settings of a federation supergraph: `subgraphs`, `merged_sdl`, `global_headers`, `disable_query_batching`, `updated_at`.',
      ),
      'x-svc-support': 'not-supported',
      'x-svc-reason': 'GraphQL federation (subgraphs merged into a supergraph) is not built yet',
    },
    graph_ref: {
      type: 'string',
      'x-svc-support': 'not-supported',
      'x-svc-reason':
        'needs a client of a GraphQL schema registry, which svc does not have: set the schema itself in `graphql.schema`',
      description: 'Reference to the graph in a schema registry.',
    },
    introspection: {
      title: 'GraphqlIntrospectionConfig',
      description: 'Introspection queries.',
      type: 'object',
      additionalProperties: false,
      properties: { disabled: { type: 'boolean', description: 'Refuse introspection queries.' } },
    },
  },
};
