/**
 * The manifests of e2e/webhooks/reference-samples.test.ts: one sample file for each class of
 * feature the reference operator's published samples use, written in the reference's own naming
 * (group tyk.tyk.io, Tyk kinds), and the builders they are written with.
 */
import { generateKeyPairSync } from 'node:crypto';

/** A manifest as applied. */
export type Manifest = Record<string, unknown>;

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** An ApiDefinition in the reference's naming. */
export function api(name: string, spec: Manifest, labels?: Record<string, string>): Manifest {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, ...(labels === undefined ? {} : { labels }) },
    spec: { name, protocol: 'http', active: true, ...spec },
  };
}

/** A SecurityPolicy in the reference's naming, giving access to the APIs named. */
export function policy(name: string, apis: string[]): Manifest {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name },
    spec: {
      name,
      state: 'active',
      active: true,
      access_rights_array: apis.map((a) => ({ name: a, namespace: 'default', versions: ['Default'] })),
    },
  };
}

export const proxy = (listenPath: string, target = 'http://httpbin.default.svc:8000'): Manifest => ({
  target_url: target,
  listen_path: listenPath,
  strip_listen_path: true,
});

/** `version_data` of one version, Default, with these extended paths. */
const extended = (extended_paths: Manifest): Manifest => ({
  default_version: 'Default',
  not_versioned: true,
  versions: { Default: { name: 'Default', use_extended_paths: true, extended_paths } },
});

const ecdsaPublicKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString();

export const UDG_SDL = 'type Query { countries: [Country] }\ntype Country { name: String code: String }\n';

