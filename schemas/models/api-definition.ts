import type { JsonSchema } from '../json-schema.ts';
import { resourceRef } from '../common.ts';
import { ID_PATTERN, MAX_ID_LENGTH } from '../rules/ids.ts';
import { versionData, versionDefinition } from './endpoints.ts';

export { versionData } from './endpoints.ts';

/**
 * A field svc does not enforce yet: refused unless neutral (empty, false, 0). `reason` says why
 * and what to use instead (docs/compatibility.md).
 */
const notYet = (s: JsonSchema, reason: string): JsonSchema => ({
  ...s,
  'x-svc-support': 'not-supported',
  'x-svc-reason': reason,
});
/** A field the gateway enforces. */
const enforced = (s: JsonSchema): JsonSchema => ({ ...s, 'x-svc-support': 'supported' });
const strings = (description: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string' },
  description,
});
const stringMap = (description: string): JsonSchema => ({
  type: 'object',
  additionalProperties: { type: 'string' },
  description,
});
const openObject = (description: string): JsonSchema => ({
  type: 'object',
  description,
  'x-kubernetes-preserve-unknown-fields': true,
});

/** IDs the gateway accepts for APIs and policies: the one ID rule (schemas/rules/ids.ts). */
export const idPattern = ID_PATTERN;

/** Where a token, or the basic-auth credentials, are read from, and signature checks. */
export const authConfig: JsonSchema = {
  title: 'AuthConfig',
  description: 'Where the credentials are read from, and how they are checked.',
  type: 'object',
  additionalProperties: false,
  properties: {
    auth_header_name: {
      type: 'string',
      default: 'Authorization',
      description: 'Header that carries the credentials (name matched case-insensitively).',
    },
    disable_header: {
      type: 'boolean',
      description:
        'Do not read the credentials from a header: only from the query parameter or cookie enabled here (an OAS scheme declared `in: query` or `in: cookie`).',
    },
    use_param: { type: 'boolean', description: 'Also read the token from a query parameter.' },
    param_name: {
      type: 'string',
      description:
        'Query parameter name when `use_param` is true (case-sensitive). Defaults to the header name.',
    },
    use_cookie: { type: 'boolean', description: 'Also read the token from a cookie.' },
    cookie_name: {
      type: 'string',
      description: 'Cookie name when `use_cookie` is true (case-sensitive). Defaults to the header name.',
    },
    use_certificate: {
      type: 'boolean',
      description: 'Dynamic mTLS: a client certificate bound to a key replaces the token.',
    },
    validate_signature: { type: 'boolean', description: 'Check a request signature as well as the token.' },
    signature: {
      title: 'SignatureConfig',
      description: 'Signature validation with the auth token.',
      type: 'object',
      additionalProperties: false,
      properties: {
        algorithm: {
          type: 'string',
          enum: ['VendorSHA256', 'VendorMD5'],
          description:
            'Hex digest (SHA-256 or MD5) of the token, the secret and the Unix time in seconds, concatenated.',
        },
        header: { type: 'string', description: 'Header that carries the signature.' },
        use_param: {
          type: 'boolean',
          description: 'Also read the signature from a query parameter, which wins when present.',
        },
        param_name: {
          type: 'string',
          description: 'Query parameter of the signature (default: the header name).',
        },
        secret: {
          type: 'string',
          description:
            'Shared secret, written as it is (the `$secret_conf.<name>` and `$secret_env.<name>` references of other gateways are refused).',
        },
        allowed_clock_skew: {
          type: 'integer',
          minimum: 0,
          description: 'Seconds the signed timestamp may differ from the gateway clock.',
        },
        error_code: {
          type: 'integer',
          minimum: 400,
          maximum: 599,
          description: 'Status of a refused signature (default 401).',
        },
        error_message: {
          type: 'string',
          description: 'Message of a refused signature (default `Request signature verification failed`).',
        },
      },
    },
  },
};

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

