/**
 * GraphQL through a real gateway, against a real GraphQL upstream (graphql-js) and two JSON
 * upstreams, as tables run with the files and Redis stores, fast path on and off: proxyOnly
 * validation (GET and POST, variables; invalid queries never reach the upstream), introspection
 * off, the key's depth limit and field permissions from a policy (proxyOnly and both forms of
 * the engine), the execution engine over HTTP JSON and GraphQL data sources (nested template URLs,
 * a union chosen by status code, concurrent fetches, an upstream error with its path, a GraphQL
 * source's list joined with a REST child reading the parent's id, aliases at every level), the
 * playground page, and a subscription relayed over WebSocket.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import {
  PLAYGROUND_GRAPHQL,
  refusedUpgrade,
  startGraphqlUpstream,
  startJsonUpstream,
  UPSTREAM_SDL,
  type GraphqlUpstream,
  type TestUpstream,
} from '../graphql/testing.ts';
import { keyed, keyless } from '../testing/harness.ts';
import { describeEachSetup } from '../testing/tables.ts';

let gql: GraphqlUpstream;
let users: TestUpstream;
let posts: TestUpstream;
before(async () => {
  // The users upstream answers after 100 ms, so the concurrent calls of one level overlap even on a
  // loaded machine (the concurrency tests count them).
  [gql, users, posts] = await Promise.all([
    startGraphqlUpstream(),
    startJsonUpstream(100),
    startJsonUpstream(),
  ]);
});
after(async () => {
  await Promise.all([gql.close(), users.close(), posts.close()]);
});

const UDG_SDL = `
type Query { user(id: ID!): User lookup(id: ID!): Lookup hello(name: String): String broken: String users: [User!] }
type User { id: ID! name: String posts: [Post!] }
type Post { id: ID! title: String }
type NotFound { message: String }
union Lookup = User | NotFound
`;

/** The v1 graph's schema, and fields the version 2 tests add. */
const UDG2_SDL = `${UDG_SDL}
extend type Query { echo(id: ID!, tag: String): Echo method: String greet(who: String): String viaApi(id: ID!): User missingApi: String viaKeyed(id: ID!): User }
extend type User { display: String }
type Echo { method: String path: String query: String tag: String global: String contentType: String body: EchoBody }
type EchoBody { id: ID tag: String }
type Subscription { count(to: Int!): Int! userAdded: User! }
`;

/**
 * The version 1 graph (`type_field_configurations`): users by REST, each user's posts by REST from
 * the user's id, a union chosen by status code, and `hello` and the list of `users` from the
 * GraphQL upstream (so a list of a GraphQL source joins the REST posts).
 */
const udg1 = (): Record<string, unknown> => ({
  enabled: true,
  execution_mode: 'executionEngine',
  schema: UDG_SDL,
  type_field_configurations: [
    {
      type_name: 'Query',
      field_name: 'user',
      mapping: { disabled: true },
      data_source: {
        kind: 'HTTPJSONDataSource',
        data_source_config: { url: `${users.url}/users/{{ .arguments.id }}` },
      },
    },
    {
      type_name: 'User',
      field_name: 'posts',
      mapping: { path: 'items' },
      data_source: {
        kind: 'HTTPJSONDataSource',
        data_source_config: { url: `${posts.url}/users/{{.object.id}}/posts`, method: 'GET' },
      },
    },
    {
      type_name: 'Query',
      field_name: 'lookup',
      mapping: { disabled: true },
      data_source: {
        kind: 'HTTPJSONDataSource',
        data_source_config: {
          url: `${users.url}/users/{{.arguments.id}}`,
          default_type_name: 'User',
          status_code_type_name_mappings: [{ status_code: 404, type_name: 'NotFound' }],
        },
      },
    },
    {
      type_name: 'Query',
      field_name: 'hello',
      data_source: {
        kind: 'GraphQLDataSource',
        data_source_config: { url: `${gql.url}/graphql`, method: 'POST' },
      },
    },
    {
      type_name: 'Query',
      field_name: 'users',
      data_source: {
        kind: 'GraphQLDataSource',
        data_source_config: { url: `${gql.url}/graphql`, method: 'POST' },
      },
    },
    {
      type_name: 'Query',
      field_name: 'broken',
      data_source: { kind: 'HTTPJSONDataSource', data_source_config: { url: `${users.url}/fail` } },
    },
  ],
});

/**
 * The version 2 form (`graphql.version: "2"`, `graphql.engine`) of the v1 graph of `udg` (but
 * `lookup`, whose status code mapping v2 has no words for), and more: REST with a method, query
 * parameters, headers and a body from arguments; default mapping by field name; a field mapped
 * from its parent; a GraphQL source with a fixed operation, one with an empty body (as the
 * reference's samples write it), serving `users` too; global headers.
 */
