/**
 * GraphQL federation in the operator: SuperGraphs composed from their SubGraphs (the last good
 * composition kept when a change breaks it), SubGraphs held while used, and ApiDefinitions whose
 * graph_ref is resolved into the gateway's inline form, waiting until the graph is there.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SubGraphStatus, SuperGraphStatus } from '../../schemas/generated/kinds.ts';
import { derivedId } from '../ids.ts';
import { API_FINALIZER, reconcileApiDefinition } from './api-definition.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';
import { reconcileSubGraph, SUBGRAPH_FINALIZER } from './sub-graph.ts';
import { reconcileSuperGraph, SUPERGRAPH_FINALIZER } from './super-graph.ts';
import { assertReady, baseDeps, FakeGateway, readyOf } from './testing.ts';
import type { GraphLookups } from './graph-refs.ts';

const NS = 'social';
const USERS = `extend type Query { users: [User!]! }
type User @key(fields: "id") { id: ID! name: String! }`;
const POSTS = `type Query { posts: [Post!]! }
type Post @key(fields: "id") { id: ID! title: String! }
type User @key(fields: "id") @extends { id: ID! @external posts: [Post!]! }`;

const subGraph = (
  name: string,
  sdl: string,
  extra: Partial<SubGraphObject['metadata']> = {},
): SubGraphObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'SubGraph',
  metadata: { name, namespace: NS, generation: 1, finalizers: [SUBGRAPH_FINALIZER], ...extra },
  spec: { sdl },
});
const superGraph = (refs: string[], extra: Partial<SuperGraphObject['metadata']> = {}): SuperGraphObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'SuperGraph',
  metadata: { name: 'social', namespace: NS, generation: 1, finalizers: [SUPERGRAPH_FINALIZER], ...extra },
  spec: { subgraph_refs: refs },
});
const graphApi = (name: string, mode: 'subgraph' | 'supergraph', ref: string): ApiObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name, namespace: NS, generation: 1, finalizers: [API_FINALIZER] },
  spec: {
    name,
    use_keyless: true,
    proxy: { listen_path: `/${name}/`, target_url: mode === 'subgraph' ? `http://${name}:4000/query` : '' },
    graphql: { enabled: true, execution_mode: mode, graph_ref: ref },
  },
});

/** Reconciles the SuperGraph `sg` against `subs` (by name) and `apis`; the status written, or the one it had. */
async function compose(sg: SuperGraphObject, subs: SubGraphObject[], apis: ApiObject[] = []) {
  const deps = {
    ...baseDeps<SuperGraphObject>({}),
    read: () => Promise.resolve(sg),
    subGraph: (_ns: string, name: string) => subs.find((s) => s.metadata.name === name),
    apis: () => apis,
  };
  const result = await reconcileSuperGraph(`${NS}/social`, deps);
  const last = deps.objects.statuses.at(-1) as SuperGraphStatus | undefined;
  const status = last ?? sg.status;
  return { result, status, deps };
}