/** Upstream and path settings. */
export const proxy: JsonSchema = {
  title: 'ProxyConfig',
  description: 'Where the API listens on the gateway and where it sends requests.',
  type: 'object',
  additionalProperties: false,
  'x-svc-support': 'supported',
  required: ['listen_path'],
  properties: {
    listen_path: {
      type: 'string',
      pattern: '^/',
      description: 'Base path on the gateway, for example `/orders/`. Must start with `/`.',
    },
    listen_path_exact: {
      type: 'boolean',
      description:
        'Serve the listen path itself only (compared without case, a trailing slash included), not the paths under it: what an Ingress path of `pathType: Exact` becomes. An svc extension; the reference serves every listen path as a prefix.',
    },
    target_url: {
      type: 'string',
      description:
        'Upstream address (http or https; without a scheme, http: `httpbin.org` is `http://httpbin.org`). A cluster service is addressed as `http://<service>.<namespace>.svc:<port>`; another API of the gateway as `svc://<api_id>/<path>`. Required unless GraphQL is enabled or `target_internal` is set.',
    },
    strip_listen_path: {
      type: 'boolean',
      description: 'Remove the listen path from the request before it is proxied.',
    },
    preserve_host_header: {
      type: 'boolean',
      description: "Send the client's Host header upstream instead of the target's.",
    },
    disable_strip_slash: notYet(
      {
        type: 'boolean',
        description: 'Keep a leading slash left after stripping the listen path.',
      },
      'not built yet: svc strips the listen path one way only (docs/gateway.md)',
    ),
    target_internal: enforced({
      title: 'TargetInternal',
      description:
        "Another API of the gateway as the upstream, instead of `target_url` (which it replaces): requests go through that API's chain in process, as `svc://<api_id>/<path>?<query>` (docs/gateway.md).",
      type: 'object',
      additionalProperties: false,
      properties: {
        target: resourceRef("The ApiDefinition requests go to (the gateway's model takes its API ID)"),
        path: { type: 'string', description: 'Path on the target API (no query).' },
        query: { type: 'string', description: 'Query added to the request.' },
      },
    }),
    enable_load_balancing: enforced({
      type: 'boolean',
      description:
        'Round-robin over `target_list` instead of `target_url` (per API, shared by the requests of a gateway process; `target_url` may then be empty).',
    }),
    target_list: enforced(strings('Upstreams load balancing goes round (each as `target_url`).')),
    check_host_against_uptime_tests: enforced({
      type: 'boolean',
      description:
        'Leave out of the rotation an upstream whose host (`host:port`) fails a check of `uptime_tests`, until it passes again.',
    }),
    service_discovery: notYet(
      {
        title: 'ServiceDiscoveryConfiguration',
        description: 'Upstreams read from a service registry.',
        type: 'object',
        additionalProperties: false,
        'x-svc-switch': 'use_discovery_service',
        properties: {
          use_discovery_service: { type: 'boolean', description: 'Turns service discovery on.' },
          query_endpoint: { type: 'string', description: 'URL of the registry query.' },
          use_nested_query: { type: 'boolean', description: 'The answer nests the data in a JSON string.' },
          parent_data_path: { type: 'string', description: 'Path of the nested data.' },
          data_path: { type: 'string', description: 'Path of the host in the answer.' },
          port_data_path: { type: 'string', description: 'Path of the port in the answer.' },
          target_path: { type: 'string', description: 'Path appended to discovered hosts.' },
          use_target_list: { type: 'boolean', description: 'The answer is a list of hosts.' },
          cache_timeout: { type: 'integer', minimum: 0, description: 'Seconds an answer is cached.' },
          cache_disabled: { type: 'boolean', description: 'Do not cache answers.' },
          endpoint_returns_list: { type: 'boolean', description: 'The registry returns a list.' },
        },
      },
      'needs a client of a service registry (Consul, etcd, Eureka), which svc does not have yet: in a cluster, address the Service (`http://<service>.<namespace>.svc:<port>`), or list the upstreams in `proxy.target_list`',
    ),
    transport: {
      title: 'ProxyTransport',
      description: 'Connection to the upstream.',
      type: 'object',
      additionalProperties: false,
      properties: {
        ssl_insecure_skip_verify: {
          type: 'boolean',
          description: "Don't verify the upstream's certificate (self-signed upstreams; not for production).",
        },
        ssl_min_version: {
          type: 'integer',
          enum: [769, 770, 771, 772],
          description: 'Lowest TLS version (769 TLS 1.0 ... 772 TLS 1.3).',
        },
        ssl_max_version: notYet(
          {
            type: 'integer',
            enum: [0, 769, 770, 771, 772],
            description: 'Highest TLS version towards the upstream.',
          },
          'not built yet: upstream connections offer every version Node.js has up to TLS 1.3 (`ssl_min_version` is supported)',
        ),
        ssl_ciphers: notYet(
          strings('Cipher suites allowed towards the upstream.'),
          "not built yet: upstream connections use Node.js's default cipher suites",
        ),
        ssl_force_common_name_check: notYet(
          {
            type: 'boolean',
            description: "Check the upstream certificate's common name against the host.",
          },
          "not built yet: the upstream certificate is checked against the host by its subject alternative names (Node.js's check), without the reference's common-name check",
        ),
        proxy_url: notYet(
          {
            type: 'string',
            description: 'Forward proxy for upstream requests, such as `http://proxy:3128`.',
          },
          'not built yet: upstream connections go straight to the upstream, never through a forward proxy',
        ),
      },
    },
  },
};

const eventHandler: JsonSchema = {
  title: 'EventHandler',
  description: 'What to do when an event fires.',
  type: 'object',
  additionalProperties: false,
  required: ['handler_name'],
  properties: {
    handler_name: {
      type: 'string',
      enum: ['eh_log_handler', 'eh_web_hook_handler'],
      description: 'Log the event, or deliver it to a webhook.',
    },
    handler_meta: {
      type: 'object',
      description:
        'Settings of the handler; for a webhook: `target_path`, `method`, `header_map`, `body_template` (an inline template of the payload fields), `event_timeout` (cooldown seconds).',
      'x-kubernetes-preserve-unknown-fields': true,
    },
  },
};