const udg2 = (): Record<string, unknown> => ({
  enabled: true,
  execution_mode: 'executionEngine',
  version: '2',
  schema: UDG2_SDL,
  engine: {
    field_configs: [
      { type_name: 'Query', field_name: 'user', disable_default_mapping: true, path: [] },
      { type_name: 'User', field_name: 'posts', disable_default_mapping: true, path: ['items'] },
      { type_name: 'Query', field_name: 'echo', disable_default_mapping: true },
      { type_name: 'Query', field_name: 'greet', disable_default_mapping: true, path: ['hello'] },
      { type_name: 'User', field_name: 'display', disable_default_mapping: true, path: ['name'] },
      { type_name: 'Query', field_name: 'viaApi', disable_default_mapping: true },
      { type_name: 'Query', field_name: 'viaKeyed', disable_default_mapping: true },
    ],
    data_sources: [
      {
        kind: 'REST',
        name: 'users',
        internal: false,
        root_fields: [{ type: 'Query', fields: ['user'] }],
        config: { url: `${users.url}/users/{{ .arguments.id }}`, method: 'GET', body: '', headers: {} },
      },
      {
        kind: 'REST',
        name: 'posts',
        root_fields: [{ type: 'User', fields: ['posts'] }],
        config: { url: `${posts.url}/users/{{.object.id}}/posts` },
      },
      {
        kind: 'GraphQL',
        name: 'hello',
        // Its subscription too: relayed over WebSocket to the source.
        root_fields: [
          { type: 'Query', fields: ['hello', 'users'] },
          { type: 'Subscription', fields: ['count', 'userAdded'] },
        ],
        // An empty body, as the reference's samples write on GraphQL sources: it sets nothing.
        config: { url: `${gql.url}/graphql`, method: 'POST', body: '' },
      },
      {
        kind: 'REST',
        root_fields: [{ type: 'Query', fields: ['broken'] }],
        config: { url: `${users.url}/fail` },
      },
      {
        kind: 'REST',
        name: 'echo',
        root_fields: [{ type: 'Query', fields: ['echo'] }],
        config: {
          url: `${users.url}/echo/{{.arguments.id}}`,
          method: 'post',
          headers: { 'X-Tag': 'tag-{{ .arguments.tag }}' },
          query: [
            { name: 'id', value: '{{.arguments.id}}' },
            { name: 'client', value: '{{ .request.headers.X-Client }}' },
          ],
          body: '{"id": "{{.arguments.id}}", "tag": "{{.arguments.tag}}"}',
        },
      },
      {
        // Another API of the gateway: the call goes through its chain, then its upstream.
        kind: 'REST',
        name: 'users through their API',
        internal: true,
        root_fields: [{ type: 'Query', fields: ['viaApi'] }],
        config: { url: 'svc://users-api/users/{{.arguments.id}}', method: 'GET' },
      },
      {
        // A keyed API: the client's key is passed on by a request header template.
        kind: 'REST',
        root_fields: [{ type: 'Query', fields: ['viaKeyed'] }],
        config: {
          url: 'svc://users-keyed/users/{{.arguments.id}}',
          headers: { Authorization: '{{ .request.headers.authorization }}' },
        },
      },
      {
        kind: 'REST',
        root_fields: [{ type: 'Query', fields: ['missingApi'] }],
        config: { url: 'svc://no-such-api/x' },
      },
      {
        kind: 'REST',
        root_fields: [{ type: 'Query', fields: ['method'] }],
        config: { url: `${users.url}/echo/m` },
      },
      {
        kind: 'GraphQL',
        root_fields: [{ type: 'Query', fields: ['greet'] }],
        config: {
          url: `${gql.url}/graphql`,
          has_operation: true,
          operation: 'query Greet($n: String) { hello(name: $n) }',
          variables: { n: 'dear {{.arguments.who}}' },
        },
      },
    ],
    global_headers: [
      { key: 'X-Global', value: 'g1' },
      { key: 'x-tag', value: 'overridden by the source' },
    ],
  },
});

const apis = (): Record<string, unknown>[] => [
  keyless('gql', '/gql/', gql.url, { graphql: PLAYGROUND_GRAPHQL }),
  keyed('gqlk', '/gqlk/', gql.url, {
    graphql: {
      enabled: true,
      execution_mode: 'proxyOnly',
      schema: UPSTREAM_SDL,
      introspection: { disabled: true },
    },
  }),
  keyless('udg', '/udg/', '', { graphql: udg1() }),
  keyless('udg2', '/udg2/', '', { graphql: udg2() }),
  // The same graphs behind a key: depth and field limits apply as on proxyOnly APIs.
  keyed('udgk', '/udgk/', '', { graphql: udg1() }),
  keyed('udg2k', '/udg2k/', '', { graphql: udg2() }),
  keyless('users-api', '/users-api/', users.url, {}, { strip_listen_path: true }),
  keyed('users-keyed', '/users-keyed/', users.url, {
    proxy: { listen_path: '/users-keyed/', target_url: users.url, strip_listen_path: true },
  }),
];

interface Row {
  name: string;
  method?: 'GET' | 'POST';
  path: string;
  key?: string;
  /** POST body (JSON) or GET query parameters. */
  params?: { query: string; variables?: Record<string, unknown>; operationName?: string };
  raw?: string;
  status: number;
  /** The JSON body, exactly. */
  body?: unknown;
  /** A GraphQL error message the body's first error must have. */
  error?: string;
  /** Whether the GraphQL upstream must have been called. */
  upstream?: boolean;
}

