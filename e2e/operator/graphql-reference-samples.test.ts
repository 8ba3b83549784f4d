/**
 * The reference operator's GraphQL API documents, end to end (issue 31): manifests written here in
 * the reference's own naming (group tyk.tyk.io; the shapes of its federation and universal data
 * graph v2 samples, not their text), renamed as tools/reference-samples/measure.ts renames them,
 * applied through a real API server and the webhooks, turned into APIs by the operator as a
 * process and served by a real gateway process, against real local upstreams:
 *
 * - federation: two GraphQL subgraph servers answering at `/query` only (as the reference's
 *   samples' servers do: any other path is 404), each behind a subgraph API as the reference's
 *   samples write them (`listen_path: /users-subgraph/`, `target_url: http://host:port/query`, the
 *   listen path not stripped, `execution_mode: subgraph`, `graph_ref`), their SubGraphs, a
 *   SuperGraph listing them and the supergraph API (`execution_mode: supergraph`, `graph_ref`):
 *   a query joining both subgraphs is answered. The supergraph calls each subgraph API as
 *   `svc://<api>` (the reference's `tyk://`): the subgraph server must be sent `/query`, not
 *   `/query/users-subgraph/` (the listen path the internal hand-over puts before the path is not
 *   sent upstream, as in the reference gateway);
 * - the universal data graph in its version-2 form: a GraphQL source (a real graphql-js server at
 *   `/query`) serving the users, each user's posts a REST child field reading `{{.object.id}}`,
 *   through another API of the gateway (`tyk://`, listen path not stripped) to a real JSON server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startJsonUpstream,
  startPeople,
  startUsersAndPosts,
  type Subgraph,
  type TestUpstream,
} from '../../gateway/graphql/testing.ts';
import { renameToSvc } from '../../tools/reference-samples/measure.ts';
import { httpRequest } from '../harness/processes.ts';
import { applyManifest, startWorld, stopWorld, waitReady, type OperatorWorld } from './helpers.ts';

const NS = 'refgql';

type Doc = Record<string, unknown>;

/** A document in the reference's naming. */
const doc = (kind: string, name: string, spec: Doc): Doc => ({
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind,
  metadata: { name, namespace: NS },
  spec,
});

/** An ApiDefinition in the reference's naming. */
const api = (name: string, spec: Doc): Doc =>
  doc('ApiDefinition', name, { name, protocol: 'http', active: true, ...spec });

/** Applies documents in the reference's naming, renamed to svc's, as `kubectl apply -f` of one file. */
async function applyReference(docs: Doc[]): Promise<void> {
  await applyManifest(w.cp, docs.map((d) => JSON.stringify(renameToSvc(d))).join('\n---\n'));
}

const USERS_SDL = `extend type Query {
  users: [User!]!
}
type User @key(fields: "id") {
  id: ID!
  name: String!
}`;
const POSTS_SDL = `type Query {
  posts: [Post!]!
}
type Post {
  id: ID!
  title: String!
}
extend type User @key(fields: "id") {
  id: ID! @external
  posts: [Post!]!
}`;
let w: OperatorWorld;
let users: Subgraph;
let posts: Subgraph;
/** The universal data graph's GraphQL source and REST server. */
let people: Subgraph;
let rest: TestUpstream;

before(async () => {
  ({ users, posts } = await startUsersAndPosts({ users: USERS_SDL, posts: POSTS_SDL }, { path: '/query' }));
  people = await startPeople('/query');
  rest = await startJsonUpstream(0);
  w = await startWorld({
    name: 'graphql-reference',
    namespaces: [NS],
    operator: { env: { WATCH_NAMESPACE: NS, SVC_RESYNC_PERIOD: '30s' } },
  });
});

after(() => stopWorld(w, users, posts, people, rest));

