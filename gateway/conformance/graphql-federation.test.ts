/**
 * GraphQL federation through a real gateway: two subgraph APIs (`execution_mode: subgraph`) in
 * front of two real GraphQL servers (graphql-js over node:http, each serving `_entities` and
 * `_service` as federation subgraphs do), and a supergraph API (`execution_mode: supergraph`)
 * planning each query across them: root fields from the subgraph owning them, entity fields
 * through `_entities` with the owner's `@key`, batched per subgraph and level, over the subgraph
 * APIs' chains (`svc://`). What is not served is refused when written, naming the field.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSchema } from 'graphql';
import {
  FED_REVIEWS,
  FED_USERS,
  federationDefs,
  reviewEntity,
  startSubgraph,
  typed,
  type Subgraph,
} from '../graphql/testing.ts';
import { keyed, keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { provision } from '../testing/tables.ts';

const USERS_SDL = `
type Query { me: User users: [User!]! named: [Named!]! }
interface Named { name: String! }
type User implements Named @key(fields: "id") { id: ID! name: String! }
`;

const REVIEWS_SDL = `
type Query { topReviews: [Review!]! }
type Review { id: ID! body: String! author: User! }
extend type User @key(fields: "id") { id: ID! @external reviews: [Review!]! }
`;

const MERGED_SDL = `
type Query { me: User users: [User!]! topReviews: [Review!]! named: [Named!]! }
interface Named { name: String! }
type User implements Named { id: ID! name: String! reviews: [Review!]! }
type Review { id: ID! body: String! author: User! }
`;

interface Rep {
  __typename: string;
  id: string;
}

let users: Subgraph;
let reviews: Subgraph;
let greet: Subgraph;
let reviewsProviding: Subgraph;
/** The representations the greet subgraph was sent. */
const greeted: Record<string, unknown>[] = [];
let gw: InProcessGateway;

/** A subgraph whose `User.greeting` needs the user's name, which the users subgraph resolves. */
const GREET_SDL = `
type Query { hello: String }
extend type User @key(fields: "id") { id: ID! @external name: String! @external greeting: String! @requires(fields: "name") }
`;

/** The reviews subgraph, its reviews giving their author's name (`@provides`). */
const REVIEWS_PROVIDING_SDL = `
type Query { topReviews: [Review!]! }
type Review { id: ID! body: String! author: User! @provides(fields: "name") }
extend type User @key(fields: "id") { id: ID! @external name: String! @external reviews: [Review!]! }
`;

const MERGED_GREET_SDL = MERGED_SDL.replace(
  'type User implements Named { id: ID! name: String! reviews: [Review!]! }',
  'type User implements Named { id: ID! name: String! reviews: [Review!]! greeting: String! }',
).replace('type Query {', 'type Query { hello: String');

const supergraph = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  enabled: true,
  execution_mode: 'supergraph',
  schema: MERGED_SDL,
  supergraph: {
    subgraphs: [
      { api_id: 'users-sub', name: 'users', url: 'svc://users-sub/graphql', sdl: USERS_SDL },
      { api_id: 'reviews-sub', name: 'reviews', url: 'svc://reviews-sub/graphql', sdl: REVIEWS_SDL },
    ],
    global_headers: { 'X-From-Supergraph': 'yes' },
    ...extra,
  },
});

