import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkApi } from './check.ts';
import { api, env } from './testing.ts';

const cases: { name: string; def: unknown; want: string[] }[] = [
  {
    name: 'fields of the classic model not supported yet: each named, all at once (the webhook rule)',
    def: api(
      {
        enable_batch_request_support: true,
        session_lifetime: 30,
        version_data: {
          not_versioned: true,
          versions: {
            Default: {
              name: 'Default',
              extended_paths: { transform_jq: [{ path: '/a', filter: '.' }] },
            },
          },
        },
      },
      { transport: { ssl_max_version: 772 } },
    ),
    want: [
      'enable_batch_request_support: not supported by svc yet',
      'proxy.transport.ssl_max_version: not supported by svc yet',
      'session_lifetime: not supported by svc yet',
      'version_data.versions.Default.extended_paths.transform_jq: not supported by svc yet',
    ],
  },
  {
    name: 'neutral values of fields not supported yet are accepted',
    def: api(
      {
        enable_batch_request_support: false,
        CORS: { enable: false, max_age: 24 },
        version_data: {
          versions: { Default: { name: 'Default', paths: { black_list: [], ignored: [], white_list: [] } } },
        },
      },
      { target_list: [] },
    ),
    want: [],
  },
  { name: 'a target without a scheme is http', def: api({}, { target_url: 'httpbin.org' }), want: [] },
  {
    name: 'settings the gateway would store and not apply are refused when written (shared rules)',
    def: api({
      graphql: { enabled: true, execution_mode: 'proxyOnly' },
      cache_options: { enable_cache: true },
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              validate_json: [{ path: '/u', method: 'POST', schema: { type: 'object', pattern: '(' } }],
              advance_cache_config: [{ path: '/u', method: 'PUT' }],
            },
          },
        },
      },
    }),
    want: [
      'graphql.schema: Required value: a proxyOnly GraphQL API checks each query against the GraphQL schema (SDL) of its upstream, which svc does not fetch by introspection: set graphql.schema, or set graphql.enabled to false to proxy it as plain HTTP',
      'version_data.versions.Default.extended_paths.advance_cache_config[0].method: not supported by svc yet: caching "PUT" answers (the cache stores answers to the safe methods GET, HEAD and OPTIONS only: every request of a method with side effects reaches the upstream); set method to GET, HEAD or OPTIONS, or remove the entry',
      'version_data.versions.Default.extended_paths.validate_json[0].schema: Invalid value: the JSON Schema does not compile: Invalid regular expression: /(/u: Unterminated group',
    ],
  },
];

for (const c of cases) {
  test(`checkApi: ${c.name}`, () => {
    assert.deepEqual(checkApi(c.def, env).sort(), c.want);
  });
}