/** A GraphQL query through the gateway. */
async function ask(
  listenPath: string,
  q: string,
): Promise<{ status: number; body: { data?: unknown; errors?: { message: string }[] } }> {
  const r = await httpRequest(`${w.gw.url}${listenPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: q }),
  });
  return { status: r.status, body: JSON.parse(r.body) as { data?: unknown } };
}

/** The answer to `{ users { name posts { title } } }` joining both subgraphs. */
const JOINED = {
  data: {
    users: [
      { name: 'Ada', posts: [{ title: 'Engines' }, { title: 'Notes' }] },
      { name: 'Brian', posts: [{ title: 'Planners' }] },
    ],
  },
};

/** A subgraph server was called, and only at its endpoint `/query`. */
function calledAtQuery(calls: readonly string[]): void {
  assert.ok(calls.length > 0 && calls.every((c) => c === '/query'), calls.join(' '));
}

/** A subgraph API as the reference's federation samples write it: its listen path not stripped. */
const subgraphApi = (name: string, graph: string, url: string): Doc =>
  api(name, {
    use_keyless: true,
    proxy: { target_url: `${url}/query`, listen_path: `/${name}/`, strip_listen_path: false },
    graphql: {
      enabled: true,
      execution_mode: 'subgraph',
      version: '2',
      graph_ref: graph,
      playground: { enabled: false, path: '' },
    },
  });

test('federation: SubGraphs, a SuperGraph, subgraph APIs on servers at /query and the supergraph API, in the reference naming: a query joining both subgraphs is answered', async () => {
  await applyReference([
    doc('SubGraph', 'users-subgraph', { sdl: USERS_SDL }),
    doc('SubGraph', 'posts-subgraph', { sdl: POSTS_SDL }),
    subgraphApi('users-subgraph', 'users-subgraph', users.url),
    subgraphApi('posts-subgraph', 'posts-subgraph', posts.url),
    doc('SuperGraph', 'social-media-supergraph', {
      subgraph_refs: [
        { name: 'users-subgraph', namespace: NS },
        { name: 'posts-subgraph', namespace: NS },
      ],
    }),
    api('federation-supergraph', {
      use_keyless: true,
      proxy: { target_url: '', listen_path: '/social-media-apis-federated/', strip_listen_path: true },
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        version: '2',
        graph_ref: 'social-media-supergraph',
        playground: { enabled: true, path: '/playground' },
      },
    }),
  ]);
  await waitReady(w.cp, { kind: 'supergraph', ns: NS, name: 'social-media-supergraph' });
  for (const name of ['users-subgraph', 'posts-subgraph', 'federation-supergraph'])
    await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name });

  const r = await ask('/social-media-apis-federated/', '{ users { name posts { title } } }');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, JOINED);
  // Each subgraph server was called at its endpoint, and the posts through `_entities`.
  calledAtQuery(users.calls);
  calledAtQuery(posts.calls);
  assert.ok(
    posts.queries.some((q) => q.includes('_entities')),
    'the posts of the users are fetched from the posts subgraph through _entities',
  );
});

test("federation, the reference's earlier form: a supergraph API naming inline subgraph APIs (graphql.supergraph.subgraphs_refs) on servers at /query, answered", async () => {
  const inline = (name: string, sdl: string, url: string): Doc =>
    api(name, {
      use_keyless: true,
      proxy: { target_url: `${url}/query`, listen_path: `/${name}/`, strip_listen_path: false },
      graphql: { enabled: true, execution_mode: 'subgraph', version: '2', subgraph: { sdl } },
    });
  const before = { users: users.calls.length, posts: posts.calls.length };
  await applyReference([
    inline('refs-users', USERS_SDL, users.url),
    inline('refs-posts', POSTS_SDL, posts.url),
    api('refs-supergraph', {
      use_keyless: true,
      proxy: { target_url: '', listen_path: '/refs-supergraph/', strip_listen_path: true },
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        version: '2',
        supergraph: {
          subgraphs_refs: [
            { name: 'refs-users', namespace: NS },
            { name: 'refs-posts', namespace: NS },
          ],
        },
      },
    }),
  ]);
  for (const name of ['refs-users', 'refs-posts', 'refs-supergraph'])
    await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name });
  const r = await ask('/refs-supergraph/', '{ users { name posts { title } } }');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, JOINED);
  calledAtQuery(users.calls.slice(before.users));
  calledAtQuery(posts.calls.slice(before.posts));
});

test('universal data graph v2, in the reference naming: a GraphQL source at /query joined with a REST child field through another API (tyk://), answered', async () => {
  await applyReference([
    // The REST server behind an API of its own, its listen path not stripped: the data graph
    // calls it as tyk://posts-rest/<path>, and the server gets <path>.
    api('posts-rest', {
      use_keyless: true,
      proxy: { target_url: rest.url, listen_path: '/posts-rest/', strip_listen_path: false },
    }),
    api('udg-users-posts', {
      use_keyless: true,
      proxy: { target_url: '', listen_path: '/udg-users-posts/', strip_listen_path: true },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        version: '2',
        schema:
          'type Query {\n  users: [User!]!\n}\ntype User {\n  id: ID!\n  name: String\n  posts: [Post]\n}\ntype Post {\n  id: ID!\n  title: String\n}\n',
        engine: {
          field_configs: [
            { type_name: 'Query', field_name: 'users', disable_default_mapping: false, path: ['users'] },
            { type_name: 'User', field_name: 'posts', disable_default_mapping: false, path: ['items'] },
          ],
          data_sources: [
            {
              kind: 'GraphQL',
              name: 'users',
              internal: false,
              root_fields: [{ type: 'Query', fields: ['users'] }],
              config: { url: `${people.url}/query`, method: 'POST', headers: {}, body: '' },
            },
            {
              kind: 'REST',
              name: 'posts',
              internal: true,
              root_fields: [{ type: 'User', fields: ['posts'] }],
              config: {
                url: 'tyk://posts-rest/users/{{.object.id}}/posts',
                method: 'GET',
                headers: {},
                body: '',
                query: [],
              },
            },
          ],
        },
        playground: { enabled: true, path: '/playground' },
      },
    }),
  ]);
  for (const name of ['posts-rest', 'udg-users-posts'])
    await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name });

  const r = await ask('/udg-users-posts/', '{ users { name posts { title } } }');
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
