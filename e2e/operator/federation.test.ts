/**
 * GraphQL federation by the kinds, end to end: a real control plane, the operator as a process, a
 * real gateway, and two real GraphQL subgraph servers (graphql-js over node:http, each serving
 * `_entities` as a federation subgraph does). Applied in the worst order (the supergraph API
 * first, the SubGraphs last): every API waits with a reason ending in NotFound or NotReady, then
 * the SuperGraph is composed, the subgraph APIs carry their SubGraphs' SDLs and the supergraph API
 * answers a query joining both subgraphs. A SubGraph changed so that the two no longer compose
 * leaves the last good composition serving, the errors field by field in the SuperGraph's status;
 * a SubGraph the SuperGraph lists is held by its finalizer when deleted (InUse). A supergraph API
 * naming its subgraph APIs itself (`supergraph.subgraphs_refs`, the reference's earlier form) waits
 * for each by name, then is composed from them and answers the same query.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUsersAndPosts, type Subgraph } from '../../gateway/graphql/testing.ts';
import { httpRequest } from '../harness/processes.ts';
import {
  applyManifest,
  readyOf,
  startWorld,
  statusOf,
  stopWorld,
  waitForStatus,
  waitReady,
  type OperatorWorld,
} from './helpers.ts';

const NS = 'fed';

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
type Post @key(fields: "id") {
  id: ID!
  title: String!
}
type User @key(fields: "id") @extends {
  id: ID! @external
  posts: [Post!]!
}`;

let w: OperatorWorld;
let users: Subgraph;
let posts: Subgraph;

before(async () => {
  ({ users, posts } = await startUsersAndPosts({ users: USERS_SDL, posts: POSTS_SDL }));
  w = await startWorld({
    name: 'federation',
    namespaces: [NS],
    operator: { env: { WATCH_NAMESPACE: NS, SVC_RESYNC_PERIOD: '30s' } },
  });
});

after(() => stopWorld(w, users, posts));

const indent = (text: string, by: string): string =>
  text
    .split('\n')
    .map((l) => `${by}${l}`)
    .join('\n');

const subGraphManifest = (name: string, sdl: string): string => `apiVersion: svc.svc.io/v1alpha1
kind: SubGraph
metadata: {name: ${name}, namespace: ${NS}}
spec:
  sdl: |
${indent(sdl, '    ')}
`;

const subgraphApi = (name: string, graph: string, url: string): string => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: ${NS}}
spec:
  name: ${name}
  use_keyless: true
  internal: true
  proxy: {listen_path: /${name}/, target_url: '${url}', strip_listen_path: true}
  graphql: {enabled: true, execution_mode: subgraph, graph_ref: ${graph}}
`;

/** A GraphQL query through the gateway's supergraph API. */
async function ask(
  q: string,
  listenPath = '/social/',
): Promise<{ status: number; body: { data?: unknown; errors?: { message: string }[] } }> {
  const r = await httpRequest(`${w.gw.url}${listenPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: q }),
  });
  return { status: r.status, body: JSON.parse(r.body) as { data?: unknown } };
}

const JOIN = '{ users { name posts { title } } }';
const JOINED = {
  users: [
    { name: 'Ada', posts: [{ title: 'Engines' }, { title: 'Notes' }] },
    { name: 'Brian', posts: [{ title: 'Planners' }] },
  ],
};

const reasonOf = (st: Record<string, unknown>): string | undefined => readyOf(st)?.reason;

test('applied supergraph API first, SubGraphs last: each waits, then the supergraph answers a query joining both subgraphs', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: social, namespace: ${NS}}
spec:
  name: social
  use_keyless: true
  proxy: {listen_path: /social/, strip_listen_path: true}
  graphql: {enabled: true, execution_mode: supergraph, graph_ref: social}
`,
  );
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'social' },
    'SuperGraphNotFound',
    (st) => reasonOf(st) === 'SuperGraphNotFound',
  );
  await applyManifest(w.cp, subgraphApi('users-subgraph', 'users', users.url));
  await applyManifest(w.cp, subgraphApi('posts-subgraph', 'posts', posts.url));
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'users-subgraph' },
    'SubGraphNotFound',
    (st) => reasonOf(st) === 'SubGraphNotFound',
  );
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SuperGraph
metadata: {name: social, namespace: ${NS}}
spec:
  subgraph_refs: [users, posts]