describe('reconcileSuperGraph', () => {
  test('composes its SubGraphs: the schema joins both, each SubGraph kept with its SDL, Ready Composed', async () => {
    const { status } = await compose(superGraph(['users', 'posts']), [
      subGraph('users', USERS),
      subGraph('posts', POSTS),
    ]);
    assertReady(status, {
      status: 'True',
      reason: 'Composed',
      message: /^composed from SubGraphs users, posts$/,
    });
    assert.match(
      status?.schema ?? '',
      /type User \{\n {2}id: ID!\n {2}name: String!\n {2}posts: \[Post!\]!\n\}/,
    );
    assert.match(status?.schema ?? '', /type Query \{\n {2}users: \[User!\]!\n {2}posts: \[Post!\]!\n\}/);
    assert.deepEqual(
      status?.subgraphs?.map((s) => [s.name, s.namespace, s.sdl]),
      [
        ['users', NS, USERS],
        ['posts', NS, POSTS],
      ],
    );
    assert.deepEqual(status.linked_subgraphs, [
      { name: 'posts', namespace: NS },
      { name: 'users', namespace: NS },
    ]);
    assert.equal(status.composedGeneration, 1);
    assert.equal(status.composition_errors, undefined);
  });

  test('a SubGraph not there yet: SubGraphNotFound naming the field; composed once it is', async () => {
    const sg = superGraph(['users', 'posts']);
    const waiting = await compose(sg, [subGraph('users', USERS)]);
    assertReady(waiting.status, {
      status: 'False',
      reason: 'SubGraphNotFound',
      message:
        /^spec\.subgraph_refs\[1\]: SubGraph social\/posts does not exist: .*nothing is served until they do$/,
    });
    assert.equal(waiting.status?.schema, undefined);
    const later = await compose({ ...sg, status: waiting.status }, [
      subGraph('users', USERS),
      subGraph('posts', POSTS),
    ]);
    assertReady(later.status, { status: 'True', reason: 'Composed' });
  });

  test('a SubGraph changed so that they no longer compose: the errors field by field, the last good composition kept', async () => {
    const sg = superGraph(['users', 'posts']);
    const good = await compose(sg, [subGraph('users', USERS), subGraph('posts', POSTS)]);
    const clash = `type Query { posts: [Post!]! }
type Post @key(fields: "id") { id: ID! title: Int! }
type User @key(fields: "id") @extends { id: ID! @external name: Int posts: [Post!]! }`;
    const bad = await compose({ ...sg, metadata: { ...sg.metadata, generation: 2 }, status: good.status }, [
      subGraph('users', USERS),
      subGraph('posts', clash),
    ]);
    assert.deepEqual(bad.status?.composition_errors, [
      {
        field: 'User.name',
        message: 'subgraph users gives it the type String!, subgraph posts Int',
      },
    ]);
    assert.equal(bad.status.schema, good.status?.schema, 'the last good schema is kept');
    assert.deepEqual(bad.status.subgraphs, good.status?.subgraphs, 'with the SDLs it was composed from');
    assertReady(bad.status, {
      status: 'False',
      reason: 'CompositionFailed',
      message:
        /^the SubGraphs do not compose: User\.name: subgraph users gives it the type String!, subgraph posts Int; the composition of generation 1 is still served$/,
    });
    assert.deepEqual(bad.deps.events.lines, [
      `Warning CompositionFailed: ${readyOf(bad.status)?.message ?? ''}`,
    ]);
  });

  test('a root field of the given schema that no SubGraph resolves is a composition error naming it', async () => {
    const sg = {
      ...superGraph(['users']),
      spec: {
        subgraph_refs: ['users'],
        schema: 'type Query { users: [User!]! posts: [Int] } type User { id: ID! }',
      },
    };
    const { status } = await compose(sg, [subGraph('users', USERS)]);
    assert.deepEqual(
      status?.composition_errors?.map((e) => [e.field, e.message]),
      [['Query.posts', 'Query.posts: no subgraph resolves this field']],
    );
  });

  test("the reference's merged schema (merged_sdl, schema empty) is served instead of the composition", async () => {
    const merged = 'type Query { users: [User!]! } type User { id: ID! name: String! }';
    const sg = {
      ...superGraph(['users']),
      spec: { subgraph_refs: ['users'], schema: '', merged_sdl: merged },
    };
    const { status } = await compose(sg, [subGraph('users', USERS)]);
    assertReady(status, { status: 'True', reason: 'Composed', message: /serving the schema the spec gives/ });
    assert.equal(status?.schema, merged);
  });

  test('deleting: held while an API serves it (InUse), the finalizer removed once none does', async () => {
    const going = superGraph(['users'], { deletionTimestamp: new Date(0) });
    const held = await compose(going, [], [graphApi('social', 'supergraph', 'social')]);
    assertReady(held.status, {
      status: 'False',
      reason: 'InUse',
      message: /^still used by ApiDefinition social\/social: /,
    });
    assert.ok((held.result.requeueAfterMs ?? 0) > 0);
    assert.deepEqual(held.deps.objects.finalizers, []);
    const free = await compose(going, [], [graphApi('other', 'supergraph', 'other')]);
    assert.deepEqual(free.deps.objects.finalizers, [`-${SUPERGRAPH_FINALIZER}`]);
  });
});

