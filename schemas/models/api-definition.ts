import type { JsonSchema } from '../json-schema.ts';

/** IDs the gateway accepts for APIs and policies: safe in a URL path without escaping. */
export const idPattern = '^[A-Za-z0-9._~-]+$';

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
  properties: {
    enabled: { type: 'boolean', description: 'Enables GraphQL handling.' },
    execution_mode: {
      type: 'string',
      enum: ['proxyOnly', 'executionEngine'],
      default: 'proxyOnly',
      description:
        '`proxyOnly` proxies GraphQL to the upstream; `executionEngine` resolves the schema from `type_field_configurations`.',
    },
    version: { type: 'string', description: 'Version of the GraphQL configuration format.' },
    schema: { type: 'string', description: 'GraphQL schema (SDL) of the API.' },
    playground: {
      title: 'GraphqlPlayground',
      description: 'The public GraphQL playground.',
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
  },
};

const versionInfo: JsonSchema = {
  title: 'VersionInfo',
  description: 'One version of the API.',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', description: 'Version name.' },
    expires: { type: 'string', description: 'When the version expires (`2006-01-02 15:04`); empty never.' },
    use_extended_paths: { type: 'boolean', description: 'Use `extended_paths`.' },
    extended_paths: {
      type: 'object',
      description: 'Per-path middleware (allow and block lists, transforms, mocks, ...).',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    global_headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Headers added to every upstream request.',
    },
    global_headers_remove: {
      type: 'array',
      items: { type: 'string' },
      description: 'Headers removed from every upstream request.',
    },
    override_target: { type: 'string', description: 'Upstream of this version, instead of the target URL.' },
  },
};

/** Versions of a classic API. */
export const versionData: JsonSchema = {
  title: 'VersionData',
  description: 'Versions of the API. A new API has one version, `Default`, and is not versioned.',
  type: 'object',
  additionalProperties: false,
  properties: {
    not_versioned: { type: 'boolean', default: true, description: 'Serve one version only.' },
    default_version: { type: 'string', description: 'Version used when a request names none.' },
    versions: {
      type: 'object',
      additionalProperties: versionInfo,
      description: 'Versions by name.',
    },
  },
};