const rows: Row[] = [
  {
    name: 'proxyOnly: a valid POST query reaches the upstream',
    path: '/gql/graphql',
    params: { query: '{ hello }' },
    status: 200,
    body: { data: { hello: 'hello world' }, path: '/gql/graphql' },
    upstream: true,
  },
  {
    name: 'proxyOnly: GET with variables and operationName',
    method: 'GET',
    path: '/gql/graphql',
    params: {
      query: 'query A { users { id } } query B($n: String) { hello(name: $n) }',
      variables: { n: 'gw' },
      operationName: 'B',
    },
    status: 200,
    body: { data: { hello: 'hello gw' }, path: '/gql/graphql' },
    upstream: true,
  },
  {
    name: 'proxyOnly: an unknown field is 400 with its location, never upstream',
    path: '/gql/graphql',
    params: { query: '{\n  nope }' },
    status: 400,
    body: {
      errors: [
        { message: 'Cannot query field "nope" on type "Query".', locations: [{ line: 2, column: 3 }] },
      ],
    },
    upstream: false,
  },
  {
    name: 'proxyOnly: a syntax error is 400, never upstream',
    path: '/gql/graphql',
    params: { query: '{ hello ' },
    status: 400,
    error: 'Syntax Error: Expected Name, found <EOF>.',
    upstream: false,
  },
  {
    name: 'proxyOnly: a variable of the wrong type is refused',
    path: '/gql/graphql',
    params: { query: 'query($n: Int) { hello(name: $n) }' },
    status: 400,
    error: 'Variable "$n" of type "Int" used in position expecting type "String".',
    upstream: false,
  },
  {
    name: 'proxyOnly: a body that is not JSON',
    path: '/gql/graphql',
    raw: 'query { hello }',
    status: 400,
    error: 'the body is not JSON: send {"query": "...", "variables": {...}}',
    upstream: false,
  },
  {
    name: 'proxyOnly: introspection is allowed by default',
    path: '/gql/graphql',
    params: { query: '{ __schema { queryType { name } } }' },
    status: 200,
    upstream: true,
  },
  {
    name: 'introspection disabled: 403, never upstream',
    path: '/gqlk/graphql',
    key: 'gql-open',
    params: { query: '{ __schema { queryType { name } } }' },
    status: 403,
    error: 'GraphQL introspection has been disabled, but the requested query contained the field "__schema".',
    upstream: false,
  },
  {
    name: 'keyed: no key is refused before GraphQL',
    path: '/gqlk/graphql',
    params: { query: '{ hello }' },
    status: 401,
    upstream: false,
  },
  {
    name: 'depth: within the policy limit',
    path: '/gqlk/graphql',
    key: 'gql-limited',
    params: { query: '{ users { id friends { id } } }' },
    status: 200,
    upstream: true,
  },
  {
    name: 'depth: past the policy limit is 403',
    path: '/gqlk/graphql',
    key: 'gql-limited',
    params: { query: '{ users { friends { friends { id } } } }' },
    status: 403,
    body: { errors: [{ message: 'depth limit exceeded' }] },
    upstream: false,
  },
  {
    name: "depth: a per-API limit.max_query_depth replaces the key's own",
    path: '/gqlk/graphql',
    key: 'gql-per-api',
    params: { query: '{ users { id } }' },
    status: 403,
    body: { errors: [{ message: 'depth limit exceeded' }] },
    upstream: false,
  },
  {
    name: 'depth: within the per-API limit',
    path: '/gqlk/graphql',
    key: 'gql-per-api',
    params: { query: '{ hello }' },
    status: 200,
    upstream: true,
  },
  {
    name: "depth: a per-API limit without max_query_depth lifts the key's own",
    path: '/gqlk/graphql',
    key: 'gql-per-api-open',
    params: { query: '{ users { friends { friends { id } } } }' },
    status: 200,
    upstream: true,
  },
  {
    name: 'depth: fragments count',
    path: '/gqlk/graphql',
    key: 'gql-limited',
    params: { query: '{ users { ...F } } fragment F on User { friends { friends { id } } }' },
    status: 403,
    upstream: false,
  },
  {
    name: 'restricted field: refused, naming it',
    path: '/gqlk/graphql',
    key: 'gql-limited',
    params: { query: '{ user(id: "1") { name email } }' },
    status: 403,
    body: {
      errors: [{ message: 'field: email is restricted on type: User', locations: [{ line: 1, column: 24 }] }],
    },
    upstream: false,
  },
  {
    name: 'restricted field: another key may query it',
    path: '/gqlk/graphql',
    key: 'gql-open',
    params: { query: '{ user(id: "1") { email } }' },
    status: 200,
    body: { data: { user: { email: 'ada@example.com' } }, path: '/gqlk/graphql' },
    upstream: true,
  },
  {
    name: 'allowed types: a field not listed is refused',
    path: '/gqlk/graphql',
    key: 'gql-allow',
    params: { query: '{ hello users { id } }' },
    status: 403,
    error: 'field: users is restricted on type: Query',
    upstream: false,
  },
  {
    name: 'allowed types: listed fields pass',
    path: '/gqlk/graphql',
    key: 'gql-allow',
    params: { query: '{ hello }' },
    status: 200,
    upstream: true,
  },
  {
    name: 'engine: a nested template URL (user, then their posts)',
    path: '/udg/',
    params: { query: '{ user(id: "1") { name posts { title } } }' },
    status: 200,
    body: { data: { user: { name: 'Ada', posts: [{ title: 'Notes' }, { title: 'Engines' }] } } },
  },
  {
    name: 'engine: a union member chosen by status code (200)',
    path: '/udg/',
    params: { query: '{ lookup(id: "2") { __typename ... on User { name } } }' },
    status: 200,
    body: { data: { lookup: { __typename: 'User', name: 'Brian' } } },
  },
  {
    name: 'engine: a union member chosen by status code (404)',
    path: '/udg/',
    params: { query: '{ lookup(id: "9") { __typename ... on NotFound { message } } }' },
    status: 200,
    body: { data: { lookup: { __typename: 'NotFound', message: 'no user 9' } } },
  },
  {
    name: 'engine: a GraphQL data source with variables',
    path: '/udg/',
    params: { query: 'query($n: String) { hello(name: $n) }', variables: { n: 'udg' } },
    status: 200,
    body: { data: { hello: 'hello udg' } },
    upstream: true,
  },
  {
    name: 'engine: an upstream error becomes a GraphQL error with its path',
    path: '/udg/',
    params: { query: '{ hello broken }' },
    status: 200,
    body: {
      data: { hello: 'hello world', broken: null },
      errors: [
        {
          message: 'data source answered 500',
          locations: [{ line: 1, column: 9 }],
          path: ['broken'],
          extensions: { status: 500 },
        },
      ],
    },
  },
  {
    name: 'engine: an invalid query is 400',
    path: '/udg/',
    params: { query: '{ user { name } }' },
    status: 400,
    error: 'Field "user" argument "id" of type "ID!" is required, but it was not provided.',
  },
  {
    // The GraphQL source is not sent `posts` (its upstream has no such field) but is asked for
    // the id the posts' URL reads, which the client did not select and does not get.
    name: "engine: a GraphQL source's list joined with a REST child reading {{.object.id}}, the id not selected, aliases at every level",
    path: '/udg/',
    params: { query: '{ people: users { who: name writes: posts { t: title } } }' },
    status: 200,
    body: {
      data: {
        people: [
          { who: 'Ada', writes: [{ t: 'Notes' }, { t: 'Engines' }] },
          { who: 'Brian', writes: [{ t: 'C' }] },
        ],
      },
    },
    upstream: true,
  },
  {
    name: 'engine: only the REST child of a GraphQL source selected',
    path: '/udg/',
    params: { query: '{ users { posts { title } } }' },
    status: 200,
    body: {
      data: { users: [{ posts: [{ title: 'Notes' }, { title: 'Engines' }] }, { posts: [{ title: 'C' }] }] },
    },
    upstream: true,
  },
  {
    name: 'engine: a GraphQL source selection with a fragment, the id selected under an alias',
    path: '/udg/',
    params: {
      query: '{ users { ...U } } fragment U on User { key: id name: id posts { title } }',
    },
    status: 200,
    body: {
      data: {
        users: [
          { key: '1', name: '1', posts: [{ title: 'Notes' }, { title: 'Engines' }] },
          { key: '2', name: '2', posts: [{ title: 'C' }] },
        ],
      },
    },
    upstream: true,
  },
  {
    name: 'engine, keyed: within the depth limit',
    path: '/udgk/',
    key: 'udg-limited',
    params: { query: '{ users { id } }' },
    status: 200,
    body: { data: { users: [{ id: '1' }, { id: '2' }] } },
    upstream: true,
  },
  {
    name: 'engine, keyed: past the depth limit is 403, no source called',
    path: '/udgk/',
    key: 'udg-limited',
    params: { query: '{ users { posts { title } } }' },
    status: 403,
    body: { errors: [{ message: 'depth limit exceeded' }] },
    upstream: false,
  },
  {
    name: 'engine, keyed: a restricted field is 403, naming it, no source called',
    path: '/udgk/',
    key: 'udg-limited',
    params: { query: '{ users { id name } }' },
    status: 403,
    body: {
      errors: [{ message: 'field: name is restricted on type: User', locations: [{ line: 1, column: 14 }] }],
    },
    upstream: false,
  },
  {
    name: 'engine, keyed: another key may query the restricted field',
    path: '/udgk/',
    key: 'gql-open',
    params: { query: '{ users { name } }' },
    status: 200,
    body: { data: { users: [{ name: 'Ada' }, { name: 'Brian' }] } },
    upstream: true,
  },
];