/** Event handlers of an API. */
export const eventHandlers: JsonSchema = {
  title: 'EventHandlers',
  description: 'Handlers per event (`RateLimitExceeded`, `QuotaExceeded`, `AuthFailure`, `KeyExpired`, ...).',
  type: 'object',
  additionalProperties: false,
  properties: {
    events: {
      type: 'object',
      additionalProperties: { type: 'array', items: eventHandler },
      description: 'Handlers by event name.',
    },
  },
};

const pluginHook: JsonSchema = {
  title: 'PluginHook',
  description:
    'One function of a plugin module: `name` is what the module exports, `path` the module file relative to the gateway setting `plugin_dir`.',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', description: 'Name of the function the module exports.' },
    path: {
      type: 'string',
      description:
        'Module file (`.js`, `.mjs`, `.ts` or `.mts`), relative to the gateway setting `plugin_dir`, without `..`.',
    },
    disabled: { type: 'boolean', description: 'Skips the hook.' },
    require_session: {
      type: 'boolean',
      description:
        'Kept for definitions of other gateways: hooks after authentication always see the session.',
    },
    raw_body_only: {
      type: 'boolean',
      description: 'Kept for definitions of other gateways: hooks never receive the body.',
    },
  },
};

const hookList = (when: string): JsonSchema => ({
  type: 'array',
  items: pluginHook,
  description: `Hooks run ${when}, in order.`,
});

/** Plugins of an API: JavaScript or TypeScript modules the gateway loads (docs/gateway.md). */
const customMiddleware: JsonSchema = {
  title: 'CustomMiddleware',
  description: 'Plugins: functions of JavaScript or TypeScript modules run at fixed points of the chain.',
  type: 'object',
  additionalProperties: false,
  'x-svc-support': 'supported',
  properties: {
    driver: {
      type: 'string',
      description:
        'What runs the plugins: `svc` (JavaScript or TypeScript modules) is the one this gateway has.',
    },
    pre: hookList('before authentication, after the API-wide checks'),
    auth_check: {
      ...pluginHook,
      title: 'PluginAuthCheck',
      description:
        'Custom authentication (`base_identity_provided_by: custom_auth`): the function returns a session or a refusal.',
    },
    post_key_auth: hookList('right after authentication, before the access checks'),
    post: hookList('last, just before the upstream call'),
    response: hookList('before the upstream call, to add headers to the response'),
    id_extractor: notYet(
      {
        title: 'MiddlewareIdExtractor',
        description: 'Identity extractor of a custom authentication plugin (caches its result per identity).',
        type: 'object',
        additionalProperties: false,
        properties: {
          disabled: { type: 'boolean', description: 'Skips the extractor.' },
          extract_from: { type: 'string', description: '`header`, `form` or `body`.' },
          extract_with: { type: 'string', description: '`value`, `regex` or `xpath`.' },
          extractor_config: openObject(
            'Settings: `header_name`, `param_name`, `regex_expression`, `regex_match_index`, `xpath_expression`.',
          ),
        },
      },
      'not built yet: the custom authentication function runs on every request; caching its result per extracted identity is not implemented',
    ),
  },
};

const ipList = (what: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: `${what} IPv4 or IPv6 addresses and CIDR ranges, listed explicitly (no wildcards).`,
});

/**
 * Fields a classic API definition has both in the gateway and in the ApiDefinition resource.
 * The gateway model adds `org_id` and IDs where the resource has cluster references.
 */