/** Sample files, each a list of documents applied together (kubectl apply -f <file>). */
export const files: Record<string, Manifest[]> = {
  'keyless proxy, tags, an Ingress template': [
    api('rs-open', { use_keyless: true, tags: ['edge'], proxy: proxy('/rs-open') }),
    api(
      'rs-template',
      { use_keyless: true, proxy: { target_url: 'http://example.com', strip_listen_path: true } },
      { template: 'true' },
    ),
  ],
  'auth token with a policy after it': [
    api('rs-token', {
      use_standard_auth: true,
      auth_configs: { authToken: { auth_header_name: 'Authorization' } },
      proxy: proxy('/rs-token'),
      version_data: {
        default_version: 'Default',
        not_versioned: false,
        versions: { Default: { name: 'Default' } },
      },
    }),
    policy('rs-token-policy', ['rs-token']),
  ],
  'basic auth, and basic auth with mTLS by Secret': [
    api('rs-basic', { use_basic_auth: true, proxy: proxy('/rs-basic') }),
    api('rs-basic-mtls', {
      base_identity_provided_by: 'basic_auth_user',
      use_basic_auth: true,
      use_mutual_tls_auth: true,
      client_certificate_refs: ['rs-client-ca'],
      proxy: proxy('/rs-basic-mtls'),
    }),
  ],
  'JWT (ECDSA) with a default policy written after it': [
    api('rs-jwt', {
      enable_jwt: true,
      strip_auth_data: true,
      jwt_signing_method: 'ecdsa',
      jwt_source: b64(ecdsaPublicKey),
      jwt_identity_base_field: 'sub',
      jwt_policy_field_name: 'pol',
      jwt_default_policies: ['default/rs-jwt-policy'],
      proxy: proxy('/rs-jwt'),
    }),
    policy('rs-jwt-policy', ['rs-jwt']),
  ],
  'TLS: certificates, upstream certificates and pinned keys by Secret': [
    api('rs-https', {
      use_keyless: true,
      protocol: 'https',
      listen_port: 8443,
      certificate_secret_names: ['rs-serving'],
      upstream_certificate_refs: { '*': 'rs-upstream' },
      pinned_public_keys_refs: { 'httpbin.org': 'rs-pin' },
      proxy: proxy('/rs-https', 'https://httpbin.org'),
    }),
  ],
  'headers, transforms and response processors': [
    api('rs-transform', {
      use_keyless: true,
      proxy: proxy('/rs-transform'),
      response_processors: [{ name: 'response_body_transform' }, { name: 'header_injector' }],
      version_data: {
        default_version: 'Default',
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            use_extended_paths: true,
            global_headers: { 'X-Req': 'a' },
            global_headers_remove: ['hello'],
            global_response_headers: { 'X-Res': 'b' },
            global_response_headers_remove: ['server'],
            extended_paths: {
              transform: [
                {
                  method: 'POST',
                  path: '/anything',
                  template_data: {
                    input_type: 'json',
                    template_mode: 'blob',
                    template_source: b64('{"bar": "{{.foo}}"}'),
                  },
                },
              ],
              transform_headers: [
                {
                  method: 'POST',
                  path: '/anything',
                  add_headers: { foo: 'bar' },
                  delete_headers: ['remove_this'],
                },
              ],
              transform_response: [
                {
                  method: 'GET',
                  path: '/xml',
                  template_data: {
                    input_type: 'xml',
                    template_mode: 'blob',
                    template_source: b64('{{ . | jsonMarshal }}'),
                  },
                },
              ],
              transform_response_headers: [
                { method: 'GET', path: '/xml', add_headers: { 'Content-Type': 'application/json' } },
              ],
            },
          },
        },
      },
    }),
  ],
  'mocks, allow and block lists, tracking, timeouts, a circuit breaker': [
    api('rs-endpoints', {
      use_keyless: true,
      do_not_track: false,
      proxy: proxy('/rs-endpoints'),
      version_data: extended({
        ignored: [
          {
            path: '/foo',
            ignore_case: false,
            method_actions: { GET: { action: 'reply', code: 200, data: '{"foo": "bar"}', headers: {} } },
          },
        ],
        black_list: [
          {
            path: '/get',
            ignore_case: true,
            method_actions: { GET: { action: 'no_action', code: 200, data: '', headers: {} } },
          },
        ],
        track_endpoints: [{ method: 'GET', path: '/headers' }],
        hard_timeouts: [{ method: 'GET', path: '/delay/{delay_seconds}', timeout: 2 }],
        circuit_breakers: [
          {
            method: 'GET',
            path: '/status/500',
            return_to_service_after: 10,
            samples: 4,
            threshold_percent: '0.5',
          },
        ],
      }),
    }),
    api('rs-allow', {
      use_keyless: true,
      proxy: proxy('/rs-allow'),
      version_data: extended({
        white_list: [
          {
            path: '/allowed/',
            ignore_case: true,
            method_actions: { GET: { action: 'no_action', code: 200, data: '', headers: {} } },
          },
        ],
      }),
    }),
  ],
  'JSON validation, CORS, caching': [
    api('rs-validate', {
      use_keyless: true,
      proxy: proxy('/rs-validate'),
      CORS: { enable: true, allowed_origins: ['http://foo.com'], allowed_methods: null, max_age: 24 },
      cache_options: { enable_cache: true, cache_timeout: 30, cache_response_codes: [200] },
      version_data: extended({
        validate_json: [
          {
            path: '/post',
            method: 'POST',
            error_response_code: 422,
            schema: {
              type: 'object',
              properties: { age: { type: 'integer', minimum: 1 } },
              required: ['age'],
            },
          },
        ],
        cache: ['/get'],
        advance_cache_config: [
          { path: '/anything', method: 'GET', cache_key_regex: '', cache_response_codes: [200] },
        ],
      }),
    }),
  ],
  'load balancing, IP lists': [
    api('rs-balanced', {
      use_keyless: true,
      proxy: {
        ...proxy('/rs-balanced', 'httpbin.org'),
        enable_load_balancing: true,
        target_list: ['httpbin.org', 'httpbingo.org'],
      },
    }),
    api('rs-allowed-ips', {
      use_keyless: true,
      enable_ip_whitelisting: true,
      allowed_ips: ['127.0.0.2'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['127.0.0.1'],
      proxy: proxy('/rs-allowed-ips'),
    }),
  ],
  'URL rewrites to internal APIs, method transforms': [
    api('rs-entry', {
      use_keyless: true,
      proxy: { listen_path: '/rs-entry', target_url: 'http://example.com' },
      version_data: extended({
        url_rewrites: [
          {
            path: '/{id}',
            match_pattern: '/(.*)/(.*)',
            method: 'GET',
            triggers: [
              {
                on: 'all',
                options: { header_matches: { Authorization: { match_rx: '^Basic' } } },
                rewrite_to_internal: { target: { name: 'rs-inner', namespace: 'default' }, path: 'inner/$2' },
              },
            ],
          },
        ],
        method_transforms: [{ path: '/get', method: 'GET', to_method: 'POST' }],
      }),
    }),
    api('rs-inner', {
      use_keyless: true,
      internal: true,
      proxy: proxy('/rs-inner', 'http://httpbin.org'),
    }),
  ],
  'GraphQL: a proxy and a universal data graph': [
    api('rs-graphql-proxy', {
      use_keyless: true,
      proxy: proxy('/rs-graphql-proxy', 'https://countries.example.com'),
      graphql: {
        enabled: true,
        version: '2',
        execution_mode: 'proxyOnly',
        schema: UDG_SDL,
        playground: { enabled: true, path: '/playground' },
      },
    }),
    api('rs-udg', {
      use_keyless: true,
      proxy: { target_url: '', listen_path: '/rs-udg', strip_listen_path: true },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: UDG_SDL,
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'countries',
            mapping: { disabled: false, path: 'countries' },
            data_source: {
              kind: 'GraphQLDataSource',
              data_source_config: { url: 'https://countries.example.com', method: 'POST' },
            },
          },
        ],
      },
    }),
    // The data graph of udg2/: its source another API of the gateway, by name (tyk://); its
    // detailed analytics records (enable_detailed_recording) are served.
    api('rs-udg2', {
      use_keyless: true,
      enable_detailed_recording: true,
      proxy: { target_url: '', listen_path: '/rs-udg2', strip_listen_path: true },
      graphql: {
        enabled: true,
        version: '2',
        execution_mode: 'executionEngine',
        schema: UDG_SDL,
        engine: {
          field_configs: [
            {
              type_name: 'Query',
              field_name: 'countries',
              disable_default_mapping: false,
              path: ['countries'],
            },
          ],
          data_sources: [
            {
              kind: 'GraphQL',
              name: 'countries',
              internal: true,
              root_fields: [{ type: 'Query', fields: ['countries'] }],
              config: { url: 'tyk://rs-graphql-proxy/', method: 'POST', headers: {}, body: '' },
            },
          ],
        },
      },
    }),
  ],
  'GraphQL federation: subgraph APIs keeping the slash, in the inline form the dashboard exports': [
    api('rs-users-subgraph', {
      use_keyless: true,
      internal: true,
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        version: '2',
        subgraph: {
          sdl: 'extend type Query { users: [User!]! }\ntype User @key(fields: "id") { id: ID! name: String! }\n',
        },
        // The unused block with its zero values, as the reference's export writes it.
        supergraph: {
          subgraphs: [{ api_id: '', name: '', url: '', sdl: '' }],
          merged_sdl: '',
          global_headers: {},
        },
        playground: { enabled: false, path: '' },
      },
      proxy: {
        target_url: 'http://users.default.svc:4001/query',
        listen_path: '/rs-users-subgraph/',
        disable_strip_slash: true,
      },
    }),
  ],
  'a virtual endpoint with config data': [
    api('rs-virtual', {
      use_keyless: true,
      enable_context_vars: true,
      proxy: proxy('/rs-virtual'),
      config_data: { string: 'string', num: 4 },
      version_data: extended({
        virtual: [
          {
            path: 'virtual',
            method: 'GET',
            function_source_type: 'blob',
            response_function_name: 'handler',
            function_source_uri: b64(
              'function handler(request, session, config) { return TykJsResponse({ Body: config.config_data.string, Code: 200 }, session.meta_data) }',
            ),
            use_session: false,
            proxy_on_error: false,
          },
        ],
      }),
    }),
  ],
  'a TCP API': [
    api('rs-tcp', { protocol: 'tcp', listen_port: 6380, proxy: { target_url: 'tcp://localhost:6379' } }),
  ],
  'gRPC plugins, pre and post': [
    api('rs-grpc', {
      use_keyless: true,
      proxy: proxy('/rs-grpc'),
      custom_middleware: {
        driver: 'grpc',
        pre: [{ name: 'HelloFromPre', path: '' }],
        post: [{ name: 'HelloFromPost', path: '' }],
      },
    }),
  ],
  'a supergraph with subscriptions, its subgraphs inline (09-federation/super_graph)': [
    api('rs-fed-subscriptions', {
      use_keyless: true,
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        version: '2',
        schema:
          'type Query { topProducts(first: Int = 5): [Product] }\ntype Subscription { updatedPrice: Product! stock: [Product!] }\ntype Product { upc: String! name: String! price: Int! reviews: [Review] }\ntype Review { body: String! }',
        engine: { field_configs: [], data_sources: [] },
        type_field_configurations: [],
        subgraph: { sdl: '' },
        supergraph: {
          updated_at: '2022-03-09T16:18:13.802+01:00',
          subgraphs: [
            {
              api_id: 'f6eea60b7fcf4c376769230c0dbaf491',
              name: 'products',
              url: 'tyk://products',
              sdl: 'extend type Query { topProducts(first: Int = 5): [Product] }\nextend type Subscription { updatedPrice: Product! stock: [Product!] }\ntype Product @key(fields: "upc") { upc: String! name: String! price: Int! }',
            },
            {
              api_id: '3f5fda302c18426861b79ba99a7a0d5b',
              name: 'reviews',
              url: 'tyk://reviews',
              sdl: 'type Review { body: String! }\nextend type Product @key(fields: "upc") { upc: String! @external reviews: [Review] }',
            },
          ],
          global_headers: {},
        },
        playground: { enabled: true, path: '/playground' },
      },
      proxy: { target_url: '', strip_listen_path: true, listen_path: '/rs-fed-subscriptions/' },
    }),
  ],
  'a supergraph naming its subgraph APIs (subgraphs_refs, the earlier form)': [
    api('rs-fed-users', {
      use_keyless: true,
      internal: true,
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        version: '2',
        subgraph: {
          sdl: 'extend type Query { users: [User!]! }\ntype User @key(fields: "id") { id: ID! name: String! }\n',
        },
      },
      proxy: {
        target_url: 'http://users.default.svc:4001/query',
        listen_path: '/rs-fed-users/',
        disable_strip_slash: true,
      },
    }),
    api('rs-fed-posts', {
      use_keyless: true,
      internal: true,
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        version: '2',
        subgraph: {
          sdl: 'extend type Query { posts: [Post!]! }\ntype Post { id: ID! title: String! }\nextend type User @key(fields: "id") { id: ID! @external posts: [Post!]! }\n',
        },
      },
      proxy: {
        target_url: 'http://posts.default.svc:4002/query',
        listen_path: '/rs-fed-posts/',
        disable_strip_slash: true,
      },
    }),
    api('rs-fed-super', {
      use_keyless: true,
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        version: '2',
        schema:
          'type Query { users: [User!]! posts: [Post!]! }\ntype User { id: ID! name: String! posts: [Post!]! }\ntype Post { id: ID! title: String! }',
        supergraph: {
          subgraphs_refs: [
            { name: 'rs-fed-users', namespace: 'default' },
            { name: 'rs-fed-posts', namespace: 'default' },
          ],
        },
        playground: { enabled: true, path: '/playground' },
      },
      proxy: { target_url: '', strip_listen_path: true, listen_path: '/rs-fed-super/' },
    }),
  ],
  'internal APIs without a listen path, reached through rewrites (dynamic_auth)': [
    api('rs-entry', {
      use_keyless: true,
      proxy: proxy('/rs-entry'),
      version_data: extended({
        url_rewrites: [
          {
            path: '/{rest}',
            method: 'GET',
            match_pattern: '/(.*)',
            rewrite_to: 'tyk://rs-proxy-internal/$1',
          },
        ],
      }),
    }),
    api('rs-proxy-internal', {
      use_keyless: true,
      internal: true,
      proxy: { target_url: 'http://httpbin.org' },
    }),
  ],
  'OAuth2 client credentials with its policy, and the authorize flow': [
    api('rs-oauth', {
      use_oauth2: true,
      oauth_meta: {
        allowed_access_types: ['client_credentials'],
        allowed_authorize_types: ['token'],
        auth_login_redirect: 'http://localhost',
      },
      proxy: proxy('/rs-oauth'),
    }),
    policy('rs-oauth-policy', ['rs-oauth']),
    api('rs-oauth-code', {
      use_oauth2: true,
      oauth_meta: {
        allowed_access_types: ['client_credentials', 'authorization_code'],
        allowed_authorize_types: ['code'],
        auth_login_redirect: 'http://localhost',
      },
      proxy: proxy('/rs-oauth-code'),
    }),
  ],
};