before(async () => {
  users = await startSubgraph(
    buildSchema(`${federationDefs()}
type Query { me: User users: [User!]! named: [Named!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
interface Named { name: String! }
type User implements Named { id: ID! name: String! }`),
    {
      me: () => typed('User', FED_USERS[0] ?? {}),
      users: () => FED_USERS.map((u) => typed('User', u)),
      named: () => FED_USERS.map((u) => typed('User', u)),
      _entities: ({ representations }: { representations: Rep[] }) =>
        representations.map((r) => typed('User', FED_USERS.find((u) => u.id === r.id) ?? {})),
      _service: () => ({ sdl: USERS_SDL }),
    },
  );
  reviews = await startSubgraph(
    buildSchema(`${federationDefs()}
type Query { topReviews: [Review!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Review { id: ID! body: String! author: User! }
type User { id: ID! reviews: [Review!]! }`),
    {
      topReviews: () => FED_REVIEWS.slice(0, 2).map(reviewEntity),
      _entities: ({ representations }: { representations: Rep[] }) =>
        representations.map((r) => ({
          __typename: 'User',
          id: r.id,
          reviews: FED_REVIEWS.filter((x) => x.authorId === r.id).map(reviewEntity),
        })),
      _service: () => ({ sdl: REVIEWS_SDL }),
    },
  );
  greet = await startSubgraph(
    buildSchema(`${federationDefs()}
type Query { hello: String _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type User { id: ID! greeting: String! }`),
    {
      hello: () => 'hi',
      _entities: ({ representations }: { representations: (Rep & { name?: string })[] }) =>
        representations.map((r) => {
          greeted.push({ ...r });
          return { __typename: 'User', id: r.id, greeting: `Hello, ${r.name ?? '(no name)'}` };
        }),
      _service: () => ({ sdl: GREET_SDL }),
    },
  );
  reviewsProviding = await startSubgraph(
    buildSchema(`${federationDefs()}
type Query { topReviews: [Review!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Review { id: ID! body: String! author: User! }
type User { id: ID! name: String! reviews: [Review!]! }`),
    {
      topReviews: () =>
        FED_REVIEWS.slice(0, 2).map((r) => ({
          __typename: 'Review',
          id: r.id,
          body: r.body,
          author: {
            __typename: 'User',
            id: r.authorId,
            name: FED_USERS.find((u) => u.id === r.authorId)?.name,
          },
        })),
      _entities: () => [],
      _service: () => ({ sdl: REVIEWS_PROVIDING_SDL }),
    },
  );
  gw = await startGateway();
  const apis = [
    keyless('greet-sub', '/greet-sub/', greet.url, {
      graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: GREET_SDL } },
    }),
    keyless('reviews-providing-sub', '/reviews-providing-sub/', reviewsProviding.url, {
      graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: REVIEWS_PROVIDING_SDL } },
    }),
    keyless('super-requires', '/super-requires/', '', {
      graphql: {
        ...supergraph(),
        schema: MERGED_GREET_SDL,
        supergraph: {
          subgraphs: [
            { name: 'users', url: 'svc://users-sub/graphql', sdl: USERS_SDL },
            { name: 'reviews', url: 'svc://reviews-sub/graphql', sdl: REVIEWS_SDL },
            { name: 'greet', url: 'svc://greet-sub/graphql', sdl: GREET_SDL },
          ],
        },
      },
    }),
    keyless('super-provides', '/super-provides/', '', {
      graphql: {
        ...supergraph(),
        supergraph: {
          subgraphs: [
            { name: 'users', url: 'svc://users-sub/graphql', sdl: USERS_SDL },
            { name: 'reviews', url: 'svc://reviews-providing-sub/graphql', sdl: REVIEWS_PROVIDING_SDL },
          ],
        },
      },
    }),
    keyless('users-sub', '/users-sub/', users.url, {
      graphql: { enabled: true, execution_mode: 'subgraph', schema: USERS_SDL, subgraph: { sdl: USERS_SDL } },
    }),
    keyless('reviews-sub', '/reviews-sub/', reviews.url, {
      graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: REVIEWS_SDL } },
    }),
    // As the reference's dashboard exports them: the unused block with its zero values.
    keyless('reviews-sub-export', '/reviews-sub-export/', reviews.url, {
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        subgraph: { sdl: REVIEWS_SDL },
        supergraph: {
          subgraphs: [{ api_id: '', name: '', url: '', sdl: '' }],
          merged_sdl: '',
          global_headers: {},
        },
      },
    }),
    keyless('super-export', '/super-export/', '', { graphql: { ...supergraph(), subgraph: { sdl: '' } } }),
    keyless('super', '/super/', '', { graphql: supergraph() }),
    keyed('super-keyed', '/super-keyed/', '', { graphql: supergraph() }),
    // No merged schema given: composed from the subgraphs' SDLs.
    keyless('super-composed', '/super-composed/', '', {
      graphql: { ...supergraph(), schema: undefined },
    }),
    keyless('super-nobatch', '/super-nobatch/', '', {
      graphql: supergraph({ disable_query_batching: true }),
    }),
    // Its reviews subgraph is down; topReviews is nullable here.
    keyless('super-down', '/super-down/', '', {
      graphql: {
        ...supergraph(),
        schema: MERGED_SDL.replace('topReviews: [Review!]!', 'topReviews: [Review!]'),
        supergraph: {
          subgraphs: [
            { name: 'users', url: 'svc://users-sub/graphql', sdl: USERS_SDL },
            { name: 'reviews', url: 'http://127.0.0.1:1/graphql', sdl: REVIEWS_SDL },
          ],
        },
      },
    }),
  ];
  await provision(gw, apis);
  const key = await gw.admin('POST', '/svc/keys/fed-depth', {
    org_id: '',
    max_query_depth: 2,
    access_rights: { 'super-keyed': { api_id: 'super-keyed', versions: ['Default'] } },
  });
  assert.equal(key.status, 200, key.text);
});
after(async () => {
  await stopAll(gw, users, reviews, greet, reviewsProviding);
});