export const classicApiProperties: Record<string, JsonSchema> = {
  name: { 'x-svc-support': 'supported', type: 'string', minLength: 1, description: 'Name of the API.' },
  slug: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Short name of the API, used in dashboards.',
  },
  active: {
    'x-svc-support': 'supported',
    type: 'boolean',
    default: true,
    description: 'Whether the gateway serves the API.',
  },
  internal: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Reachable only from other APIs of the gateway, never from clients.',
  },
  protocol: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['', 'http', 'https', 'h2c', 'tcp', 'tls'],
    description: 'Protocol of the listener. Empty serves on the gateway port with its protocol.',
  },
  listen_port: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    maximum: 65535,
    description: 'Port the gateway listens on for this API; 0 uses the gateway port.',
  },
  domain: {
    'x-svc-support': 'supported',
    type: 'string',
    description:
      'Host the API is bound to (`api.example.com` or `*.example.com`); requests must match it. A wildcard covers names of any depth below it (`a.example.com`, `a.b.example.com`) unless `domain_wildcard_one_label` is set.',
  },
  domain_wildcard_one_label: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'With a wildcard `domain` (`*.example.com`): serve names exactly one label below it (`a.example.com`, not `a.b.example.com`), as an Ingress wildcard host does; what the Ingress controller sets. An svc extension; refused without a wildcard domain.',
  },
  proxy,
  use_keyless: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Open access with no authentication. False means a key is required (auth token in `Authorization` unless another method is enabled).',
  },
  use_standard_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Auth token authentication.',
  },
  use_basic_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Basic authentication (`Authorization: Basic ...`).',
  },
  basic_auth: {
    'x-svc-support': 'supported',
    title: 'BasicAuthConfig',
    description: 'Basic authentication settings.',
    type: 'object',
    additionalProperties: false,
    properties: {
      disable_caching: { type: 'boolean', description: 'Check every request against the registered users.' },
      cache_ttl: {
        type: 'integer',
        minimum: 0,
        description: 'Seconds verified credentials stay cached.',
      },
      extract_from_body: { type: 'boolean', description: 'Take the credentials from the request body.' },
      body_user_regexp: {
        type: 'string',
        description: 'Regular expression with exactly one group that captures the user name in the body.',
      },
      body_password_regexp: {
        type: 'string',
        description: 'Regular expression with exactly one group that captures the password in the body.',
      },
    },
  },
  enable_jwt: { 'x-svc-support': 'supported', type: 'boolean', description: 'JWT authentication.' },
  jwt_signing_method: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['hmac', 'rsa', 'ecdsa'],
    description: 'Family of algorithms the tokens are signed with.',
  },
  jwt_source: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Key that verifies tokens: a base64 secret or PEM public key, or the URL of a JWKS.',
  },
  jwt_identity_base_field: {
    'x-svc-support': 'supported',
    type: 'string',
    default: 'sub',
    description: 'Claim that identifies the client.',
  },
  jwt_policy_field_name: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Claim that carries the policy ID to apply.',
  },
  jwt_client_base_field: {
    'x-svc-support': 'not-supported',
    'x-svc-reason':
      'not built yet: a JWT session comes from `jwt_identity_base_field` and the policy claim; looking up an existing key named by a claim is not implemented',
    type: 'string',
    description: 'Claim that names the client key.',
  },
  jwt_skip_kid: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Ignore the `kid` header of tokens as an identity (the identity always comes from `jwt_identity_base_field`).',
  },
  jwt_scope_claim_name: {
    'x-svc-support': 'supported',
    type: 'string',
    description:
      'Claim holding the scopes for `jwt_scope_to_policy_mapping` (default `scope`; `a.b` reads a nested claim): a space-separated string or a list.',
  },
  jwt_expires_at_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `exp`.',
  },
  jwt_issued_at_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `iat`.',
  },
  jwt_not_before_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `nbf`.',
  },
  use_mutual_tls_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Static mTLS: only clients presenting an allowed certificate pass.',
  },
  base_identity_provided_by: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['', 'auth_token', 'basic_auth_user', 'jwt_claim', 'hmac_key', 'custom_auth', 'oauth_key'],
    description:
      'Chained authentication: every enabled method must pass, and this one provides the session of the request.',
  },
  strip_auth_data: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Remove the credentials or token from the request before it is proxied.',
  },
  auth: enforced(authConfig),
  auth_configs: {
    'x-svc-support': 'supported',
    type: 'object',
    description: 'Credential locations per method: `authToken`, `basic`, `jwt`, ...',
    additionalProperties: authConfig,
  },
  enable_signature_checking: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'HMAC request signing: `Authorization: Signature keyId=...,algorithm=...,headers=...,signature=...` with the `hmac_string` of the key.',
  },
  hmac_allowed_clock_skew: {
    'x-svc-support': 'supported',
    type: 'number',
    description:
      'Milliseconds the signed `Date` (or `X-Aux-Date`) may differ from the gateway clock; 0 or less: any date.',
  },
  hmac_allowed_algorithms: {
    'x-svc-support': 'supported',
    type: 'array',
    items: { type: 'string', enum: ['hmac-sha1', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'] },
    description: 'Algorithms clients may sign with; empty: all four.',
  },
  custom_middleware: customMiddleware,
  custom_middleware_bundle: {
    'x-svc-support': 'not-supported',
    'x-svc-reason':
      'bundles are archives of Python, Lua or Go plugins fetched from a bundle server; svc runs JavaScript or TypeScript modules from its `plugin_dir` only (`custom_middleware`)',
    type: 'string',
    description: 'A plugin bundle of other gateways; refused when set (name modules in custom_middleware).',
  },
  enable_ip_whitelisting: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'When true, only requests from `allowed_ips` pass.',
  },
  allowed_ips: enforced(ipList('Client addresses allowed when `enable_ip_whitelisting` is true:')),
  enable_ip_blacklisting: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'When true, requests from `blacklisted_ips` are refused with 403.',
  },
  blacklisted_ips: enforced(ipList('Client addresses refused when `enable_ip_blacklisting` is true:')),
  global_rate_limit: {
    'x-svc-support': 'supported',
    title: 'GlobalRateLimit',
    description: 'Rate limit of the whole API, for all clients together (keyless APIs too).',
    type: 'object',
    additionalProperties: false,
    properties: {
      disabled: { type: 'boolean', description: 'Turns the API-wide limit off.' },
      rate: { type: 'integer', minimum: 0, description: 'Requests allowed per `per` seconds; 0 is off.' },
      per: { type: 'integer', minimum: 0, description: 'Window in seconds.' },
    },
  },
  disable_rate_limit: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Skip key rate limits on this API.',
  },
  disable_quota: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Skip quota checks on this API (OAS: `skipQuota`).',
  },
  dont_set_quota_on_create: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: "Keep keys' quota counters when keys are created or updated (OAS: `skipQuotaReset`).",
  },
  enforce_org_quotas: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      "Count every key of the API's organisation together against the organisation's quota (`/svc/org/keys/{org_id}`), whatever the keys' own quotas.",
  },
  enable_detailed_recording: {
    'x-svc-support': 'not-supported',
    'x-svc-reason':
      'svc keeps no analytics records (its request metrics are Prometheus series at `/metrics`, docs/gateway.md), so there are no bodies to record',
    type: 'boolean',
    description: 'Record request and response bodies in analytics.',
  },
  enable_context_vars: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Replace `$tyk_context.` variables (path, path_parts, remote_addr, request_id, request_data, headers_<Name>, cookies_<name>) in header values and URL rewrites.',
  },
  version_data: versionData,
  event_handlers: enforced(eventHandlers),
  tags: {
    'x-svc-support': 'supported',
    type: 'array',
    items: { type: 'string' },
    description: 'Labels, also used to shard gateways.',
  },
  config_data: {
    'x-svc-support': 'supported',
    type: 'object',
    description: 'Free-form settings made available to middleware.',
    'x-kubernetes-preserve-unknown-fields': true,
  },
  CORS: {
    'x-svc-support': 'supported',
    'x-svc-switch': 'enable',
    title: 'CorsConfig',
    description: 'Cross-origin resource sharing.',
    type: 'object',
    additionalProperties: false,
    properties: {
      enable: { type: 'boolean', description: 'Answer CORS requests at the gateway.' },
      allowed_origins: {
        type: 'array',
        items: { type: 'string' },
        description:
          'Allowed origins: exact, `*` (any; also when empty), or one `*` wildcard (`https://*.example.com`).',
      },
      allowed_methods: {
        type: 'array',
        items: { type: 'string' },
        description: 'Allowed methods (default GET, POST, HEAD; OPTIONS always).',
      },
      allowed_headers: {
        type: 'array',
        items: { type: 'string' },
        description:
          'Headers a request may send (default Origin, Accept, Content-Type, X-Requested-With; `*` any).',
      },
      exposed_headers: {
        type: 'array',
        items: { type: 'string' },
        description: 'Headers exposed to clients.',
      },
      allow_credentials: { type: 'boolean', description: 'Allow credentials.' },
      max_age: { type: 'integer', minimum: 0, description: 'Seconds a preflight answer may be cached.' },
      options_passthrough: {
        type: 'boolean',
        description:
          'Send preflight requests on to the upstream (with the CORS headers) instead of answering them with 204.',
      },
      debug: { type: 'boolean', description: 'Log CORS decisions (debug level).' },
    },
  },
  graphql,
  ...notYetClassicProperties(),
};