describe('reconcileSubGraph', () => {
  const run = async (sub: SubGraphObject, apis: ApiObject[], supers: SuperGraphObject[]) => {
    const deps = {
      ...baseDeps<SubGraphObject>({}),
      read: () => Promise.resolve(sub),
      apis: () => apis,
      supergraphs: () => supers,
    };
    const result = await reconcileSubGraph(`${NS}/${sub.metadata.name}`, deps);
    return { result, status: deps.objects.statuses.at(-1) as SubGraphStatus | undefined, deps };
  };

  test('its status lists the APIs serving it and the SuperGraphs composing it', async () => {
    const { status } = await run(
      subGraph('users', USERS),
      [graphApi('users-subgraph', 'subgraph', 'users'), graphApi('posts-subgraph', 'subgraph', 'posts')],
      [superGraph(['users', 'posts'])],
    );
    assert.deepEqual(status?.linked_apis, [{ kind: 'ApiDefinition', name: 'users-subgraph', namespace: NS }]);
    assert.deepEqual(status.linked_supergraphs, [{ name: 'social', namespace: NS }]);
    assertReady(status, {
      status: 'True',
      reason: 'Valid',
      message: /^the SDL builds; used by SuperGraph social\/social, ApiDefinition social\/users-subgraph$/,
    });
  });

  test('an SDL that does not build (webhooks bypassed): SpecInvalid naming the field and the line', async () => {
    const { status } = await run(subGraph('users', 'type Query {'), [], []);
    assertReady(status, {
      status: 'False',
      reason: 'SpecInvalid',
      message: /^spec\.sdl: line 1, column 13: Syntax Error/,
    });
  });

  test('deleting while a SuperGraph lists it: held (InUse); once unlisted, the finalizer goes', async () => {
    const going = subGraph('users', USERS, { deletionTimestamp: new Date(0) });
    const held = await run(going, [], [superGraph(['users', 'posts'])]);
    assertReady(held.status, {
      status: 'False',
      reason: 'InUse',
      message: /^still used by SuperGraph social\/social: /,
    });
    assert.deepEqual(held.deps.objects.finalizers, []);
    const free = await run(going, [], [superGraph(['posts'])]);
    assert.deepEqual(free.deps.objects.finalizers, [`-${SUBGRAPH_FINALIZER}`]);
  });
});

describe('reconcileApiDefinition with graph_ref', () => {
  const run = async (api: ApiObject, graphs: GraphLookups) => {
    const gw = new FakeGateway('http://gw');
    const deps = {
      ...baseDeps<ApiObject>({ default: gw }),
      read: () => Promise.resolve(api),
      policies: () => [],
      secret: () => Promise.resolve(undefined),
      apis: () => [api],
      graphs,
    };
    await reconcileApiDefinition(`${NS}/${api.metadata.name}`, deps);
    return { gw, status: deps.objects.statuses.at(-1) };
  };
  const lookups = (subs: SubGraphObject[], supers: SuperGraphObject[], apis: ApiObject[]): GraphLookups => ({
    subGraph: (_ns, name) => subs.find((s) => s.metadata.name === name),
    superGraph: (_ns, name) => supers.find((s) => s.metadata.name === name),
    subgraphApis: (ref) =>
      apis.filter(
        (a) => a.spec.graphql?.graph_ref === ref.name && a.spec.graphql.execution_mode === 'subgraph',
      ),
  });

  test('a subgraph API waits for its SubGraph (SubGraphNotFound, nothing pushed), then carries its SDL', async () => {
    const api = graphApi('users-subgraph', 'subgraph', 'users');
    const waiting = await run(api, lookups([], [], []));
    assertReady(waiting.status, {
      status: 'False',
      reason: 'SubGraphNotFound',
      message: /^spec\.graphql\.graph_ref: SubGraph social\/users does not exist/,
    });
    assert.deepEqual(waiting.gw.writes, []);
    const served = await run(api, lookups([subGraph('users', USERS)], [], []));
    assertReady(served.status, { status: 'True', reason: 'Synced' });
    const pushed = served.gw.apis.get(derivedId(NS, 'users-subgraph'));
    assert.deepEqual(pushed?.graphql, {
      enabled: true,
      execution_mode: 'subgraph',
      subgraph: { sdl: USERS },
    });
  });

  test('a supergraph API: the composition and, for each SubGraph, the API serving it by ID', async () => {
    const api = graphApi('social', 'supergraph', 'social');
    const subs = [subGraph('users', USERS), subGraph('posts', POSTS)];
    const noComposition = await run(api, lookups(subs, [superGraph(['users', 'posts'])], []));
    assertReady(noComposition.status, { status: 'False', reason: 'SuperGraphNotReady' });
    const composed = await compose(superGraph(['users', 'posts']), subs);
    const sg = { ...superGraph(['users', 'posts']), status: composed.status };
    const noSubgraphApi = await run(
      api,
      lookups(subs, [sg], [graphApi('users-subgraph', 'subgraph', 'users')]),
    );
    assertReady(noSubgraphApi.status, {
      status: 'False',
      reason: 'SubGraphApiNotFound',
      message: /composes SubGraph social\/posts, which no ApiDefinition serves/,
    });
    const subgraphApis = [
      graphApi('users-subgraph', 'subgraph', 'users'),
      graphApi('posts-subgraph', 'subgraph', 'posts'),
    ];
    const served = await run(api, lookups(subs, [sg], subgraphApis));
    assertReady(served.status, { status: 'True', reason: 'Synced' });
    const pushed = served.gw.apis.get(derivedId(NS, 'social'));
    assert.equal(pushed?.graphql?.graph_ref, undefined);
    assert.deepEqual(pushed?.graphql?.supergraph, {
      subgraphs: [
        { name: 'users', url: `svc://${derivedId(NS, 'users-subgraph')}/`, sdl: USERS },
        { name: 'posts', url: `svc://${derivedId(NS, 'posts-subgraph')}/`, sdl: POSTS },
      ],
      merged_sdl: composed.status?.schema,
    });
  });

  test('a SuperGraph that does not exist: SuperGraphNotFound', async () => {
    const { status, gw } = await run(graphApi('social', 'supergraph', 'social'), lookups([], [], []));
    assertReady(status, { status: 'False', reason: 'SuperGraphNotFound' });
    assert.deepEqual(gw.writes, []);
  });
});