/** Upstream and path settings. */
export const proxy: JsonSchema = {
  title: 'ProxyConfig',
  description: 'Where the API listens on the gateway and where it sends requests.',
  type: 'object',
  additionalProperties: false,
  required: ['listen_path'],
  properties: {
    listen_path: {
      type: 'string',
      pattern: '^/',
      description: 'Base path on the gateway, for example `/orders/`. Must start with `/`.',
    },
    target_url: {
      type: 'string',
      description:
        'Upstream address (http or https). A cluster service is addressed as `http://<service>.<namespace>.svc:<port>`. Required unless GraphQL is enabled.',
    },
    strip_listen_path: {
      type: 'boolean',
      description: 'Remove the listen path from the request before it is proxied.',
    },
    preserve_host_header: {
      type: 'boolean',
      description: "Send the client's Host header upstream instead of the target's.",
    },
    disable_strip_slash: {
      type: 'boolean',
      description: 'Keep a leading slash left after stripping the listen path.',
    },
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
    id_extractor: {
      type: 'object',
      description: 'Kept for definitions of other gateways; refused when it says anything.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
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
  name: { type: 'string', minLength: 1, description: 'Name of the API.' },
  slug: { type: 'string', description: 'Short name of the API, used in dashboards.' },
  active: { type: 'boolean', default: true, description: 'Whether the gateway serves the API.' },
  internal: {
    type: 'boolean',
    description: 'Reachable only from other APIs of the gateway, never from clients.',
  },
  protocol: {
    type: 'string',
    enum: ['', 'http', 'https', 'h2c', 'tcp', 'tls'],
    description: 'Protocol of the listener. Empty serves on the gateway port with its protocol.',
  },
  listen_port: {
    type: 'integer',
    minimum: 0,
    maximum: 65535,
    description: 'Port the gateway listens on for this API; 0 uses the gateway port.',
  },
  domain: {
    type: 'string',
    description: 'Host the API is bound to (`api.example.com` or `*.example.com`); requests must match it.',
  },
  proxy,
  use_keyless: {
    type: 'boolean',
    description:
      'Open access with no authentication. False means a key is required (auth token in `Authorization` unless another method is enabled).',
  },
  use_standard_auth: { type: 'boolean', description: 'Auth token authentication.' },
  use_basic_auth: { type: 'boolean', description: 'Basic authentication (`Authorization: Basic ...`).' },
  basic_auth: {
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
  enable_jwt: { type: 'boolean', description: 'JWT authentication.' },
  jwt_signing_method: {
    type: 'string',
    enum: ['hmac', 'rsa', 'ecdsa'],
    description: 'Family of algorithms the tokens are signed with.',
  },
  jwt_source: {
    type: 'string',
    description: 'Key that verifies tokens: a base64 secret or PEM public key, or the URL of a JWKS.',
  },
  jwt_identity_base_field: {
    type: 'string',
    default: 'sub',
    description: 'Claim that identifies the client.',
  },
  jwt_policy_field_name: { type: 'string', description: 'Claim that carries the policy ID to apply.' },
  jwt_client_base_field: { type: 'string', description: 'Claim that names the client key.' },
  jwt_skip_kid: {
    type: 'boolean',
    description:
      'Ignore the `kid` header of tokens as an identity (the identity always comes from `jwt_identity_base_field`).',
  },
  jwt_scope_claim_name: {
    type: 'string',
    description:
      'Claim holding the scopes for `jwt_scope_to_policy_mapping` (default `scope`; `a.b` reads a nested claim): a space-separated string or a list.',
  },
  jwt_expires_at_validation_skew: {
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `exp`.',
  },
  jwt_issued_at_validation_skew: {
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `iat`.',
  },
  jwt_not_before_validation_skew: {
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `nbf`.',
  },
  use_mutual_tls_auth: {
    type: 'boolean',
    description: 'Static mTLS: only clients presenting an allowed certificate pass.',
  },
  base_identity_provided_by: {
    type: 'string',
    enum: ['', 'auth_token', 'basic_auth_user', 'jwt_claim', 'hmac_key', 'custom_auth', 'oauth_key'],
    description:
      'Chained authentication: every enabled method must pass, and this one provides the session of the request.',
  },
  strip_auth_data: {
    type: 'boolean',
    description: 'Remove the credentials or token from the request before it is proxied.',
  },
  auth: authConfig,
  auth_configs: {
    type: 'object',
    description: 'Credential locations per method: `authToken`, `basic`, `jwt`, ...',
    additionalProperties: authConfig,
  },
  enable_signature_checking: {
    type: 'boolean',
    description:
      'HMAC request signing: `Authorization: Signature keyId=...,algorithm=...,headers=...,signature=...` with the `hmac_string` of the key.',
  },
  hmac_allowed_clock_skew: {
    type: 'number',
    description:
      'Milliseconds the signed `Date` (or `X-Aux-Date`) may differ from the gateway clock; 0 or less: any date.',
  },
  hmac_allowed_algorithms: {
    type: 'array',
    items: { type: 'string', enum: ['hmac-sha1', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'] },
    description: 'Algorithms clients may sign with; empty: all four.',
  },
  custom_middleware: customMiddleware,
  custom_middleware_bundle: {
    type: 'string',
    description: 'A plugin bundle of other gateways; refused when set (name modules in custom_middleware).',
  },
  enable_ip_whitelisting: {
    type: 'boolean',
    description: 'When true, only requests from `allowed_ips` pass.',
  },
  allowed_ips: ipList('Client addresses allowed when `enable_ip_whitelisting` is true:'),
  enable_ip_blacklisting: {
    type: 'boolean',
    description: 'When true, requests from `blacklisted_ips` are refused with 403.',
  },
  blacklisted_ips: ipList('Client addresses refused when `enable_ip_blacklisting` is true:'),
  global_rate_limit: {
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
  disable_rate_limit: { type: 'boolean', description: 'Skip key rate limits on this API.' },
  disable_quota: { type: 'boolean', description: 'Skip quota checks on this API (OAS: `skipQuota`).' },
  dont_set_quota_on_create: {
    type: 'boolean',
    description: "Keep keys' quota counters when keys are created or updated (OAS: `skipQuotaReset`).",
  },
  enforce_org_quotas: {
    type: 'boolean',
    description:
      "Count every key of the API's organisation together against the organisation's quota (`/svc/org/keys/{org_id}`), whatever the keys' own quotas.",
  },
  enable_detailed_recording: {
    type: 'boolean',
    description: 'Record request and response bodies in analytics.',
  },
  enable_context_vars: {
    type: 'boolean',
    description: 'Make request context variables available to middleware.',
  },
  version_data: versionData,
  event_handlers: eventHandlers,
  tags: { type: 'array', items: { type: 'string' }, description: 'Labels, also used to shard gateways.' },
  config_data: {
    type: 'object',
    description: 'Free-form settings made available to middleware.',
    'x-kubernetes-preserve-unknown-fields': true,
  },
  CORS: {
    title: 'CorsConfig',
    description: 'Cross-origin resource sharing.',
    type: 'object',
    additionalProperties: false,
    properties: {
      enable: { type: 'boolean', description: 'Answer CORS requests at the gateway.' },
      allowed_origins: { type: 'array', items: { type: 'string' }, description: 'Allowed origins.' },
      allowed_methods: { type: 'array', items: { type: 'string' }, description: 'Allowed methods.' },
      allowed_headers: { type: 'array', items: { type: 'string' }, description: 'Allowed headers.' },
      exposed_headers: {
        type: 'array',
        items: { type: 'string' },
        description: 'Headers exposed to clients.',
      },
      allow_credentials: { type: 'boolean', description: 'Allow credentials.' },
      max_age: { type: 'integer', minimum: 0, description: 'Seconds a preflight answer may be cached.' },
      options_passthrough: { type: 'boolean', description: 'Proxy OPTIONS requests to the upstream.' },
    },
  },
  graphql,
};

/** A classic API definition as the gateway stores and serves it. */
export const apiDefinitionModel: JsonSchema = {
  title: 'GatewayApiDefinition',
  description: 'A classic API definition, as stored by the gateway (`/svc/apis`).',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'proxy'],
  properties: {
    api_id: {
      type: 'string',
      pattern: idPattern,
      maxLength: 255,
      description: 'ID of the API; generated when absent.',
    },
    org_id: { type: 'string', description: 'Organization the API belongs to.' },
    is_oas: {
      type: 'boolean',
      description:
        'Set by the gateway on the classic form of an OAS API (`/svc/apis/oas`): its one version is named `""`. Refused in `/svc/apis` writes.',
    },
    ...classicApiProperties,
    jwt_default_policies: {
      type: 'array',
      items: { type: 'string', pattern: idPattern },
      description: 'Policy IDs applied when a token has no policy claim.',
    },
    jwt_scope_to_policy_mapping: {
      type: 'object',
      additionalProperties: { type: 'string', pattern: idPattern },
      description:
        'Scope -> policy ID: the policies of the scopes a token carries (claim `jwt_scope_claim_name`) are applied too (instead of the default policies when those were used).',
    },
    certificates: {
      type: 'array',
      items: { type: 'string' },
      description: 'IDs of the certificates served on this API (HTTPS listen ports).',
    },
    client_certificates: {
      type: 'array',
      items: { type: 'string' },
      description: 'SHA-256 fingerprints of the client certificates allowed by static mTLS.',
    },
    upstream_certificates: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Upstream mTLS: upstream host (`api.example.com`, `*.example.com` for its subdomains, `*` for any) -> ID of a certificate stored with its private key (`/svc/certs`), presented when the gateway connects to an https upstream with that host. An exact host wins over a wildcard, a wildcard over `*`.',
    },
    pinned_public_keys: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Certificate pinning: upstream host (`api.example.com`, `*.example.com`, `*`) -> comma-separated certificate IDs (`/svc/certs`) or public-key pins `sha256/<base64 of the SHA-256 of the DER SubjectPublicKeyInfo>`. A TLS connection to that upstream whose leaf public key matches none is refused (502).',
    },
  },
};