/** The engine rows v1 and v2 share: the v2 graph answers each as the v1 graph does. */
const bothVersions = rows.filter(
  (r) => (r.path === '/udg/' || r.path === '/udgk/') && !r.name.includes('union member'),
);
rows.push(
  ...bothVersions.map((r) => ({
    ...r,
    name: `${r.name} (version 2)`,
    path: r.path.replace('/udg', '/udg2'),
  })),
  {
    name: 'engine v2: a field mapped by path on objects of a GraphQL source (asked for as the path)',
    path: '/udg2/',
    params: { query: '{ users { id display } }' },
    status: 200,
    body: {
      data: {
        users: [
          { id: '1', display: 'Ada' },
          { id: '2', display: 'Brian' },
        ],
      },
    },
    upstream: true,
  },
  {
    name: 'engine v2: REST method, query parameters, headers and body from arguments; global headers',
    path: '/udg2/',
    params: {
      query: '{ echo(id: "7", tag: "red") { method path query tag global contentType body { id tag } } }',
    },
    status: 200,
    body: {
      data: {
        echo: {
          method: 'POST',
          path: '/echo/7',
          query: '?id=7&client=',
          tag: 'tag-red',
          global: 'g1',
          contentType: 'application/json',
          body: { id: '7', tag: 'red' },
        },
      },
    },
  },
  {
    name: 'engine v2: without a field config a field reads the key of its name (GET by default)',
    path: '/udg2/',
    params: { query: '{ method }' },
    status: 200,
    body: { data: { method: 'GET' } },
  },
  {
    name: 'engine v2: a data source that is another API of the gateway (svc://), through its chain',
    path: '/udg2/',
    params: { query: '{ viaApi(id: "1") { name posts { title } } }' },
    status: 200,
    body: { data: { viaApi: { name: 'Ada', posts: [{ title: 'Notes' }, { title: 'Engines' }] } } },
  },
  {
    name: 'engine v2: a data source API that is not loaded is a GraphQL error with its path',
    path: '/udg2/',
    params: { query: '{ missingApi }' },
    status: 200,
    body: {
      data: { missingApi: null },
      errors: [
        {
          message: 'data source API no-such-api is not loaded on this gateway',
          locations: [{ line: 1, column: 3 }],
          path: ['missingApi'],
        },
      ],
    },
  },
  {
    name: 'engine: a subscription sent as an HTTP request is refused with 400, saying how to send it',
    path: '/udg2/',
    params: { query: 'subscription { count(to: 1) }' },
    status: 400,
    body: {
      errors: [
        { message: 'a subscription is sent over WebSocket (graphql-transport-ws), not as an HTTP request' },
      ],
    },
  },
  {
    name: 'engine v2: a field mapped from its parent object by path',
    path: '/udg2/',
    params: { query: '{ user(id: "2") { display } }' },
    status: 200,
    body: { data: { user: { display: 'Brian' } } },
  },
  {
    name: 'engine v2: a GraphQL source with a fixed operation and templated variables',
    path: '/udg2/',
    params: { query: '{ greet(who: "Ada") }' },
    status: 200,
    body: { data: { greet: 'hello dear Ada' } },
    upstream: true,
  },
);