describe('reconcileApiDefinition with supergraph.subgraphs_refs (the reference earlier form)', () => {
  /** A subgraph API with its SDL inline, as the reference's 09-federation samples write it. */
  const inlineSubgraphApi = (name: string, sdl: string): ApiObject => ({
    ...graphApi(name, 'subgraph', ''),
    spec: {
      name,
      use_keyless: true,
      internal: true,
      proxy: { listen_path: `/${name}/`, target_url: `http://${name}:4000/query` },
      graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl } },
    },
  });
  const social: ApiObject = {
    ...graphApi('social', 'supergraph', ''),
    spec: {
      name: 'social',
      use_keyless: true,
      proxy: { listen_path: '/social/', target_url: '' },
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        supergraph: {
          subgraphs_refs: [
            { name: 'users-subgraph', namespace: NS },
            { name: 'posts-subgraph', namespace: NS, headers: { 'x-team': 'posts' } },
          ],
        },
      },
    },
  };
  const run = async (apis: ApiObject[]) => {
    const gw = new FakeGateway('http://gw');
    const deps = {
      ...baseDeps<ApiObject>({ default: gw }),
      read: () => Promise.resolve(social),
      policies: () => [],
      secret: () => Promise.resolve(undefined),
      apis: () => [social],
      graphs: {
        subGraph: () => undefined,
        superGraph: () => undefined,
        subgraphApis: () => [],
        api: (_ns: string, name: string) => apis.find((a) => a.metadata.name === name),
      },
    };
    await reconcileApiDefinition(`${NS}/social`, deps);
    return { gw, status: deps.objects.statuses.at(-1) };
  };

  test('waits naming the subgraph API that is missing (nothing pushed), then pushes the composition', async () => {
    const waiting = await run([inlineSubgraphApi('users-subgraph', USERS)]);
    assertReady(waiting.status, {
      status: 'False',
      reason: 'SubGraphApiNotFound',
      message:
        /^spec\.graphql\.supergraph\.subgraphs_refs\[1\]: ApiDefinition social\/posts-subgraph does not exist: the supergraph is composed once it does$/,
    });
    assert.deepEqual(waiting.gw.writes, []);

    const served = await run([
      inlineSubgraphApi('users-subgraph', USERS),
      inlineSubgraphApi('posts-subgraph', POSTS),
    ]);
    assertReady(served.status, { status: 'True', reason: 'Synced' });
    const pushed = served.gw.apis.get(derivedId(NS, 'social'));
    const supergraph = pushed?.graphql?.supergraph;
    assert.equal(supergraph?.subgraphs_refs, undefined);
    assert.deepEqual(supergraph?.subgraphs, [
      { name: 'users-subgraph', url: `svc://${derivedId(NS, 'users-subgraph')}/`, sdl: USERS },
      {
        name: 'posts-subgraph',
        url: `svc://${derivedId(NS, 'posts-subgraph')}/`,
        sdl: POSTS,
        headers: { 'x-team': 'posts' },
      },
    ]);
    assert.match(
      String(supergraph.merged_sdl),
      /type User \{\n {2}id: ID!\n {2}name: String!\n {2}posts: \[Post!\]!\n\}/,
    );
  });
});