const ask = async (path: string, query: string, variables?: Record<string, unknown>) => {
  const res = await gw.request({
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, json: res.json as Record<string, unknown> };
};

/** The queries each subgraph gets while `fn` runs. */
async function sent<T>(fn: () => Promise<T>): Promise<{ result: T; users: string[]; reviews: string[] }> {
  const [u, r] = [users.queries.length, reviews.queries.length];
  const result = await fn();
  return { result, users: users.queries.slice(u), reviews: reviews.queries.slice(r) };
}

test('supergraph: root fields of one subgraph, entity fields of the other (one _entities call for the list)', async () => {
  const {
    result,
    users: u,
    reviews: r,
  } = await sent(() => ask('/super/', '{ topReviews { body author { name } } }'));
  assert.equal(result.status, 200);
  assert.deepEqual(result.json, {
    data: {
      topReviews: [
        { body: 'Great engine', author: { name: 'Ada' } },
        { body: 'Fast planner', author: { name: 'Brian' } },
      ],
    },
  });
  assert.equal(r.length, 1, 'one query to reviews');
  assert.equal(u.length, 1, 'one batched _entities query to users');
  assert.match(u[0] ?? '', /_entities/);
});

test('supergraph: three levels across both subgraphs, with aliases, fragments and variables', async () => {
  const {
    result,
    users: u,
    reviews: r,
  } = await sent(() =>
    ask(
      '/super/',
      'query Q($withBody: Boolean!) { people: users { n: name ...R } } fragment R on User { reviews { body @include(if: $withBody) author { name } } }',
      { withBody: true },
    ),
  );
  assert.equal(result.status, 200);
  assert.deepEqual(result.json, {
    data: {
      people: [
        {
          n: 'Ada',
          reviews: [
            { body: 'Great engine', author: { name: 'Ada' } },
            { body: 'Good notes', author: { name: 'Ada' } },
          ],
        },
        { n: 'Brian', reviews: [{ body: 'Fast planner', author: { name: 'Brian' } }] },
      ],
    },
  });
  // users (root), reviews (_entities of both users), users (_entities of the three authors).
  assert.deepEqual([u.length, r.length], [2, 1]);
});

test('supergraph: the subgraphs are called through their APIs with the global headers', async () => {
  const before = users.headers.length;
  await ask('/super/', '{ me { name } }');
  const h = users.headers[before];
  assert.equal(h?.['x-from-supergraph'], 'yes');
});

test('supergraph: an invalid query is 400 and reaches no subgraph', async () => {
  const { result, users: u, reviews: r } = await sent(() => ask('/super/', '{ me { nope } }'));
  assert.equal(result.status, 400);
  assert.deepEqual([u.length, r.length], [0, 0]);
});

test('subgraph API: queries are checked against its SDL with _service and _entities, then proxied', async () => {
  const ok = await ask('/reviews-sub/graphql', '{ _service { sdl } }');
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.json, { data: { _service: { sdl: REVIEWS_SDL } } });
  const entities = await ask(
    '/reviews-sub/graphql',
    'query($r: [_Any!]!) { _entities(representations: $r) { ... on User { reviews { id } } } }',
    { r: [{ __typename: 'User', id: 'u2' }] },
  );
  assert.deepEqual(entities.json, { data: { _entities: [{ reviews: [{ id: 'r2' }] }] } });
  const bad = await ask('/reviews-sub/graphql', '{ users { id } }');
  assert.equal(bad.status, 400);
});

test("the other mode's block with nothing set (as the reference exports it) is accepted, and ignored", async () => {
  const sub = await ask('/reviews-sub-export/graphql', '{ _service { sdl } }');
  assert.equal(sub.status, 200);
  assert.deepEqual(sub.json, { data: { _service: { sdl: REVIEWS_SDL } } });
  const query = '{ topReviews { id author { name } } }';
  const exported = await ask('/super-export/graphql', query);
  assert.equal(exported.status, 200);
  assert.deepEqual(exported.json, (await ask('/super/graphql', query)).json);
  // A block that sets something is still refused, naming it.
  const res = await gw.admin(
    'POST',
    '/svc/apis',
    keyless('sub-with-super', '/sub-with-super/', reviews.url, {
      graphql: {
        enabled: true,
        execution_mode: 'subgraph',
        subgraph: { sdl: REVIEWS_SDL },
        supergraph: { merged_sdl: 'type Query { a: Int }' },
      },
    }),
  );
  assert.equal(res.status, 400, res.text);
  assert.match(
    res.text,
    /graphql\.supergraph: Forbidden: a subgraph API takes graphql\.subgraph, not supergraph/,
  );
});