describeEachSetup(
  'graphql',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      const g = gw();
      for (const api of apis()) await g.addApi(api);
      const policy = await g.admin('POST', '/svc/policies', {
        id: 'gql-pol',
        name: 'graphql limits',
        max_query_depth: 3,
        partitions: { acl: true, complexity: true },
        access_rights: {
          gqlk: {
            api_id: 'gqlk',
            versions: ['Default'],
            restricted_types: [{ name: 'User', fields: ['email'] }],
          },
        },
      });
      assert.equal(policy.status, 200, policy.text);
      const udgRight = (api: string) => ({
        api_id: api,
        versions: ['Default'],
        restricted_types: [{ name: 'User', fields: ['name'] }],
      });
      const udgPolicy = await g.admin('POST', '/svc/policies', {
        id: 'udg-pol',
        name: 'data graph limits',
        max_query_depth: 2,
        partitions: { acl: true, complexity: true },
        access_rights: { udgk: udgRight('udgk'), udg2k: udgRight('udg2k') },
      });
      assert.equal(udgPolicy.status, 200, udgPolicy.text);
      await g.reload();
      const keys: [string, Record<string, unknown>][] = [
        ['gql-limited', { apply_policies: ['gql-pol'] }],
        ['udg-limited', { apply_policies: ['udg-pol'] }],
        [
          'gql-open',
          {
            access_rights: Object.fromEntries(
              ['gqlk', 'udgk', 'udg2k'].map((api) => [api, { api_id: api, versions: ['Default'] }]),
            ),
          },
        ],
        [
          'gql-per-api',
          {
            max_query_depth: 5,
            access_rights: { gqlk: { api_id: 'gqlk', versions: ['Default'], limit: { max_query_depth: 1 } } },
          },
        ],
        [
          'gql-per-api-open',
          {
            max_query_depth: 1,
            access_rights: { gqlk: { api_id: 'gqlk', versions: ['Default'], limit: { rate: -1, per: -1 } } },
          },
        ],
        [
          'gql-allow',
          {
            access_rights: {
              gqlk: {
                api_id: 'gqlk',
                versions: ['Default'],
                allowed_types: [{ name: 'Query', fields: ['hello'] }],
              },
            },
          },
        ],
      ];
      for (const [id, body] of keys) {
        const res = await g.admin('POST', `/svc/keys/${id}`, { org_id: '', ...body });
        assert.equal(res.status, 200, res.text);
      }
    });

    for (const row of rows) {
      test(row.name, async () => {
        const before = gql.calls.length;
        const method = row.method ?? 'POST';
        let path = row.path;
        let body: string | undefined;
        if (method === 'GET' && row.params !== undefined) {
          const q = new URLSearchParams({ query: row.params.query });
          if (row.params.variables !== undefined) q.set('variables', JSON.stringify(row.params.variables));
          if (row.params.operationName !== undefined) q.set('operationName', row.params.operationName);
          path += `?${q.toString()}`;
        } else body = row.raw ?? JSON.stringify(row.params);
        const res = await gw().request({
          method,
          path,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...(row.key === undefined ? {} : { authorization: row.key }),
          },
          ...(body === undefined ? {} : { body }),
        });
        assert.equal(res.status, row.status, res.text);
        if (row.body !== undefined) assert.deepEqual(res.json, row.body);
        if (row.error !== undefined) {
          assert.equal(
            (res.json as { errors: { message: string }[] }).errors[0]?.message,
            row.error,
            res.text,
          );
        }
        if (row.upstream !== undefined)
          assert.equal(gql.calls.length > before, row.upstream, 'upstream called');
      });
    }

    for (const path of ['/udg/', '/udg2/'])
      test(`engine (${path}): fields of one level are fetched concurrently, identical calls once`, async () => {
        const seen = users.calls.length;
        users.maxInFlight = 0;
        const res = await gw().request({
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            query: '{ a: user(id: "1") { name } b: user(id: "2") { name } c: user(id: "1") { id } }',
          }),
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.json, { data: { a: { name: 'Ada' }, b: { name: 'Brian' }, c: { id: '1' } } });
        assert.equal(users.calls.length - seen, 2, 'one call per distinct user');
        assert.equal(users.maxInFlight, 2, 'both users fetched at once');
      });

    test("engine v2: a template of a request header sends the client request's header", async () => {
      const res = await gw().request({
        method: 'POST',
        path: '/udg2/',
        headers: { 'content-type': 'application/json', 'x-client': 'cli {{.arguments.tag}}' },
        body: JSON.stringify({ query: '{ echo(id: "8", tag: "t") { query } }' }),
      });
      assert.equal(res.status, 200, res.text);
      // Filled once: a header holding a template is sent as written, not filled again.
      assert.deepEqual(res.json, {
        data: {
          echo: {
            query: `?id=8&client=${encodeURIComponent('cli {{.arguments.tag}}').replaceAll('%20', '+')}`,
          },
        },
      });
    });

    test("engine v2: an API source's own authentication applies (the client's key passed on by a header template)", async () => {
      const key = await gw().admin('POST', '/svc/keys/udg-users-key', {
        org_id: '',
        access_rights: { 'users-keyed': { api_id: 'users-keyed', versions: ['Default'] } },
      });
      assert.equal(key.status, 200, key.text);
      const ask = (headers: Record<string, string>) =>
        gw().request({
          method: 'POST',
          path: '/udg2/',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query: '{ viaKeyed(id: "2") { name } }' }),
        });
      const without = await ask({});
      assert.equal(without.status, 200, without.text);
      assert.deepEqual(without.json, {
        data: { viaKeyed: null },
        errors: [
          {
            message: 'data source answered 401',
            locations: [{ line: 1, column: 3 }],
            path: ['viaKeyed'],
            extensions: { status: 401 },
          },
        ],
      });
      const withKey = await ask({ authorization: 'udg-users-key' });
      assert.deepEqual(withKey.json, { data: { viaKeyed: { name: 'Brian' } } });
    });

    test('engine v2: a bad data graph is refused by the management API, naming each field', async () => {
      const bad = udg2();
      const engine = bad.engine as { data_sources: Record<string, unknown>[] };
      engine.data_sources.push(
        { kind: 'Kafka', root_fields: [{ type: 'Query', fields: ['method'] }], config: { topics: ['t'] } },
        { kind: 'GraphQL', root_fields: [{ type: 'Query', fields: ['nope'] }], config: { url: 'ftp://x' } },
      );
      const res = await gw().admin(
        'POST',
        '/svc/apis',
        keyless('udg2-bad', '/udg2-bad/', '', { graphql: bad }),
      );
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(res.json, {
        status: 'error',
        message:
          'Validation of API Definition failed. Reason: ' +
          [
            'graphql.engine.data_sources[10].root_fields[0].type: Invalid value: "Query": a Kafka data source feeds subscription fields: list fields of Subscription',
            'graphql.engine.data_sources[10].config.broker_addresses: Required value: list the brokers (host:port) the consumer connects to',
            'graphql.engine.data_sources[10].config.group_id: Required value: name the consumer group: subscriptions sharing a group share the partitions of its topics',
            'graphql.engine.data_sources[10].root_fields[0].fields[0]: Invalid value: Query.method is already served by graphql.engine.data_sources[8]: list each field in one data source',
            'graphql.engine.data_sources[11].root_fields[0].fields[0]: Invalid value: "Query" has no field "nope" in graphql.schema',
            'graphql.engine.data_sources[11].config.url: Invalid value: "ftp://x" has the scheme "ftp": data sources are called over http or https',
            "graphql.engine.data_sources[10].kind: Forbidden: a Kafka data source is consumed through the gateway's stream processor (Bento): streaming is disabled on this gateway: set streaming_enabled (SVC_GW_STREAMING_ENABLED=true)",
          ].join('; '),
      });
    });

    test('subscription (the engine, without a source serving it): the upgrade is refused with 400 saying why', async () => {
      const refused = await refusedUpgrade(`ws://127.0.0.1:${gw().port}/udg/`, 'graphql-transport-ws');
      assert.equal(refused.status, 400);
      assert.deepEqual(JSON.parse(refused.body), {
        errors: [{ message: 'the schema has no subscriptions' }],
      });
    });

    test('proxyOnly: after a reload, queries are checked against the new schema (the same texts sent before)', async () => {
      const withHello = keyless('gql-swap', '/gql-swap/', gql.url, {
        graphql: { enabled: true, execution_mode: 'proxyOnly', schema: UPSTREAM_SDL },
      });
      const withoutHello = keyless('gql-swap', '/gql-swap/', gql.url, {
        graphql: {
          enabled: true,
          execution_mode: 'proxyOnly',
          schema: 'type Query { users: [User!]! } type User { id: ID! name: String }',
        },
      });
      const put = async (def: Record<string, unknown>): Promise<void> => {
        const res = await gw().admin('PUT', '/svc/apis/gql-swap', def);
        assert.equal(res.status, 200, res.text);
        await gw().reload();
      };
      const ask = async (query: string): Promise<{ status: number; json: unknown; upstream: boolean }> => {
        const before = gql.calls.length;
        const res = await gw().request({
          method: 'POST',
          path: '/gql-swap/graphql',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query }),
        });
        return { status: res.status, json: res.json, upstream: gql.calls.length > before };
      };
      const noHello = {
        errors: [
          { message: 'Cannot query field "hello" on type "Query".', locations: [{ line: 1, column: 3 }] },
        ],
      };
      await gw().addApi(withHello);
      await gw().reload();
      // Each text twice: the second answer is the one a cached check gives.
      for (let i = 0; i < 2; i++) {
        const hello = await ask('{ hello }');
        assert.deepEqual([hello.status, hello.upstream], [200, true], JSON.stringify(hello.json));
      }
      await put(withoutHello);
      for (let i = 0; i < 2; i++) {
        assert.deepEqual(await ask('{ hello }'), { status: 400, json: noHello, upstream: false });
        const users_ = await ask('{ users { id } }');
        assert.deepEqual([users_.status, users_.upstream], [200, true], JSON.stringify(users_.json));
      }
      await put(withHello);
      for (let i = 0; i < 2; i++) {
        const hello = await ask('{ hello }');
        assert.deepEqual([hello.status, hello.upstream], [200, true], JSON.stringify(hello.json));
      }
      const removed = await gw().admin('DELETE', '/svc/apis/gql-swap');
      assert.equal(removed.status, 200, removed.text);
      await gw().reload();
    });

    test('playground: the page is served without a key and calls nothing outside', async () => {
      const res = await gw().request({ path: '/gql/playground' });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.text, /"endpoint":"\/gql\/"/);
      assert.doesNotMatch(res.text, /https?:\/\//);
    });

    for (const [what, path] of [
      ['proxyOnly', '/gql/graphql'],
      ['the engine, to the GraphQL source serving it', '/udg2/'],
    ] as const)
      test(`subscription (${what}): relayed over WebSocket (graphql-transport-ws)`, async () => {
        const ws = new WebSocket(`ws://127.0.0.1:${gw().port}${path}`, 'graphql-transport-ws');
        const got: unknown[] = [];
        const done = new Promise<void>((resolve, reject) => {
          ws.on('open', () => {
            ws.send(JSON.stringify({ type: 'connection_init' }));
          });
          ws.on('message', (raw: Buffer) => {
            const msg = JSON.parse(raw.toString()) as { type: string; payload?: unknown };
            if (msg.type === 'connection_ack') {
              ws.send(
                JSON.stringify({
                  id: '1',
                  type: 'subscribe',
                  payload: { query: 'subscription { count(to: 3) }' },
                }),
              );
            } else if (msg.type === 'next') got.push(msg.payload);
            else if (msg.type === 'complete') resolve();
          });
          ws.on('error', reject);
        });
        await done;
        ws.close();
        assert.equal(ws.protocol, 'graphql-transport-ws');
        assert.deepEqual(got, [{ data: { count: 1 } }, { data: { count: 2 } }, { data: { count: 3 } }]);
      });

    /**
     * A client of the gateway over WebSocket with `protocol`: every message it got, in order.
     * graphql-transport-ws sends `subscribe` and `complete`, the legacy graphql-ws `start` and `stop`.
     */
    // A failed test's sockets are closed too, so the gateway stops.
    const sockets: WebSocket[] = [];
    afterEach(() => {
      for (const ws of sockets.splice(0)) ws.terminate();
    });
    const wsClient = async (
      path: string,
      key: string | undefined,
      protocol: 'graphql-transport-ws' | 'graphql-ws' = 'graphql-transport-ws',
    ) => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw().port}${path}`, protocol, {
        headers: key === undefined ? {} : { authorization: key },
      });
      sockets.push(ws);
      const messages: Record<string, unknown>[] = [];
      ws.on('message', (raw: Buffer) => messages.push(JSON.parse(raw.toString()) as Record<string, unknown>));
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => {
          resolve();
        });
        ws.once('error', reject);
      });
      const until = async (what: string, found: () => boolean): Promise<void> => {
        const end = Date.now() + 10_000;
        while (!found()) {
          if (Date.now() > end) throw new Error(`no ${what}: ${JSON.stringify(messages)}`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      ws.send(JSON.stringify({ type: 'connection_init' }));
      await until('connection_ack', () => messages.some((m) => m.type === 'connection_ack'));
      return {
        ws,
        messages,
        /** Sends one operation as `id`; resolves with its messages once it ended (`error` or `complete`). */
        async run(id: string, query: string): Promise<Record<string, unknown>[]> {
          const type = protocol === 'graphql-ws' ? 'start' : 'subscribe';
          ws.send(JSON.stringify({ id, type, payload: { query } }));
          await until(`the end of ${id}`, () =>
            messages.some((m) => m.id === id && (m.type === 'error' || m.type === 'complete')),
          );
          return messages.filter((m) => m.id === id);
        },
        close(): void {
          ws.close();
        },
      };
    };

    const refusedOverWs = (id: string, errors: unknown[]) => [{ id, type: 'error', payload: errors }];
    const noNope = [
      { message: 'Cannot query field "nope" on type "Subscription".', locations: [{ line: 1, column: 16 }] },
    ];

    // What queries and mutations get over HTTP, a relayed subscription gets: the same checks, the
    // same errors, an `error` message for its ID, and the upstream never asked.
    for (const [what, path, key, deep, restricted] of [
      [
        'proxyOnly (policy: depth 3, User.email restricted)',
        '/gqlk/',
        'gql-limited',
        'subscription { userAdded { friends { friends { id } } } }',
        'subscription { userAdded { email } }',
      ],
      [
        'the engine v2, to its GraphQL source (policy: depth 2, User.name restricted)',
        '/udg2k/',
        'udg-limited',
        'subscription { userAdded { posts { title } } }',
        'subscription { userAdded { name } }',
      ],
    ] as const)
      test(`subscription (${what}): depth, field permissions and validity are checked before the upstream is asked`, async () => {
        const c = await wsClient(path, key);
        const subscribed = gql.subscribed.length;
        assert.deepEqual(
          await c.run('deep', deep),
          refusedOverWs('deep', [{ message: 'depth limit exceeded' }]),
        );
        const field = restricted.includes('email') ? ['email', 'User'] : ['name', 'User'];
        assert.deepEqual(await c.run('restricted', restricted), [
          {
            id: 'restricted',
            type: 'error',
            payload: [
              {
                message: `field: ${field[0] ?? ''} is restricted on type: ${field[1] ?? ''}`,
                locations: [{ line: 1, column: 28 }],
              },
            ],
          },
        ]);
        assert.deepEqual(await c.run('invalid', 'subscription { nope }'), refusedOverWs('invalid', noNope));
        assert.deepEqual(gql.subscribed.slice(subscribed), [], 'the upstream was asked');
        // The socket goes on: an allowed subscription runs on it, relayed.
        assert.deepEqual(await c.run('ok', 'subscription { userAdded { id } }'), [
          { id: 'ok', type: 'next', payload: { data: { userAdded: { id: '1' } } } },
          { id: 'ok', type: 'complete' },
        ]);
        assert.deepEqual(gql.subscribed.slice(subscribed), ['subscription { userAdded { id } }']);
        c.close();
      });

    test('subscription (proxyOnly): introspection the API disables and fields the key is not allowed are refused over WebSocket too', async () => {
      const subscribed = gql.subscribed.length;
      const limited = await wsClient('/gqlk/', 'gql-limited');
      assert.deepEqual(
        await limited.run('i', '{ __schema { description } }'),
        refusedOverWs('i', [
          {
            message:
              'GraphQL introspection has been disabled, but the requested query contained the field "__schema".',
            locations: [{ line: 1, column: 3 }],
          },
        ]),
      );
      limited.close();
      const allow = await wsClient('/gqlk/', 'gql-allow');
      assert.deepEqual(
        await allow.run('c', 'subscription { count(to: 1) }'),
        refusedOverWs('c', [
          {
            message: 'field: count is restricted on type: Subscription',
            locations: [{ line: 1, column: 16 }],
          },
        ]),
      );
      allow.close();
      const perApi = await wsClient('/gqlk/', 'gql-per-api');
      assert.deepEqual(
        await perApi.run('d', 'subscription { userAdded { id } }'),
        refusedOverWs('d', [{ message: 'depth limit exceeded' }]),
      );
      perApi.close();
      assert.deepEqual(gql.subscribed.slice(subscribed), [], 'the upstream was asked');
    });

    test('subscription (proxyOnly, the legacy graphql-ws protocol): checked the same, refused with its error message', async () => {
      const subscribed = gql.subscribed.length;
      const c = await wsClient('/gqlk/', 'gql-limited', 'graphql-ws');
      assert.equal(c.ws.protocol, 'graphql-ws');
      const depth = { message: 'depth limit exceeded' };
      assert.deepEqual(await c.run('deep', 'subscription { userAdded { friends { friends { id } } } }'), [
        { id: 'deep', type: 'error', payload: { ...depth, errors: [depth] } },
      ]);
      const email = {
        message: 'field: email is restricted on type: User',
        locations: [{ line: 1, column: 28 }],
      };
      assert.deepEqual(await c.run('email', 'subscription { userAdded { email } }'), [
        { id: 'email', type: 'error', payload: { ...email, errors: [email] } },
      ]);
      assert.deepEqual(gql.subscribed.slice(subscribed), []);
      assert.deepEqual(await c.run('ok', 'subscription { count(to: 1) }'), [
        { id: 'ok', type: 'data', payload: { data: { count: 1 } } },
        { id: 'ok', type: 'complete' },
      ]);
      c.close();
    });

    test('subscription (proxyOnly): a WebSocket without a GraphQL subprotocol the gateway can check is refused with 400', async () => {
      const refused = await refusedUpgrade(`ws://127.0.0.1:${gw().port}/gql/graphql`, 'mqtt');
      assert.equal(refused.status, 400);
      assert.deepEqual(JSON.parse(refused.body), {
        errors: [
          {
            message:
              'subscriptions are relayed over WebSocket with the subprotocol graphql-transport-ws or graphql-ws (subscriptions-transport-ws): the gateway checks each operation',
          },
        ],
      });
    });
  },
);
