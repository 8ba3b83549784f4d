import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validateApiDefinition, validateApiDefinitionDelete } from './api-definition.validate.ts';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { GATEWAY_LABEL } from '../schemas/rules/secret-refs.ts';
import { apiDefinition, configMap, oasApi, oasDocument, operatorContext, securityPolicy } from './testing.ts';

interface Case {
  name: string;
  obj: Record<string, unknown>;
  cluster?: Record<string, unknown>[];
  errors?: FieldError[];
  warnings?: string[];
}

const other = apiDefinition('orders-v1', { proxy: { listen_path: '/orders/', target_url: 'http://o' } });

/** `obj` as the operator generates it for a Gateway: labelled with the Gateway's name. */
function gatewayLabelled(obj: Record<string, unknown>): Record<string, unknown> {
  const metadata = obj.metadata as Record<string, unknown>;
  return { ...obj, metadata: { ...metadata, labels: { [GATEWAY_LABEL]: 'shop' } } };
}

const cases: Case[] = [
  { name: 'a keyless API is valid', obj: apiDefinition('orders') },
  {
    name: 'an auth-token API is valid',
    obj: apiDefinition('orders', { use_keyless: false, use_standard_auth: true }),
  },
  {
    name: 'use_keyless with auth token is forbidden',
    obj: apiDefinition('orders', { use_standard_auth: true }),
    errors: [
      {
        path: 'spec.use_keyless',
        type: 'Forbidden',
        message:
          'use_keyless excludes authentication, but use_standard_auth is true: set use_keyless to false, or turn use_standard_auth off',
      },
    ],
  },
  {
    name: 'use_keyless with two methods names both (static mutual TLS goes with keyless)',
    obj: apiDefinition('orders', { use_basic_auth: true, enable_jwt: true, use_mutual_tls_auth: true }),
    errors: [
      {
        path: 'spec.use_keyless',
        type: 'Forbidden',
        message:
          'use_keyless excludes authentication, but use_basic_auth, enable_jwt are true: set use_keyless to false, or turn use_basic_auth and enable_jwt off',
      },
    ],
  },
  {
    name: 'target_url is required',
    obj: apiDefinition('orders', { proxy: { listen_path: '/orders/' } }),
    errors: [
      {
        path: 'spec.proxy.target_url',
        type: 'Required',
        message: 'set the upstream address, such as http://<service>.<namespace>.svc:<port>',
      },
    ],
  },
  {
    name: 'GraphQL with the execution engine needs no target_url',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/' },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { user(id: ID!): User } type User { id: ID! }',
      },
    }),
  },
  {
    name: 'a GraphQL schema that does not parse is refused with its line and column',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/', target_url: 'http://orders.default.svc:8080' },
      graphql: {
        enabled: true,
        execution_mode: 'proxyOnly',
        schema: 'type Query {\n  user(id: ID!: User\n}',
      },
    }),
    errors: [
      {
        path: 'spec.graphql.schema',
        type: 'Invalid',
        message: 'the schema does not parse: line 2, column 15: Syntax Error: Expected Name, found ":".',
      },
    ],
  },
  {
    name: 'a proxyOnly GraphQL API without its schema is refused (svc does not introspect)',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/', target_url: 'http://orders.default.svc:8080' },
      graphql: { enabled: true, execution_mode: 'proxyOnly' },
    }),
    errors: [
      {
        path: 'spec.graphql.schema',
        type: 'Required',
        message:
          'a proxyOnly GraphQL API checks each query against the GraphQL schema (SDL) of its upstream, which svc does not fetch by introspection: set graphql.schema, or set graphql.enabled to false to proxy it as plain HTTP',
      },
    ],
  },
  {
    name: 'internal endpoints and svc://self are accepted; an internal path that is no regular expression is refused by path',
    obj: apiDefinition('orders', {
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              internal: [{ path: '/private/{id}', method: 'GET' }, { path: '/a(' }],
              url_rewrites: [{ path: '/p', match_pattern: '/p/(\\w+)', rewrite_to: 'svc://self/private/$1' }],
            },
          },
        },
      },
    }),
    errors: [
      {
        path: 'spec.version_data.versions.Default.extended_paths.internal[1].path',
        type: 'Invalid',
        message:
          '"/a(" is not a valid regular expression: escape special characters such as ( [ ? with a backslash',
      },
    ],
  },
  {
    name: 'a validate_json schema that does not compile, and caching a POST, are refused by path',
    obj: apiDefinition('orders', {
      cache_options: { enable_cache: true },
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              validate_json: [{ path: '/users', method: 'POST', schema: { type: 'strin' } }],
              advance_cache_config: [{ path: '/users', method: 'POST' }],
            },
          },
        },
      },
    }),
    errors: [
      {
        path: 'spec.version_data.versions.Default.extended_paths.advance_cache_config[0].method',
        type: 'NotSupportedYet',
        message:
          'not supported by svc yet: caching "POST" answers (the cache stores answers to the safe methods GET, HEAD and OPTIONS only: every request of a method with side effects reaches the upstream); set method to GET, HEAD or OPTIONS, or remove the entry',
      },
      {
        path: 'spec.version_data.versions.Default.extended_paths.validate_json[0].schema',
        type: 'Invalid',
        message: 'the JSON Schema does not compile: type must be JSONType or JSONType[]: strin',
      },
    ],
  },
  {
    name: 'a data source naming a field the schema lacks is refused',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/' },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { user(id: ID!): String }',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'users',
            data_source: {
              kind: 'HTTPJSONDataSource',
              data_source_config: { url: 'http://users/{{ .arguments.id }}' },
            },
          },
          {
            type_name: 'Mutation',
            field_name: 'x',
            data_source: { kind: 'GraphQLDataSource', data_source_config: { url: 'http://x/graphql' } },
          },
        ],
      },
    }),
    errors: [
      {
        path: 'spec.graphql.type_field_configurations[0].field_name',
        type: 'Invalid',
        message: '"Query" has no field "users" in graphql.schema',
      },
      {
        path: 'spec.graphql.type_field_configurations[1].type_name',
        type: 'Invalid',
        message: '"Mutation" is not an object type of graphql.schema',
      },
    ],
  },
  {
    name: 'a target_url without a scheme means http, as on the gateway',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/', target_url: 'orders.default.svc:8080' },
    }),
  },
  {
    name: 'httpbin.org is http://httpbin.org',
    obj: apiDefinition('bin', { proxy: { listen_path: '/bin/', target_url: 'httpbin.org' } }),
  },
  {
    name: 'target_url that is not a URL',
    obj: apiDefinition('orders', { proxy: { listen_path: '/orders/', target_url: 'not a url' } }),
    errors: [
      {
        path: 'spec.proxy.target_url',
        type: 'Invalid',
        message:
          '"not a url" is not a URL: write the upstream address, such as http://orders.default.svc:8080',
      },
    ],
  },
  ...['tcp://db:5432', 'tls://db:5432', 'h2c://grpc:50051', 'ws://chat:80', 'wss://chat:443'].map(
    (target): Case => ({
      name: `a ${target.split(':')[0] ?? ''} target is not supported (the gateway refuses it)`,
      obj: apiDefinition('db', { proxy: { listen_path: '/db/', target_url: target } }),
      errors: [
        {
          path: 'spec.proxy.target_url',
          type: 'NotSupported',
          message: `${JSON.stringify(target)}: the scheme ${JSON.stringify(target.split(':')[0])} is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080`,
        },
      ],
    }),
  ),
  {
    name: 'protocol h2c is not supported',
    obj: apiDefinition('db', { protocol: 'h2c', listen_port: 5432 }),
    errors: [
      {
        path: 'spec.protocol',
        type: 'NotSupported',
        message:
          'this listener protocol is not supported yet by this gateway: set protocol to http, https, tcp or tls, or leave it empty to serve on the gateway port',
      },
    ],
  },
  ...['/hello', '/ready/', '/svc/x'].map((lp): Case => ({
    name: `listen path ${lp} is the gateway's management API's`,
    obj: apiDefinition('mgmt', { proxy: { listen_path: lp, target_url: 'http://m' } }),
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message: `${JSON.stringify(lp)}: the gateway's management API answers /${lp.split('/')[1] ?? ''} and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`,
      },
    ],
  })),
  {
    name: 'a reserved path on a listen_port of its own is fine',
    obj: apiDefinition('mgmt', {
      protocol: 'http',
      listen_port: 9000,
      proxy: { listen_path: '/hello/', target_url: 'http://m' },
    }),
  },
  {
    name: 'a listen path that is not canonical',
    obj: apiDefinition('p', { proxy: { listen_path: '/p/./', target_url: 'http://p' } }),
    cluster: [apiDefinition('p-v1', { proxy: { listen_path: '/p/', target_url: 'http://p' } })],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message: '"/p/./" has a "." or ".." segment: write the path it stands for, "/p/"',
      },
    ],
  },
  {
    name: "proxy.disable_strip_slash is served: the target's trailing slash kept (the reference's subgraph samples)",
    obj: apiDefinition('users', {
      internal: true,
      proxy: {
        listen_path: '/users-subgraph/',
        target_url: 'http://users.default.svc:4001/query/',
        disable_strip_slash: true,
      },
    }),
  },
  {
    name: 'a subgraph API with the supergraph block the reference exports, nothing set, is admitted',
    obj: apiDefinition('reviews', {
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        subgraph: { sdl: 'type Review @key(fields: "id") { id: ID! }\ntype Query { reviews: [Review] }' },
        supergraph: {
          subgraphs: [{ api_id: '', name: '', url: '', sdl: '' }],
          merged_sdl: '',
          global_headers: {},
        },
      },
    }),
  },
  {
    name: 'settings the gateway does not enforce yet are refused by name',
    obj: apiDefinition('orders', {
      use_openid: true,
      // Served (detailed analytics records): admitted beside the refused field.
      enable_detailed_recording: true,
    }),
    errors: [{ path: 'spec.use_openid', type: 'NotSupportedYet', message: 'not supported by svc yet' }],
  },
  {
    name: 'a virtual endpoint is served; its function name and source are checked',
    obj: apiDefinition('orders', {
      version_data: {
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              virtual: [
                {
                  path: '/a',
                  response_function_name: 'f',
                  function_source_type: 'blob',
                  function_source_uri: 'ZnVuY3Rpb24gZigpIHt9',
                },
                {
                  path: '/b',
                  response_function_name: 'f',
                  function_source_type: 'file',
                  function_source_uri: '../f.js',
                },
              ],
            },
          },
        },
      },
    }),
    errors: [
      {
        path: 'spec.version_data.versions.Default.extended_paths.virtual[1].function_source_uri',
        type: 'Invalid',
        message:
          '"../f.js": the file stays inside the gateway\'s plugin_dir: remove "..", "." and empty segments',
      },
    ],
  },
  {
    name: 'endpoint lists, mock replies and size limits are served; a bad path is refused by path',
    obj: apiDefinition('orders', {
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            global_size_limit: 1024,
            paths: { ignored: ['/health'], white_list: [], black_list: ['/users/('] },
            extended_paths: {
              ignored: [{ path: '/status', method_actions: { GET: { action: 'no_action', code: 200 } } }],
              white_list: [{ path: '/users/{id}', method_actions: { GET: { action: 'reply', code: 200 } } }],
              size_limits: [{ path: '/upload', method: 'POST', size_limit: 10 }],
              transform_headers: [],
            },
          },
        },
      },
    }),
    errors: [
      {
        path: 'spec.version_data.versions.Default.paths.black_list[0]',
        type: 'Invalid',
        message:
          '"/users/(" is not a valid regular expression: escape special characters such as ( [ ? with a backslash',
      },
    ],
  },
  {
    name: 'chained authentication: every method runs, the base identity decides',
    obj: apiDefinition('orders', {
      use_keyless: false,
      use_standard_auth: true,
      use_basic_auth: true,
      base_identity_provided_by: 'basic_auth_user',
    }),
  },
  {
    name: 'chained authentication without a base identity is a warning',
    obj: apiDefinition('orders', { use_keyless: false, use_standard_auth: true, use_basic_auth: true }),
    warnings: [
      'spec.base_identity_provided_by: auth_token, basic_auth_user all run and must all pass; without base_identity_provided_by the session of the last one (basic_auth_user) is used: name the method whose key decides access and limits',
    ],
  },
  {
    name: 'the base identity names a method the API runs',
    obj: apiDefinition('orders', {
      use_keyless: false,
      use_standard_auth: true,
      base_identity_provided_by: 'jwt_claim',
    }),
    errors: [
      {
        path: 'spec.base_identity_provided_by',
        type: 'Invalid',
        message:
          '"jwt_claim" names a method this API does not run (it runs auth_token): turn enable_jwt on, or name one of those',
      },
    ],
  },
  {
    name: 'basic authentication with credentials in the body',
    obj: apiDefinition('orders', {
      use_keyless: false,
      use_basic_auth: true,
      basic_auth: {
        extract_from_body: true,
        body_user_regexp: '<u>(.*)</u>',
        body_password_regexp: '<p>.*</p>',
      },
    }),
    errors: [
      {
        path: 'spec.basic_auth.body_password_regexp',
        type: 'Invalid',
        message:
          '"<p>.*</p>" has 0 capturing groups: write exactly one, around the password, such as <password>(.*)</password> (make other groups non-capturing: (?:...))',
      },
    ],
  },
  {
    name: 'a domain that is not a host name',
    obj: apiDefinition('orders', { domain: 'api_example.com' }),
    errors: [
      {
        path: 'spec.domain',
        type: 'Invalid',
        message:
          '"api_example.com" is not a host name: write one such as api.example.com, or *.example.com for its subdomains',
      },
    ],
  },
  {
    name: 'listen_path must start with a slash (the rule wins over the schema pattern)',
    obj: apiDefinition('orders', { proxy: { listen_path: 'orders/', target_url: 'http://o' } }),
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message: '"orders/" must start with "/", such as "/orders/"',
      },
    ],
  },
  {
    name: 'valid IPs and CIDRs, v4 and v6',
    obj: apiDefinition('orders', {
      enable_ip_whitelisting: true,
      allowed_ips: ['192.0.2.10', '10.0.0.0/8', '2001:db8::/32', '::1'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['203.0.113.0/24'],
    }),
  },
  {
    name: 'wildcards and bad addresses are refused, each at its index',
    obj: apiDefinition('orders', {
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.*', '10.0.0.1/33', 'localhost'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['203.0.113.0/24', '*'],
    }),
    errors: [
      {
        path: 'spec.allowed_ips[0]',
        type: 'Invalid',
        message:
          '"10.0.0.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
      },
      {
        path: 'spec.allowed_ips[1]',
        type: 'Invalid',
        message: '"10.0.0.1/33" is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8',
      },
      {
        path: 'spec.allowed_ips[2]',
        type: 'Invalid',
        message: '"localhost" is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8',
      },
      {
        path: 'spec.blacklisted_ips[1]',
        type: 'Invalid',
        message: '"*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
      },
    ],
  },
  {
    name: 'an enabled allow list that is empty refuses everyone (warning)',
    obj: apiDefinition('orders', { enable_ip_whitelisting: true }),
    warnings: [
      'spec.allowed_ips: enable_ip_whitelisting is true but allowed_ips is empty: every client is refused',
    ],
  },
  {
    name: 'a block list that is not enabled is ignored (warning)',
    obj: apiDefinition('orders', { blacklisted_ips: ['203.0.113.7'] }),
    warnings: [
      'spec.enable_ip_blacklisting: blacklisted_ips is set but enable_ip_blacklisting is not true: the list is ignored',
    ],
  },
  {
    name: 'the same listen path on the same gateway names the other API',
    obj: apiDefinition('orders', { proxy: { listen_path: '/orders', target_url: 'http://o' } }),
    cluster: [other],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message:
          'listen path "/orders" (no domain) is already claimed by ApiDefinition default/orders-v1 on the same gateway: choose another listen path or domain',
      },
    ],
  },
  {
    name: 'the same listen path as an OAS API (read from its document)',
    obj: apiDefinition('petstore', { proxy: { listen_path: '/petstore/', target_url: 'http://p' } }),
    cluster: [oasApi('pets', 'pets-oas'), configMap('pets-oas', { 'oas.yaml': oasDocument() })],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message:
          'listen path "/petstore/" (no domain) is already claimed by SvcOasApiDefinition default/pets on the same gateway: choose another listen path or domain',
      },
    ],
  },
  {
    name: 'the same listen path on another domain is fine',
    obj: apiDefinition('orders', {
      domain: 'api.example.com',
      proxy: { listen_path: '/orders/', target_url: 'http://o' },
    }),
    cluster: [other],
  },
  {
    name: 'a listen path in other capitals or without its trailing slash claims the same route',
    obj: apiDefinition('orders', { proxy: { listen_path: '/Orders', target_url: 'http://o' } }),
    cluster: [other],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message:
          'listen path "/Orders" (no domain) is already claimed by ApiDefinition default/orders-v1 on the same gateway: choose another listen path or domain',
      },
    ],
  },
  ...[
    ['//orders/', '"//orders/" has an empty segment ("//"): write "/orders/"'],
    ['/orders/./', '"/orders/./" has a "." or ".." segment: write the path it stands for, "/orders/"'],
    [
      '/orders%2F',
      '"/orders%2F" has a percent-encoded character: listen paths are compared with request paths as clients send them, so write the characters themselves, such as "/orders/"',
    ],
  ].map(([lp = '', message = '']): Case => ({
    name: `${lp} can't sit beside /orders/: it is refused as not canonical`,
    obj: apiDefinition('orders', { proxy: { listen_path: lp, target_url: 'http://o' } }),
    cluster: [other],
    errors: [{ path: 'spec.proxy.listen_path', type: 'Invalid', message }],
  })),
  ...[
    ['API.example.com', 'api.example.com'],
    ['api.example.com.', 'API.example.com:8443'],
  ].map(([mine = '', theirs = '']): Case => ({
    name: `domain ${mine} is domain ${theirs} (case, port and final dot ignored)`,
    obj: apiDefinition('orders', {
      domain: mine,
      proxy: { listen_path: '/orders/', target_url: 'http://o' },
    }),
    cluster: [
      apiDefinition('orders-v1', {
        domain: theirs,
        proxy: { listen_path: '/orders/', target_url: 'http://o' },
      }),
    ],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message: `listen path "/orders/" on domain ${JSON.stringify(mine)} is already claimed by ApiDefinition default/orders-v1 on the same gateway: choose another listen path or domain`,
      },
    ],
  })),
  {
    name: 'the same listen path on another gateway (OperatorContext) is fine',
    obj: apiDefinition('orders', {
      contextRef: { name: 'team-b' },
      proxy: { listen_path: '/orders/', target_url: 'http://o' },
    }),
    cluster: [other, operatorContext('team-b', { env: { mode: 'ce' } })],
  },
  {
    name: 'an update of the API itself does not conflict with its stored version',
    obj: apiDefinition('orders-v1', { proxy: { listen_path: '/orders/', target_url: 'http://o2' } }),
    cluster: [other],
  },
  {
    name: 'data sources in proxyOnly mode are unused (warning)',
    obj: apiDefinition('users', {
      graphql: {
        enabled: false,
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'a',
            data_source: { kind: 'GraphQLDataSource', data_source_config: { url: 'http://x/graphql' } },
          },
        ],
      },
    }),
    warnings: [
      'spec.graphql.type_field_configurations: data sources are used only when execution_mode is executionEngine',
    ],
  },
  {
    name: 'listen_port needs a protocol',
    obj: apiDefinition('orders', { listen_port: 8443 }),
    errors: [
      {
        path: 'spec.protocol',
        type: 'Required',
        message:
          'listen_port needs a protocol: set protocol to http, https, tcp or tls, or remove listen_port',
      },
    ],
  },
  {
    name: 'JWT needs a signing method and a source (as in CEL)',
    obj: apiDefinition('orders', { use_keyless: false, enable_jwt: true, jwt_default_policies: [] }),
    errors: [
      {
        path: 'spec.jwt_signing_method',
        type: 'Required',
        message: 'enable_jwt needs the signing method: set hmac, rsa or ecdsa',
      },
      {
        path: 'spec.jwt_source',
        type: 'Required',
        message:
          'enable_jwt needs the key that verifies tokens: set a base64 secret, a PEM public key or a JWKS URL',
      },
    ],
    warnings: [
      'spec.jwt_default_policies: no policy source: every token is refused (403 key not authorized: no matching policy); set jwt_policy_field_name, jwt_default_policies or jwt_scope_to_policy_mapping',
    ],
  },
  {
    name: 'JWT with a JWKS is admitted',
    obj: apiDefinition('orders', {
      use_keyless: false,
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: 'https://idp.example.com/.well-known/jwks.json',
      jwt_policy_field_name: 'pol',
    }),
  },
  {
    name: 'a JWT source that does not fit the signing method',
    obj: apiDefinition('orders', {
      use_keyless: false,
      enable_jwt: true,
      jwt_signing_method: 'hmac',
      jwt_source: 'https://idp.example.com/.well-known/jwks.json',
      jwt_policy_field_name: 'pol',
    }),
    errors: [
      {
        path: 'spec.jwt_source',
        type: 'Invalid',
        message:
          'a JWKS publishes public keys, never HMAC secrets: write the base64 of the secret, or set jwt_signing_method to rsa or ecdsa',
      },
    ],
  },
  {
    name: 'schema problems are listed with the rules, each with its path',
    obj: apiDefinition('orders', { protocol: 'ftp', listen_port: '8080', use_keyles: true }),
    errors: [
      { path: 'spec.listen_port', type: 'Invalid', message: 'wrong type: must be integer' },
      {
        path: 'spec.protocol',
        type: 'NotSupported',
        message: 'must be one of "", "http", "https", "h2c", "tcp", "tls"',
      },
      {
        path: 'spec.use_keyles',
        type: 'Forbidden',
        message: 'unknown field: remove it, or check its spelling and nesting',
      },
    ],
  },
  {
    name: 'references to objects that do not exist yet are warnings',
    obj: gatewayLabelled(
      apiDefinition('orders', {
        use_keyless: false,
        jwt_signing_method: 'rsa',
        jwt_source: 'https://idp.example.com/.well-known/jwks.json',
        contextRef: { name: 'team-a' },
        jwt_default_policies: [{ name: 'basic', namespace: 'policies' }],
        // A Secret of another namespace (an API generated for a Gateway listener): looked up there.
        certificate_secret_names: ['orders-tls', 'certs/shared-tls'],
      }),
    ),
    warnings: [
      'spec.contextRef: OperatorContext default/team-a does not exist yet: the operator waits for it before it reconciles this resource',
      'spec.certificate_secret_names[0]: Secret default/orders-tls does not exist yet: the API is not served until it does',
      'spec.certificate_secret_names[1]: Secret certs/shared-tls does not exist yet: the API is not served until it does',
      'spec.jwt_default_policies[0]: SecurityPolicy policies/basic does not exist yet: tokens without a policy claim get no policy until it does',
    ],
  },
  {
    name: 'a Secret of another namespace on an API no Gateway generated is refused, as the operator would refuse it',
    obj: apiDefinition('orders', {
      certificate_secret_names: ['orders-tls', 'certs/shared-tls', 'default/own-tls'],
    }),
    errors: [
      {
        path: 'spec.certificate_secret_names[1]',
        type: 'Forbidden',
        message:
          'only an API generated for a Gateway (label svc.io/gateway) may name a Secret of another namespace: name a Secret of namespace default',
      },
    ],
    warnings: [
      'spec.certificate_secret_names[0]: Secret default/orders-tls does not exist yet: the API is not served until it does',
      'spec.certificate_secret_names[1]: Secret certs/shared-tls does not exist yet: the API is not served until it does',
      'spec.certificate_secret_names[2]: Secret default/own-tls does not exist yet: the API is not served until it does',
    ],
  },
  {
    name: 'certificates by Secret: Secrets that do not exist yet are warnings, each at its field',
    obj: apiDefinition('orders', {
      use_mutual_tls_auth: true,
      client_certificate_refs: ['orders-client'],
      upstream_certificate_refs: { '*': 'orders-upstream' },
      pinned_public_keys_refs: { 'orders.example': 'orders-pin' },
      proxy: { listen_path: '/orders/', target_url: 'https://orders.example' },
    }),
    warnings: [
      'spec.client_certificate_refs[0]: Secret default/orders-client does not exist yet: the API is not served until it does',
      'spec.upstream_certificate_refs["*"]: Secret default/orders-upstream does not exist yet: the API is not served until it does',
      'spec.pinned_public_keys_refs["orders.example"]: Secret default/orders-pin does not exist yet: the API is not served until it does',
    ],
  },
  {
    name: 'certificates by Secret: hosts and Secret names are checked at their fields',
    obj: apiDefinition('orders', {
      use_mutual_tls_auth: true,
      client_certificate_refs: ['Orders_Client'],
      upstream_certificates: { 'orders.example': `org-1${'a'.repeat(64)}` },
      upstream_certificate_refs: { 'orders.example': 'orders-upstream', 'https://x.example': 'x-upstream' },
      pinned_public_keys_refs: { 'orders.example:443': 'orders-pin' },
      proxy: { listen_path: '/orders/', target_url: 'https://orders.example' },
    }),
    cluster: ['Orders_Client', 'orders-upstream', 'x-upstream', 'orders-pin'].map((name) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: 'default' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': '', 'tls.key': '' },
    })),
    errors: [
      {
        path: 'spec.client_certificate_refs[0]',
        type: 'Invalid',
        message: 'must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      },
      {
        path: 'spec.pinned_public_keys_refs["orders.example:443"]',
        type: 'Invalid',
        message:
          '"orders.example:443" is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)',
      },
      {
        path: 'spec.upstream_certificate_refs["https://x.example"]',
        type: 'Invalid',
        message:
          '"https://x.example" is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)',
      },
      {
        path: 'spec.upstream_certificate_refs["orders.example"]',
        type: 'Invalid',
        message:
          '"orders.example" has a certificate in upstream_certificates too: a host is presented one certificate; keep one of the two entries',
      },
    ],
  },
  {
    name: "a tcp API as the reference operator's sample writes it is valid (no listen path, no auth)",
    obj: tcpApiDefinition('sessions', 7000),
  },
  {
    name: 'a tls API with its certificate from a Secret is valid',
    obj: tcpApiDefinition('sessions', 7000, {
      protocol: 'tls',
      certificate_secret_names: ['sessions-tls'],
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8'],
      global_rate_limit: { rate: 100, per: 1 },
    }),
    cluster: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'sessions-tls', namespace: 'default' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': '', 'tls.key': '' },
      },
    ],
  },
  {
    name: 'a tcp API: what a connection cannot honour is refused by name',
    obj: tcpApiDefinition('sessions', 7000, {
      use_keyless: false,
      use_standard_auth: true,
      certificate_secret_names: ['sessions-tls'],
      proxy: {
        listen_path: '/sessions/',
        target_url: 'tcp://sessions.default.svc:6379',
        strip_listen_path: true,
      },
    }),
    errors: [
      {
        path: 'spec.certificate_secret_names',
        type: 'Forbidden',
        message: tcpForbidden('certificate_secret_names'),
      },
      {
        path: 'spec.proxy.listen_path',
        type: 'Forbidden',
        message: 'a tcp API is reached on its listen_port, not by a path: remove the listen path',
      },
      {
        path: 'spec.proxy.strip_listen_path',
        type: 'Forbidden',
        message: tcpForbidden('proxy.strip_listen_path'),
      },
      { path: 'spec.use_standard_auth', type: 'Forbidden', message: tcpForbidden('use_standard_auth') },
    ],
    warnings: [
      'spec.certificate_secret_names[0]: Secret default/sessions-tls does not exist yet: the API is not served until it does',
    ],
  },
  {
    name: 'a tcp API needs a listen_port and a tcp:// target',
    obj: tcpApiDefinition('sessions', 0, { proxy: { target_url: 'http://sessions.default.svc:6379' } }),
    errors: [
      {
        path: 'spec.listen_port',
        type: 'Required',
        message: 'a tcp API is served on a port of its own: set listen_port, such as 7000',
      },
      {
        path: 'spec.proxy.target_url',
        type: 'NotSupported',
        message:
          '"http://sessions.default.svc:6379": a tcp or tls API proxies to a tcp:// address (the scheme "http" is not supported for it), such as tcp://sessions-store.default.svc:6379',
      },
    ],
  },
  {
    name: 'two tcp APIs on one port: refused on listen_port',
    obj: tcpApiDefinition('sessions', 7000),
    cluster: [tcpApiDefinition('cache', 7000)],
    errors: [
      {
        path: 'spec.listen_port',
        type: 'Invalid',
        message:
          '7000 is already the port of ApiDefinition default/cache on the same gateway: a tcp or tls API has its port alone',
      },
    ],
  },
  {
    name: 'tcp APIs on different ports do not conflict',
    obj: tcpApiDefinition('sessions', 7000),
    cluster: [tcpApiDefinition('cache', 7001)],
  },
];