test('supergraph: what is not served is refused when written, naming the field', async () => {
  const requires = `
type Query { stock: Int }
extend type User @key(fields: "id") { id: ID! @external name: String! @external greeting: String! @requires(fields: "name") }
`;
  const bad = supergraph({ merged_sdl: MERGED_SDL, planner: 'fast' });
  const sg = bad.supergraph as { subgraphs: Record<string, unknown>[] };
  sg.subgraphs.push({ name: 'stock', url: 'ftp://stock', sdl: requires, subscription_type: 'sse' });
  bad.schema = `${MERGED_SDL} extend type Query { orphan: Int } type Subscription { ticks: Int }`;
  const res = await gw.admin('POST', '/svc/apis', keyless('super-bad', '/super-bad/', '', { graphql: bad }));
  assert.equal(res.status, 400, res.text);
  assert.deepEqual(
    (res.json as { message: string }).message
      .replace('Validation of API Definition failed. Reason: ', '')
      .split('; '),
    [
      'graphql.supergraph.planner: Unsupported value: not a supergraph setting svc serves (subgraphs, merged_sdl, global_headers, disable_query_batching, updated_at)',
      'graphql.supergraph.subgraphs[2].url: Invalid value: "ftp://stock" has the scheme "ftp": subgraphs are called over http(s) or svc://',
      'graphql.supergraph.subgraphs[2].subscription_type: Unsupported value: subscriptions are sent to subgraphs over WebSocket with graphql-transport-ws only (server-sent events are not supported yet): set graphql-transport-ws or leave it empty',
      'graphql.schema: Invalid value: Query.orphan: no subgraph resolves this field',
      'graphql.schema: Invalid value: Subscription.ticks: no subgraph resolves this field',
    ],
  );
});

test('supergraph, @requires: the fields it names are asked along of the subgraph giving the object and sent in the representation', async () => {
  greeted.length = 0;
  const g = greet.queries.length;
  const { result, users: u } = await sent(() => ask('/super-requires/', '{ me { greeting } }'));
  assert.deepEqual(result.json, { data: { me: { greeting: 'Hello, Ada' } } });
  assert.equal(u.length, 1, 'one query to users, the name asked along');
  assert.match((u[0] ?? '').replace(/\s+/g, ' '), /me \{ __typename name id \}/);
  assert.equal(greet.queries.length - g, 1, 'one _entities query to greet');
  assert.deepEqual(greeted, [{ __typename: 'User', id: 'u1', name: 'Ada' }]);
});

test('supergraph, @requires: fields owned by a third subgraph are fetched first, then the field (batched)', async () => {
  greeted.length = 0;
  const {
    result,
    users: u,
    reviews: r,
  } = await sent(() => ask('/super-requires/', '{ topReviews { body author { greeting } } }'));
  assert.deepEqual(result.json, {
    data: {
      topReviews: [
        { body: 'Great engine', author: { greeting: 'Hello, Ada' } },
        { body: 'Fast planner', author: { greeting: 'Hello, Brian' } },
      ],
    },
  });
  assert.equal(r.length, 1);
  assert.equal(u.length, 1, 'one batched _entities query for the names');
  assert.match(u[0] ?? '', /_entities/);
  assert.deepEqual(greeted, [
    { __typename: 'User', id: 'u1', name: 'Ada' },
    { __typename: 'User', id: 'u2', name: 'Brian' },
  ]);
});

test('supergraph, @provides: the fields a subgraph provides at a path are asked of it, not of their owner', async () => {
  const { result, users: u } = await sent(() =>
    ask('/super-provides/', '{ topReviews { body author { name } } }'),
  );
  assert.deepEqual(result.json, {
    data: {
      topReviews: [
        { body: 'Great engine', author: { name: 'Ada' } },
        { body: 'Fast planner', author: { name: 'Brian' } },
      ],
    },
  });
  assert.equal(u.length, 0, 'users is not asked');
});

test('supergraph: disable_query_batching sends one _entities call per object', async () => {
  const { result, users: u } = await sent(() => ask('/super-nobatch/', '{ topReviews { author { name } } }'));
  assert.deepEqual(result.json, {
    data: { topReviews: [{ author: { name: 'Ada' } }, { author: { name: 'Brian' } }] },
  });
  assert.equal(u.length, 2);
});