/**
 * Fields of the reference's classic model that svc does not enforce yet (each flagged
 * `not-supported`): accepted so that migrating manifests are not refused for an unknown field,
 * refused when set to a value that changes behaviour (docs/compatibility.md).
 */
function notYetClassicProperties(): Record<string, JsonSchema> {
  const flag = (
    description: string,
    reason: string,
    type: 'boolean' | 'string' | 'integer' = 'boolean',
  ): JsonSchema => notYet({ type, description }, reason);
  return {
    id: flag(
      'Database ID of other gateways; has no meaning here.',
      "a database ID of the reference's dashboard: svc has no such database, and names an API by `api_id`",
      'string',
    ),
    expiration: flag(
      'When the API stops being served (`2006-01-02 15:04`).',
      'not built yet: an API is served until it is deleted or `active` is false; versions can expire (`version_data.versions.<v>.expires`)',
      'string',
    ),
    enable_proxy_protocol: flag(
      'Accept the PROXY protocol on the listener (TCP APIs).',
      'not built yet: TCP and TLS listeners (`protocol` tcp, tls) are not built, and HTTP listeners do not read a PROXY protocol header',
    ),
    do_not_track: enforced({
      type: 'boolean',
      description:
        'Leave the API\'s requests out of the request metrics (`svc_gateway_requests_total`, `svc_gateway_request_duration_seconds`; docs/gateway.md, "Metrics").',
    }),
    use_oauth2: flag(
      'OAuth 2.0 authorization server at the gateway (`/oauth/token`, `/oauth/authorize`).',
      "svc is not an OAuth 2.0 authorization server: it issues no tokens (no `/oauth/token`, `/oauth/authorize`, client registry); use an external identity provider and validate its tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    oauth_meta: notYet(
      {
        title: 'OAuth2Meta',
        description: 'Settings of the OAuth 2.0 authorization server.',
        type: 'object',
        additionalProperties: false,
        properties: {
          allowed_access_types: {
            type: 'array',
            items: {
              type: 'string',
              enum: ['authorization_code', 'refresh_token', 'password', 'client_credentials'],
            },
            description: 'Grant types clients may use.',
          },
          allowed_authorize_types: {
            type: 'array',
            items: { type: 'string', enum: ['code', 'token'] },
            description: '`response_type` values clients may use.',
          },
          auth_login_redirect: { type: 'string', description: 'Login page of the authorization flow.' },
        },
      },
      "svc is not an OAuth 2.0 authorization server: it issues no tokens (no `/oauth/token`, `/oauth/authorize`, client registry); use an external identity provider and validate its tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    notifications: notYet(
      {
        title: 'NotificationsManager',
        description: 'Where OAuth key changes are notified.',
        type: 'object',
        additionalProperties: false,
        properties: {
          shared_secret: { type: 'string', description: 'Secret sent with notifications.' },
          oauth_on_keychange_url: { type: 'string', description: 'URL notified of key changes.' },
        },
      },
      'notifies changes of keys issued by the OAuth 2.0 authorization server, which svc is not (see `use_oauth2`)',
    ),
    external_oauth: notYet(
      openObject(
        'Tokens of an external OAuth server checked by introspection or JWT: `enabled`, `providers`.',
      ),
      "not built yet: token introspection (RFC 7662) is not implemented; validate JWT access tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    use_openid: flag(
      'OpenID Connect authentication.',
      "not built yet as a method of its own (issuers and client IDs mapped to policies); validate OpenID Connect ID tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    openid_options: notYet(
      {
        title: 'OpenIDOptions',
        description: 'OpenID Connect providers.',
        type: 'object',
        additionalProperties: false,
        properties: {
          providers: {
            type: 'array',
            description: 'Accepted providers.',
            items: {
              title: 'OIDProviderConfig',
              description: 'One provider.',
              type: 'object',
              additionalProperties: false,
              properties: {
                issuer: { type: 'string', description: 'Issuer of the tokens.' },
                client_ids: stringMap('Client ID (base64) -> policy ID.'),
              },
            },
          },
          segregate_by_client: { type: 'boolean', description: 'One rate limit and quota per client.' },
        },
      },
      "not built yet as a method of its own (issuers and client IDs mapped to policies); validate OpenID Connect ID tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    scopes: notYet(
      openObject(
        'Scope to policy mappings per method: `jwt` and `oidc`, each with `scope_claim_name` and `scope_to_policy`.',
      ),
      'not built yet in this form: for JWT, set `jwt_scope_claim_name` and `jwt_scope_to_policy_mapping`; OpenID Connect is not supported (see `use_openid`)',
    ),
    idp_client_id_mapping_disabled: flag(
      'Do not map identity provider client IDs to keys.',
      'belongs to the OpenID Connect method, which svc does not have (see `use_openid`)',
    ),
    use_go_plugin_auth: flag(
      'Authentication by a compiled plugin.',
      'Go plugins are shared objects loaded into a Go process and cannot run in a Node.js gateway: use a JavaScript or TypeScript plugin (`custom_middleware.auth_check` with `base_identity_provided_by: custom_auth`)',
    ),
    enable_coprocess_auth: flag(
      'Authentication by a plugin of another runtime.',
      "coprocess plugins (Python, Lua, gRPC) need the reference's coprocess bridge: use a JavaScript or TypeScript plugin (`custom_middleware.auth_check` with `base_identity_provided_by: custom_auth`)",
    ),
    custom_plugin_auth_enabled: flag(
      'Authentication by a plugin of another gateway.',
      'plugins written for another gateway cannot run in svc: use a JavaScript or TypeScript plugin (`custom_middleware.auth_check` with `base_identity_provided_by: custom_auth`)',
    ),
    custom_middleware_bundle_disabled: flag(
      'Turns `custom_middleware_bundle` off (svc never loads bundles).',
      'belongs to plugin bundles, which svc never loads (see `custom_middleware_bundle`)',
    ),
    request_signing: notYet(
      {
        title: 'RequestSigningMeta',
        description: 'Signing of upstream requests.',
        type: 'object',
        additionalProperties: false,
        'x-svc-switch': 'is_enabled',
        properties: {
          is_enabled: { type: 'boolean', description: 'Sign upstream requests.' },
          secret: { type: 'string', description: 'HMAC secret.' },
          key_id: { type: 'string', description: 'Key ID sent with the signature.' },
          algorithm: { type: 'string', description: 'Signature algorithm.' },
          header_list: { type: 'array', items: { type: 'string' }, description: 'Headers signed.' },
          certificate_id: { type: 'string', description: 'Certificate of an RSA signature.' },
          signature_header: { type: 'string', description: 'Header that carries the signature.' },
        },
      },
      'not built yet: svc does not sign the requests it sends upstream (it checks the signatures of client requests: `enable_signature_checking`)',
    ),
    definition: versionDefinition,
    uptime_tests: enforced({
      title: 'UptimeTests',
      description:
        'Health checks of the load-balanced upstreams (with `proxy.check_host_against_uptime_tests`): each URL requested every `config.recheck_wait` seconds (default 10); a check fails when unreachable, past its `timeout` (milliseconds, default 5000) or outside 2xx. TCP checks (`protocol` tcp, `commands`, `enable_proxy_protocol`) are not supported yet.',
      type: 'object',
      additionalProperties: false,
      properties: {
        check_list: {
          type: 'array',
          description:
            'Checks: `url`, `protocol`, `timeout`, `method`, `headers`, `body`, `commands`, `enable_proxy_protocol`.',
          items: openObject('One check.'),
        },
        config: openObject('Settings: `expire_utime_after`, `service_discovery`, `recheck_wait`.'),
      },
    }),
    cache_options: enforced({
      title: 'CacheOptions',
      description:
        'Response caching of GET, HEAD and OPTIONS requests, in Redis with the Redis store, else in the memory of each gateway process; kept per API and per key; a hit carries `X-Svc-Cached-Response: 1` (docs/gateway.md).',
      type: 'object',
      additionalProperties: false,
      'x-svc-switch': 'enable_cache',
      properties: {
        enable_cache: { type: 'boolean', description: 'Turns caching on.' },
        cache_timeout: {
          type: 'integer',
          minimum: 0,
          description: 'Seconds a response stays cached (0: the default, 60).',
        },
        cache_all_safe_requests: {
          type: 'boolean',
          description: 'Cache every GET, HEAD and OPTIONS request (the safe methods, as the reference).',
        },
        cache_response_codes: {
          type: 'array',
          items: { type: 'integer' },
          description: 'Statuses that are cached (empty: any status, as the reference).',
        },
        enable_upstream_cache_control: {
          type: 'boolean',
          description:
            'The upstream decides: a response is stored only when it carries `x-tyk-cache-action-set`, for the seconds in `cache_control_ttl_header`.',
        },
        cache_control_ttl_header: {
          type: 'string',
          description: 'Response header that gives the time to live (default `x-tyk-cache-action-set-ttl`).',
        },
        cache_by_headers: strings('Request headers whose values join the cache key.'),
      },
    }),
    session_lifetime: notYet(
      {
        type: 'integer',
        minimum: 0,
        description: 'Seconds a key lives after its last change; 0 forever.',
      },
      'not built yet: keys live until deleted or until their `expires`; removing keys some time after their last change is not implemented',
    ),
    session_lifetime_respects_key_expiration: flag(
      'Keep keys until they expire when that is later than `session_lifetime`.',
      'belongs to `session_lifetime`, which is not built yet',
    ),
    auth_provider: notYet(
      openObject('Authentication provider of other gateways: `name`, `storage_engine`, `meta`.'),
      "svc has one key store for every API (memory, files or Redis: the gateway's store setting); a provider per API is not built",
    ),
    session_provider: notYet(
      openObject('Session provider of other gateways: `name`, `storage_engine`, `meta`.'),
      "svc has one key store for every API (memory, files or Redis: the gateway's store setting); a provider per API is not built",
    ),
    enable_batch_request_support: flag(
      'Batch requests at `/tyk/batch/`.',
      'not built yet: the gateway has no batch endpoint; send the requests one by one (HTTP keep-alive or HTTP/2)',
    ),
    expire_analytics_after: notYet(
      {
        type: 'integer',
        minimum: 0,
        description: 'Seconds analytics records are kept.',
      },
      'svc keeps no analytics records (its request metrics are Prometheus series at `/metrics`, docs/gateway.md), so there is nothing to expire',
    ),
    response_processors: notYet(
      {
        type: 'array',
        description: 'Response middleware of other gateways.',
        items: {
          title: 'ResponseProcessor',
          description: 'One response processor.',
          type: 'object',
          additionalProperties: false,
          properties: {
            name: { type: 'string', description: 'Name of the processor.' },
            options: openObject('Settings of the processor.'),
          },
        },
      },
      "response middleware named the reference's way; svc sets the same features per version and endpoint: `global_response_headers`, `transform_response_headers`, `transform_response`",
    ),
    domain_disabled: flag(
      'Ignore `domain`.',
      'not built yet: a `domain` always applies; to serve on every host, leave `domain` empty',
    ),
    config_data_disabled: flag(
      'Hide `config_data` from middleware.',
      'not built yet: plugins always see `config_data`; leave it empty instead',
    ),
    tag_headers: notYet(
      strings('Request headers recorded as analytics tags.'),
      'svc keeps no analytics records (its request metrics are Prometheus series at `/metrics`, docs/gateway.md) to tag',
    ),
    tags_disabled: flag(
      'Ignore `tags`.',
      'not built yet: `tags` always apply (they shard gateways); leave them empty instead',
    ),
    detailed_tracing: flag(
      'OpenTelemetry spans per middleware.',
      'OpenTelemetry tracing is not built yet: the gateway exports Prometheus metrics only',
    ),
    analytics_plugin: notYet(
      {
        title: 'AnalyticsPluginConfig',
        description: 'A plugin that rewrites analytics records.',
        type: 'object',
        additionalProperties: false,
        'x-svc-switch': 'enable',
        properties: {
          enable: { type: 'boolean', description: 'Turns the plugin on.' },
          plugin_path: { type: 'string', description: 'Plugin file.' },
          func_name: { type: 'string', description: 'Function name.' },
        },
      },
      'analytics plugins are Go plugins that rewrite analytics records: Go plugins cannot run in a Node.js gateway, and svc keeps no analytics records (its request metrics are Prometheus series at `/metrics`, docs/gateway.md)',
    ),
    upstream_auth: notYet(
      openObject('Authentication towards the upstream: `enabled`, `basic_auth`, `oauth`.'),
      'not built yet: the gateway does not log in to the upstream (basic authentication, OAuth client credentials); send a fixed credential with `global_headers`, or use upstream mTLS (`upstream_certificates`)',
    ),
    upstream_certificates_disabled: flag(
      'Ignore `upstream_certificates`.',
      'not built yet: `upstream_certificates` always apply; leave the map empty instead',
    ),
    certificate_pinning_disabled: flag(
      'Ignore `pinned_public_keys`.',
      'not built yet: `pinned_public_keys` always apply; leave the map empty instead',
    ),
    client_certificate_refs: notYet(
      strings(
        'Secrets holding the client certificates static mTLS allows (the operator does not read them yet: use client_certificates).',
      ),
      'the operator does not read client certificates from Secrets yet: list their SHA-256 fingerprints in `client_certificates`',
    ),
    pinned_public_keys_refs: notYet(
      stringMap('Upstream host -> Secret holding the pinned public key.'),
      'the operator does not read pinned keys from Secrets yet: set `pinned_public_keys`',
    ),
    upstream_certificate_refs: notYet(
      stringMap('Upstream host -> Secret holding the upstream mTLS certificate.'),
      'the operator does not read upstream certificates from Secrets yet: set `upstream_certificates` (certificates stored in the gateway, `/svc/certs`)',
    ),
  };
}