/** A TCP ApiDefinition as the reference operator's sample writes it. */
function tcpApiDefinition(
  name: string,
  port: number,
  spec: Record<string, unknown> = {},
): Record<string, unknown> {
  const obj = apiDefinition(name, {
    protocol: 'tcp',
    listen_port: port,
    proxy: { target_url: `tcp://${name}.default.svc:6379` },
    ...spec,
  });
  delete (obj.spec as Record<string, unknown>).use_keyless;
  if (!('use_keyless' in spec)) return obj;
  return { ...obj, spec: { ...(obj.spec as object), use_keyless: spec.use_keyless } };
}

/** The refusal of a field a tcp API cannot honour. */
function tcpForbidden(field: string): string {
  return `a tcp API proxies connections, not HTTP requests: ${field} does not apply to them: remove it (what a tcp API honours: listen_port, proxy.target_url, the IP allow and block lists, global_rate_limit per connection; docs/gateway.md, "TCP and TLS APIs")`;
}

describe('validateApiDefinition', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateApiDefinition(c.obj, undefined, memoryLookups(c.cluster ?? []));
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }
});

describe('validateApiDefinitionDelete', () => {
  const api = apiDefinition('orders');
  const deleteCases: { name: string; cluster: Record<string, unknown>[]; errors: FieldError[] }[] = [
    {
      name: 'no policy covers it',
      cluster: [securityPolicy('p', { access_rights_array: [{ name: 'other' }] })],
      errors: [],
    },
    {
      name: 'policies covering it are listed (kind and namespace defaulted)',
      cluster: [
        securityPolicy('gold', { access_rights_array: [{ name: 'orders' }] }),
        securityPolicy(
          'silver',
          { access_rights_array: [{ name: 'orders', namespace: 'default', kind: 'ApiDefinition' }] },
          'plans',
        ),
        securityPolicy('oas', { access_rights_array: [{ name: 'orders', kind: 'SvcOasApiDefinition' }] }),
        securityPolicy('elsewhere', { access_rights_array: [{ name: 'orders' }] }, 'plans'),
      ],
      errors: [
        {
          path: 'metadata.name',
          type: 'Forbidden',
          message:
            'ApiDefinition default/orders is still used by SecurityPolicy default/gold, SecurityPolicy plans/silver: remove it from the access_rights_array of these policies (or delete them) first',
        },
      ],
    },
  ];
  for (const c of deleteCases) {
    test(c.name, async () => {
      const got = await validateApiDefinitionDelete(api, memoryLookups(c.cluster));
      assert.deepEqual(got, { errors: c.errors, warnings: [] });
    });
  }
});