test("supergraph: a subgraph that can't be reached is a GraphQL error naming it; the other subgraph's fields answer", async () => {
  const { status, json } = await ask('/super-down/', '{ me { name } topReviews { body } }');
  assert.equal(status, 200);
  assert.deepEqual(json.data, { me: { name: 'Ada' }, topReviews: null });
  const errors = json.errors as { message: string }[];
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.match(errors[0]?.message ?? '', /^subgraph reviews: data source unreachable: /);
});

test("supergraph: the key's depth limit applies before any subgraph is called", async () => {
  const call = (query: string) =>
    gw.request({
      method: 'POST',
      path: '/super-keyed/',
      headers: { 'content-type': 'application/json', authorization: 'fed-depth' },
      body: JSON.stringify({ query }),
    });
  const { result, users: u, reviews: r } = await sent(() => call('{ users { reviews { body } } }'));
  assert.equal(result.status, 403, result.text);
  assert.deepEqual(result.json, { errors: [{ message: 'depth limit exceeded' }] });
  assert.deepEqual([u.length, r.length], [0, 0]);
  const ok = await call('{ users { name } }');
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.json, { data: { users: [{ name: 'Ada' }, { name: 'Brian' }] } });
});

test("supergraph: an interface's fields from its subgraph, a member's entity fields from the other", async () => {
  const {
    result,
    users: u,
    reviews: r,
  } = await sent(() => ask('/super/', '{ named { __typename name ... on User { reviews { body } } } }'));
  assert.deepEqual(result.json, {
    data: {
      named: [
        { __typename: 'User', name: 'Ada', reviews: [{ body: 'Great engine' }, { body: 'Good notes' }] },
        { __typename: 'User', name: 'Brian', reviews: [{ body: 'Fast planner' }] },
      ],
    },
  });
  assert.deepEqual([u.length, r.length], [1, 1]);
});

test('supergraph: an entity interface (@key on an interface) and a key of nested fields are refused when written', async () => {
  const bad = supergraph();
  const sg = bad.supergraph as { subgraphs: Record<string, unknown>[] };
  sg.subgraphs.push({
    name: 'nodes',
    url: 'http://127.0.0.1:1/graphql',
    sdl: 'type Query { node: Node } interface Node @key(fields: "id") { id: ID! }',
  });
  sg.subgraphs.push({
    name: 'orgs',
    url: 'http://127.0.0.1:1/graphql',
    sdl: 'type Query { org: Org } type Org @key(fields: "id owner { id }") { id: ID! owner: User }',
  });
  const res = await gw.admin(
    'POST',
    '/svc/apis',
    keyless('super-iface', '/super-iface/', '', { graphql: bad }),
  );
  assert.equal(res.status, 400, res.text);
  assert.match(
    (res.json as { message: string }).message,
    /graphql\.supergraph\.subgraphs\[2\]\.sdl: Unsupported value: Node: an interface with @key \(an entity interface\) is not supported yet/,
  );
  assert.match(
    (res.json as { message: string }).message,
    /graphql\.supergraph\.subgraphs\[3\]\.sdl: Unsupported value: Org: a @key with nested fields is not supported yet/,
  );
});

test('supergraph without a merged schema: composed from the subgraphs, served alike', async () => {
  const { status, json } = await ask(
    '/super-composed/',
    '{ topReviews { body author { name } } user: __type(name: "User") { fields { name } } }',
  );
  assert.equal(status, 200);
  assert.deepEqual(json, {
    data: {
      topReviews: [
        { body: 'Great engine', author: { name: 'Ada' } },
        { body: 'Fast planner', author: { name: 'Brian' } },
      ],
      user: { fields: [{ name: 'id' }, { name: 'name' }, { name: 'reviews' }] },
    },
  });
});

test('supergraph: subgraphs that do not compose are refused when written, naming the field', async () => {
  const bad = supergraph();
  delete bad.schema;
  const sg = bad.supergraph as { subgraphs: Record<string, unknown>[] };
  sg.subgraphs.push({
    name: 'legacy',
    url: 'http://127.0.0.1:1/graphql',
    sdl: 'type Query { legacy: Review } type Review { id: Int! }',
  });
  const res = await gw.admin(
    'POST',
    '/svc/apis',
    keyless('super-clash', '/super-clash/', '', { graphql: bad }),
  );
  assert.equal(res.status, 400, res.text);
  assert.equal(
    (res.json as { message: string }).message,
    'Validation of API Definition failed. Reason: graphql.supergraph.subgraphs: Invalid value: the subgraphs do not compose: Review.id: subgraph reviews gives it the type ID!, subgraph legacy Int!',
  );
});