`,
  );
  await waitForStatus(
    w.cp,
    { kind: 'supergraph', ns: NS, name: 'social' },
    'SubGraphNotFound',
    (st) => reasonOf(st) === 'SubGraphNotFound',
  );
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'social' },
    'SuperGraphNotReady',
    (st) => reasonOf(st) === 'SuperGraphNotReady',
  );
  await applyManifest(w.cp, subGraphManifest('users', USERS_SDL));
  await applyManifest(w.cp, subGraphManifest('posts', POSTS_SDL));

  const composed = await waitReady(w.cp, { kind: 'supergraph', ns: NS, name: 'social' });
  assert.match(
    String(composed.schema),
    /type User \{\n {2}id: ID!\n {2}name: String!\n {2}posts: \[Post!\]!\n\}/,
  );
  for (const name of ['users-subgraph', 'posts-subgraph', 'social'])
    await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name });
  const sub = await waitForStatus(
    w.cp,
    { kind: 'subgraph', ns: NS, name: 'users' },
    'lists its users',
    (st) => Array.isArray(st.linked_supergraphs) && Array.isArray(st.linked_apis),
  );
  assert.deepEqual(sub.linked_apis, [{ kind: 'ApiDefinition', name: 'users-subgraph', namespace: NS }]);
  assert.deepEqual(sub.linked_supergraphs, [{ name: 'social', namespace: NS }]);

  const r = await ask(JOIN);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, { data: JOINED });
  assert.ok(
    posts.queries.some((q) => q.includes('_entities')),
    'the posts of the users are fetched from the posts subgraph through _entities',
  );
});

test('a SubGraph changed so that they no longer compose: the errors in the status, the last good composition still served', async () => {
  const good = await statusOf(w.cp, 'supergraph', NS, 'social');
  await applyManifest(
    w.cp,
    subGraphManifest('posts', POSTS_SDL.replace('id: ID! @external', 'id: ID! @external\n  name: Int')),
  );
  const bad = await waitForStatus(
    w.cp,
    { kind: 'supergraph', ns: NS, name: 'social' },
    'CompositionFailed',
    (st) => reasonOf(st) === 'CompositionFailed',
  );
  assert.deepEqual(bad.composition_errors, [
    { field: 'User.name', message: 'subgraph users gives it the type String!, subgraph posts Int' },
  ]);
  assert.match(readyOf(bad)?.message ?? '', /the composition of generation 1 is still served$/);
  assert.equal(bad.schema, good.schema);
  const r = await ask(JOIN);
  assert.deepEqual(r.body, { data: JOINED });
  // Fixed again: composed, Ready.
  await applyManifest(w.cp, subGraphManifest('posts', POSTS_SDL));
  await waitForStatus(
    w.cp,
    { kind: 'supergraph', ns: NS, name: 'social' },
    'Composed again',
    (st) => reasonOf(st) === 'Composed' && st.composition_errors === undefined,
  );
});

test('a SubGraph the SuperGraph lists, deleted: held by its finalizer (InUse) until the SuperGraph lets it go', async () => {
  await w.cp.kubectl(['delete', 'subgraph', 'posts', '-n', NS, '--wait=false']);
  const held = await waitForStatus(
    w.cp,
    { kind: 'subgraph', ns: NS, name: 'posts' },
    'InUse',
    (st) => reasonOf(st) === 'InUse',
  );
  assert.match(
    readyOf(held)?.message ?? '',
    /^still used by SuperGraph fed\/social, ApiDefinition fed\/posts-subgraph: /,
  );
  // Still served meanwhile.
  assert.deepEqual((await ask(JOIN)).body, { data: JOINED });
  await w.cp.kubectl(['delete', 'apidefinition', 'social', 'posts-subgraph', '-n', NS, '--wait=true']);
  await w.cp.kubectl(['delete', 'supergraph', 'social', '-n', NS, '--wait=true']);
  await w.cp.kubectl(['wait', '--for=delete', 'subgraph/posts', '-n', NS, '--timeout=60s']);
});

/** A subgraph API with its SDL inline, as the reference's 09-federation samples write it. */
const inlineSubgraphApi = (name: string, sdl: string, url: string): string => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: ${NS}}
spec:
  name: ${name}
  use_keyless: true
  internal: true
  proxy: {listen_path: /${name}/, target_url: '${url}', disable_strip_slash: true}
  graphql:
    enabled: true
    execution_mode: subgraph
    subgraph:
      sdl: |
${indent(sdl, '        ')}
`;

test("a supergraph API naming its subgraph APIs (subgraphs_refs, the reference's earlier form): waits naming each missing one, then answers the joining query", async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: social-refs, namespace: ${NS}}
spec:
  name: social-refs
  use_keyless: true
  proxy: {listen_path: /social-refs/, target_url: '', strip_listen_path: true}
  graphql:
    enabled: true
    execution_mode: supergraph
    supergraph:
      subgraphs_refs:
        - {name: ref-users, namespace: ${NS}}
        - {name: ref-posts}
`,
  );
  const first = await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'social-refs' },
    'SubGraphApiNotFound ref-users',
    (st) => reasonOf(st) === 'SubGraphApiNotFound' && (readyOf(st)?.message ?? '').includes('ref-users'),
  );
  assert.equal(
    readyOf(first)?.message,
    `spec.graphql.supergraph.subgraphs_refs[0]: ApiDefinition ${NS}/ref-users does not exist: the supergraph is composed once it does`,
  );
  assert.equal((await ask(JOIN, '/social-refs/')).status, 404, 'not served while it waits');
  // The ApiDefinition watch queues the supergraph API when each subgraph API appears.
  await applyManifest(w.cp, inlineSubgraphApi('ref-users', USERS_SDL, users.url));
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'social-refs' },
    'SubGraphApiNotFound ref-posts',
    (st) =>
      reasonOf(st) === 'SubGraphApiNotFound' &&
      (readyOf(st)?.message ?? '').includes('subgraphs_refs[1]: ApiDefinition fed/ref-posts'),
  );
  await applyManifest(w.cp, inlineSubgraphApi('ref-posts', POSTS_SDL, posts.url));
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: 'social-refs' });
  const before = posts.queries.length;
  const r = await ask(JOIN, '/social-refs/');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body, { data: JOINED });
  assert.ok(
    posts.queries.slice(before).some((q) => q.includes('_entities')),
    'the posts of the users are fetched from the posts subgraph API through _entities',
  );
  await w.cp.kubectl([
    'delete',
    'apidefinition',
    'social-refs',
    'ref-users',
    'ref-posts',
    '-n',
    NS,
    '--wait=true',
  ]);
});
