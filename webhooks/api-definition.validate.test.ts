import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validateApiDefinition, validateApiDefinitionDelete } from './api-definition.validate.ts';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import {
  apiDefinition,
  configMap,
  oasApi,
  oasDocument,
  operatorContext,
  secret,
  securityPolicy,
} from './testing.ts';

interface Case {
  name: string;
  obj: Record<string, unknown>;
  cluster?: Record<string, unknown>[];
  errors?: FieldError[];
  warnings?: string[];
}

const other = apiDefinition('orders-v1', { proxy: { listen_path: '/orders/', target_url: 'http://o' } });

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
    name: 'use_keyless with two methods names both',
    obj: apiDefinition('orders', { use_basic_auth: true, use_mutual_tls_auth: true }),
    errors: [
      {
        path: 'spec.use_keyless',
        type: 'Forbidden',
        message:
          'use_keyless excludes authentication, but use_basic_auth, use_mutual_tls_auth are true: set use_keyless to false, or turn use_basic_auth and use_mutual_tls_auth off',
      },
    ],
  },
  {
    name: 'target_url is required without GraphQL',
    obj: apiDefinition('orders', { proxy: { listen_path: '/orders/' } }),
    errors: [
      {
        path: 'spec.proxy.target_url',
        type: 'Required',
        message:
          'set the upstream address, such as http://<service>.<namespace>.svc:<port>, or enable GraphQL (graphql.enabled: true)',
      },
    ],
  },
  {
    name: 'target_url may be empty when GraphQL is enabled',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/' },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { user(id: ID!): User } type User { id: ID! }',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'user',
            data_source: {
              kind: 'HTTPJSONDataSource',
              data_source_config: {
                url: 'http://users.default.svc:8080/users/{{ .arguments.id }}',
                method: 'GET',
              },
            },
          },
        ],
      },
    }),
  },
  {
    name: 'target_url without a scheme',
    obj: apiDefinition('orders', {
      proxy: { listen_path: '/orders/', target_url: 'orders.default.svc:8080' },
    }),
    errors: [
      {
        path: 'spec.proxy.target_url',
        type: 'Invalid',
        message:
          '"orders.default.svc:8080" has the scheme "orders.default.svc": use http, https, h2c, tcp, tls, ws, wss',
      },
    ],
  },
  {
    name: 'target_url that is not a URL',
    obj: apiDefinition('orders', { proxy: { listen_path: '/orders/', target_url: 'not a url' } }),
    errors: [
      {
        path: 'spec.proxy.target_url',
        type: 'Invalid',
        message:
          '"not a url" is not an absolute URL: write the scheme and host, such as http://orders.default.svc:8080',
      },
    ],
  },
  {
    name: 'a TCP target is valid',
    obj: apiDefinition('db', {
      protocol: 'tcp',
      listen_port: 5432,
      proxy: { listen_path: '/db/', target_url: 'tcp://db:5432' },
    }),
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
    name: 'the same listen path and domain (case-insensitive) conflict',
    obj: apiDefinition('orders', {
      domain: 'API.example.com',
      proxy: { listen_path: '/orders/', target_url: 'http://o' },
    }),
    cluster: [
      apiDefinition('orders-v1', {
        domain: 'api.example.com',
        proxy: { listen_path: '/orders/', target_url: 'http://o' },
      }),
    ],
    errors: [
      {
        path: 'spec.proxy.listen_path',
        type: 'Invalid',
        message:
          'listen path "/orders/" on domain "API.example.com" is already claimed by ApiDefinition default/orders-v1 on the same gateway: choose another listen path or domain',
      },
    ],
  },
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
    name: 'executionEngine needs a schema; data source URLs must be URLs',
    obj: apiDefinition('users', {
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'a',
            data_source: {
              kind: 'HTTPJSONDataSource',
              data_source_config: { url: 'users/{{ .arguments.id }}' },
            },
          },
          {
            type_name: 'Query',
            field_name: 'b',
            data_source: { kind: 'GraphQLDataSource', data_source_config: { url: 'http://x/{{ .object.id' } },
          },
          {
            type_name: 'Query',
            field_name: 'c',
            data_source: { kind: 'GraphQLDataSource', data_source_config: { url: 'ftp://x/graphql' } },
          },
        ],
      },
    }),
    errors: [
      {
        path: 'spec.graphql.schema',
        type: 'Required',
        message:
          'execution_mode executionEngine needs the GraphQL schema (SDL) of the API: set graphql.schema',
      },
      {
        path: 'spec.graphql.type_field_configurations[0].data_source.data_source_config.url',
        type: 'Invalid',
        message:
          '"users/{{ .arguments.id }}" is not an absolute http(s) URL: write the scheme and host, such as http://users.default.svc:8080/graphql',
      },
      {
        path: 'spec.graphql.type_field_configurations[1].data_source.data_source_config.url',
        type: 'Invalid',
        message:
          '"http://x/{{ .object.id" has an unbalanced template: close each {{ with }}, such as {{ .object.id }}',
      },
      {
        path: 'spec.graphql.type_field_configurations[2].data_source.data_source_config.url',
        type: 'Invalid',
        message: '"ftp://x/graphql" has the scheme "ftp": data sources are called over http or https',
      },
    ],
  },
  {
    name: 'an unknown data source kind is not supported',
    obj: apiDefinition('users', {
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { a: String }',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'a',
            data_source: { kind: 'RESTDataSource', data_source_config: { url: 'http://x' } },
          },
        ],
      },
    }),
    errors: [
      {
        path: 'spec.graphql.type_field_configurations[0].data_source.kind',
        type: 'NotSupported',
        message: '"RESTDataSource": use GraphQLDataSource or HTTPJSONDataSource',
      },
    ],
  },
  {
    name: 'data sources in proxyOnly mode are unused (warning)',
    obj: apiDefinition('users', {
      graphql: {
        enabled: true,
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
          'listen_port needs a protocol: set protocol to http, https, h2c, tcp or tls, or remove listen_port',
      },
    ],
  },
  {
    name: 'enable_jwt needs a signing method and a source',
    obj: apiDefinition('orders', { use_keyless: false, enable_jwt: true }),
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
    obj: apiDefinition('orders', {
      use_keyless: false,
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: 'https://idp.example.com/.well-known/jwks.json',
      contextRef: { name: 'team-a' },
      certificate_secret_names: ['orders-tls', 'present-tls'],
      jwt_default_policies: [{ name: 'basic', namespace: 'policies' }],
    }),
    cluster: [secret('present-tls', ['tls.crt', 'tls.key'])],
    warnings: [
      'spec.contextRef: OperatorContext default/team-a does not exist yet: the operator waits for it before it reconciles this resource',
      'spec.certificate_secret_names[0]: Secret default/orders-tls does not exist yet: the API is served without that certificate until it does',
      'spec.jwt_default_policies[0]: SecurityPolicy policies/basic does not exist yet: tokens without a policy claim get no policy until it does',
    ],
  },
];

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
