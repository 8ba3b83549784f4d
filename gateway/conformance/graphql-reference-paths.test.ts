/**
 * GraphQL APIs as the reference's samples write them, calling other APIs of the gateway
 * (`svc://`, the reference's `tyk://`) whose listen path is not stripped, in front of real servers
 * that answer at one path only (`/query`, as the reference's subgraph servers): the upstream gets
 * the target URL's path followed by the path handed on, not the listen path the hand-over put
 * before it (docs/gateway.md, "Internal targets").
 *
 * - federation: two subgraph APIs (`listen_path: /users-subgraph/`, `target_url: <server>/query`,
 *   no strip) and a supergraph calling them as the operator writes a SuperGraph's subgraphs
 *   (`svc://<api>/`): a query joining both is answered, each server called at `/query`;
 * - the universal data graph v2: a GraphQL source at `/query` and a REST child field through
 *   another API (`svc://posts-rest/users/{{.object.id}}/posts`, no strip) to a JSON server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startJsonUpstream,
  startPeople,
  startUsersAndPosts,
  type Subgraph,
  type TestUpstream,
} from '../graphql/testing.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const USERS_SDL = `extend type Query { users: [User!]! }
type User @key(fields: "id") { id: ID! name: String! }`;
const POSTS_SDL = `type Query { posts: [Post!]! }
type Post { id: ID! title: String! }
extend type User @key(fields: "id") { id: ID! @external posts: [Post!]! }`;
const MERGED_SDL = `type Query { users: [User!]! posts: [Post!]! }
type User { id: ID! name: String! posts: [Post!]! }
type Post { id: ID! title: String! }`;
let gw: InProcessGateway;
let users: Subgraph;
let posts: Subgraph;
let people: Subgraph;
let rest: TestUpstream;

before(async () => {
  ({ users, posts } = await startUsersAndPosts({ users: USERS_SDL, posts: POSTS_SDL }, { path: '/query' }));
  people = await startPeople('/query');
  rest = await startJsonUpstream(0);
  gw = await startGateway();
  const subgraph = (id: string, url: string, sdl: string) =>
    keyless(
      id,
      `/${id}/`,
      `${url}/query`,
      { graphql: { enabled: true, execution_mode: 'subgraph', version: '2', subgraph: { sdl } } },
      { strip_listen_path: false },
    );
  await gw.addApi(subgraph('users-subgraph', users.url, USERS_SDL));
  await gw.addApi(subgraph('posts-subgraph', posts.url, POSTS_SDL));
  await gw.addApi(
    keyless(
      'social',
      '/social/',
      '',
      {
        graphql: {
          enabled: true,
          execution_mode: 'supergraph',
          version: '2',
          schema: MERGED_SDL,
          supergraph: {
            subgraphs: [
              { api_id: 'users-subgraph', name: 'users', url: 'svc://users-subgraph/', sdl: USERS_SDL },
              { api_id: 'posts-subgraph', name: 'posts', url: 'svc://posts-subgraph/', sdl: POSTS_SDL },
            ],
          },
        },
      },
      { strip_listen_path: true },
    ),
  );
  await gw.addApi(keyless('posts-rest', '/posts-rest/', rest.url, {}, { strip_listen_path: false }));
  await gw.addApi(
    keyless(
      'udg',
      '/udg/',
      '',
      {
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema:
            'type Query { users: [User!]! }\ntype User { id: ID! name: String posts: [Post] }\ntype Post { id: ID! title: String }',
          engine: {
            field_configs: [
              { type_name: 'Query', field_name: 'users', disable_default_mapping: false, path: ['users'] },
              { type_name: 'User', field_name: 'posts', disable_default_mapping: false, path: ['items'] },
            ],
            data_sources: [
              {
                kind: 'GraphQL',
                name: 'users',
                root_fields: [{ type: 'Query', fields: ['users'] }],
                config: { url: `${people.url}/query`, method: 'POST', headers: {}, body: '' },
              },
              {
                kind: 'REST',
                name: 'posts',
                internal: true,
                root_fields: [{ type: 'User', fields: ['posts'] }],
                config: { url: 'svc://posts-rest/users/{{.object.id}}/posts', method: 'GET' },
              },
            ],
          },
        },
      },
      { strip_listen_path: true },
    ),
  );
  await gw.reload();
});

after(async () => {
  await stopAll(gw, users, posts, people, rest);
});

const ask = async (path: string, query: string) => {
  const res = await gw.request({
    fresh: true,
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: res.json };
};

test('a supergraph over subgraph APIs not stripping their listen path: each server called at /query, the joined query answered', async () => {
  const r = await ask('/social/', '{ users { name posts { title } } }');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, {
    data: {
      users: [
        { name: 'Ada', posts: [{ title: 'Engines' }, { title: 'Notes' }] },
        { name: 'Brian', posts: [{ title: 'Planners' }] },
      ],
    },
  });
  assert.deepEqual(users.calls, ['/query']);
  assert.deepEqual(posts.calls, ['/query']);
  assert.ok(posts.queries.some((q) => q.includes('_entities')));
});

test('a data graph v2: a GraphQL source at /query joined with a REST child through an API not stripping its listen path', async () => {
  const r = await ask('/udg/', '{ users { name posts { title } } }');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, {
    data: {
      users: [
        { name: 'Ada', posts: [{ title: 'Notes' }, { title: 'Engines' }] },
        { name: 'Brian', posts: [{ title: 'C' }] },
      ],
    },
  });
  assert.deepEqual(people.calls, ['/query']);
  assert.deepEqual([...rest.calls].sort(), ['/users/1/posts', '/users/2/posts']);
});