/** A classic API definition as the gateway stores and serves it. */
export const apiDefinitionModel: JsonSchema = {
  title: 'GatewayApiDefinition',
  description: 'A classic API definition, as stored by the gateway (`/svc/apis`).',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'proxy'],
  properties: {
    api_id: {
      'x-svc-support': 'supported',
      type: 'string',
      pattern: idPattern,
      maxLength: MAX_ID_LENGTH,
      description: 'ID of the API; generated when absent.',
    },
    org_id: { 'x-svc-support': 'supported', type: 'string', description: 'Organization the API belongs to.' },
    is_oas: {
      'x-svc-support': 'supported',
      type: 'boolean',
      description:
        'Set by the gateway on the classic form of an OAS API (`/svc/apis/oas`): its one version is named `""`. Refused in `/svc/apis` writes.',
    },
    ...classicApiProperties,
    jwt_default_policies: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string', pattern: idPattern },
      description: 'Policy IDs applied when a token has no policy claim.',
    },
    jwt_scope_to_policy_mapping: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string', pattern: idPattern },
      description:
        'Scope -> policy ID: the policies of the scopes a token carries (claim `jwt_scope_claim_name`) are applied too (instead of the default policies when those were used).',
    },
    certificates: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string' },
      description: 'IDs of the certificates served on this API (HTTPS listen ports).',
    },
    client_certificates: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string' },
      description: 'SHA-256 fingerprints of the client certificates allowed by static mTLS.',
    },
    upstream_certificates: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Upstream mTLS: upstream host (`api.example.com`, `*.example.com` for its subdomains, `*` for any) -> ID of a certificate stored with its private key (`/svc/certs`), presented when the gateway connects to an https upstream with that host. An exact host wins over a wildcard, a wildcard over `*`.',
    },
    pinned_public_keys: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Certificate pinning: upstream host (`api.example.com`, `*.example.com`, `*`) -> comma-separated certificate IDs (`/svc/certs`) or public-key pins `sha256/<base64 of the SHA-256 of the DER SubjectPublicKeyInfo>`. A TLS connection to that upstream whose leaf public key matches none is refused (502).',
    },
  },
};
