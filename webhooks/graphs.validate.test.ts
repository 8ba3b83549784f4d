import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { API_VERSION } from '../schemas/common.ts';
import { validateApiDefinition } from './api-definition.validate.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateSubGraph, validateSubGraphDelete } from './sub-graph.validate.ts';
import { validateSuperGraph, validateSuperGraphDelete } from './super-graph.validate.ts';
import { apiDefinition } from './testing.ts';

type Obj = Record<string, unknown>;

const USERS = `extend type Query { user(id: ID!): User  users: [User!]! }
type User @key(fields: "id") { id: ID! name: String! }`;
const POSTS = `type Query { posts: [Post!]! }
type Post @key(fields: "id") { id: ID! title: String! author: User! }
type User @key(fields: "id") @extends { id: ID! @external posts: [Post!]! }`;

const subGraph = (name: string, spec: Obj, extra: Obj = {}): Obj => ({
  apiVersion: API_VERSION,
  kind: 'SubGraph',
  metadata: { name, namespace: 'default', ...extra },
  spec,
});
const superGraph = (name: string, spec: Obj, extra: Obj = {}): Obj => ({
  apiVersion: API_VERSION,
  kind: 'SuperGraph',
  metadata: { name, namespace: 'default', ...extra },
  spec,
});
const graphApi = (name: string, mode: string, ref: string, graphql: Obj = {}): Obj =>
  apiDefinition(name, {
    graphql: { enabled: true, execution_mode: mode, graph_ref: ref, version: '2', ...graphql },
    ...(mode === 'supergraph' ? { proxy: { listen_path: `/${name}/`, target_url: '' } } : {}),
  });

describe('SubGraph admission', () => {
  const cases: {
    name: string;
    spec: Obj;
    errors?: { path: string; message: RegExp }[];
    warnings?: RegExp[];
  }[] = [
    { name: 'an SDL with @key and @external is admitted', spec: { sdl: POSTS } },
    {
      name: "the reference's two fields: sdl served, schema only parsed",
      spec: { sdl: USERS, schema: 'type Query { user(id: ID!): User } type User { id: ID! }' },
    },
    { name: 'schema alone is the SDL', spec: { schema: USERS } },
    {
      name: 'an SDL that does not parse names spec.sdl with line and column',
      spec: { sdl: 'type Query {\n  users: [User!\n}' },
      errors: [{ path: 'spec.sdl', message: /^line 3, column 1: Syntax Error/ }],
    },
    {
      name: 'schema alone that does not parse names spec.schema',
      spec: { schema: 'type Query {' },
      errors: [{ path: 'spec.schema', message: /^line 1, column 13: Syntax Error/ }],
    },
    {
      name: 'a @key naming a field the type lacks',
      spec: { sdl: 'type Query { u: User }\ntype User @key(fields: "uid") { id: ID! }' },
      errors: [
        { path: 'spec.sdl', message: /^line 2, column 11: @key names uid, which is not a field of User/ },
      ],
    },
    {
      name: 'a @key whose fields do not parse',
      spec: { sdl: 'type Query { u: User }\ntype User @key(fields: "id {") { id: ID! }' },
      errors: [{ path: 'spec.sdl', message: /^line 2, column 16: @key\(fields: "id \{"\) does not parse/ }],
    },
    {
      name: 'an unknown directive',
      spec: { sdl: 'type Query { u: String @keyy }' },
      errors: [{ path: 'spec.sdl', message: /line 1, column 24: Unknown directive "@keyy"/ }],
    },
    {
      name: 'a broken schema beside a good sdl names spec.schema',
      spec: { sdl: USERS, schema: 'type Query {' },
      errors: [{ path: 'spec.schema', message: /Syntax Error/ }],
    },
    {
      name: 'neither field',
      spec: {},
      errors: [{ path: 'spec.sdl', message: /needs its SDL/ }],
    },
    {
      name: '@requires is admitted without a warning (a supergraph serves it)',
      spec: {
        sdl: 'type Query { u: User }\ntype User @key(fields: "id") { id: ID! w: Int @external h: Int @requires(fields: "w") }',
      },
      warnings: [],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const v = await validateSubGraph(subGraph('users', c.spec), undefined, memoryLookups([]));
      assert.deepEqual(
        v.errors.map((e) => e.path),
        (c.errors ?? []).map((e) => e.path),
        JSON.stringify(v.errors),
      );
      v.errors.forEach((e, i) => {
        assert.match(e.message, c.errors?.[i]?.message ?? /./);
      });
      assert.equal(v.warnings.length, (c.warnings ?? []).length, JSON.stringify(v.warnings));
      v.warnings.forEach((w, i) => {
        assert.match(w, c.warnings?.[i] ?? /./);
      });
    });
  }

  test('deleting a SubGraph a SuperGraph lists is refused naming it; once unlisted it is admitted', async () => {
    const sg = superGraph('social', { subgraph_refs: ['users', { name: 'posts' }] });
    const refused = await validateSubGraphDelete(subGraph('users', { sdl: USERS }), memoryLookups([sg]));
    assert.deepEqual(refused.errors, [
      {
        path: 'metadata.name',
        type: 'Forbidden',
        message:
          'SubGraph default/users is still used by SuperGraph default/social: remove it from the subgraph_refs of these SuperGraphs and the graph_ref of these APIs (or delete them) first',
      },
    ]);
    const other = superGraph('social', { subgraph_refs: ['posts'] });
    assert.deepEqual(
      (await validateSubGraphDelete(subGraph('users', {}), memoryLookups([other]))).errors,
      [],
    );
    const going = superGraph(
      'social',
      { subgraphs_refs: ['users'] },
      { deletionTimestamp: '2026-01-01T00:00:00Z' },
    );
    assert.deepEqual(
      (await validateSubGraphDelete(subGraph('users', {}), memoryLookups([going]))).errors,
      [],
    );
  });

  test('deleting a SubGraph an API serves is refused naming the API', async () => {
    const v = await validateSubGraphDelete(
      subGraph('users', {}),
      memoryLookups([graphApi('users-api', 'subgraph', 'users')]),
    );
    assert.match(v.errors[0]?.message ?? '', /still used by ApiDefinition default\/users-api/);
  });
});

describe('SuperGraph admission', () => {
  test('subgraph_refs in both forms, and the earlier spelling, are admitted; missing SubGraphs warn', async () => {
    const lookups = memoryLookups([subGraph('users', { sdl: USERS })]);
    const v = await validateSuperGraph(
      superGraph('s', { subgraph_refs: ['users', { name: 'posts' }] }),
      undefined,
      lookups,
    );
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.warnings, [
      'spec.subgraph_refs[1]: SubGraph default/posts does not exist yet: the SuperGraph is composed once it does',
    ]);
    const old = await validateSuperGraph(superGraph('s', { subgraphs_refs: ['users'] }), undefined, lookups);
    assert.deepEqual(old, { errors: [], warnings: [] });
  });

  test('both spellings, none, a repeat and a merged schema that does not parse are refused by field', async () => {
    const v = await validateSuperGraph(
      superGraph('s', { subgraph_refs: ['a', 'a'], subgraphs_refs: ['b'], schema: 'type Query {' }),
      undefined,
      memoryLookups([]),
    );
    assert.deepEqual(
      v.errors.map((e) => `${e.path} ${e.type}`),
      ['spec.schema Invalid', 'spec.subgraph_refs[1] Invalid', 'spec.subgraphs_refs Forbidden'],
    );
    const none = await validateSuperGraph(superGraph('s', {}), undefined, memoryLookups([]));
    assert.deepEqual(
      none.errors.map((e) => e.path),
      ['spec.subgraph_refs'],
    );
  });

  test('deleting a SuperGraph an API serves is refused', async () => {
    const v = await validateSuperGraphDelete(
      superGraph('social', {}),
      memoryLookups([graphApi('social-api', 'supergraph', 'social')]),
    );
    assert.match(
      v.errors[0]?.message ?? '',
      /SuperGraph default\/social is still used by ApiDefinition default\/social-api/,
    );
    assert.deepEqual((await validateSuperGraphDelete(superGraph('other', {}), memoryLookups([]))).errors, []);
  });
});

describe('ApiDefinition graph_ref', () => {
  test('a subgraph API naming a SubGraph is admitted (its SDL comes from the SubGraph); a missing one warns', async () => {
    const api = graphApi('users-api', 'subgraph', 'users', { playground: { enabled: false, path: '' } });
    const present = await validateApiDefinition(
      api,
      undefined,
      memoryLookups([subGraph('users', { sdl: USERS })]),
    );
    assert.deepEqual(present, { errors: [], warnings: [] });
    const missing = await validateApiDefinition(api, undefined, memoryLookups([]));
    assert.deepEqual(missing.errors, []);
    assert.deepEqual(missing.warnings, [
      'spec.graphql.graph_ref: SubGraph default/users does not exist yet: the API is not served until it does',
    ]);
  });

  test('a supergraph API naming a SuperGraph is admitted without a target', async () => {
    const v = await validateApiDefinition(
      graphApi('social-api', 'supergraph', 'social'),
      undefined,
      memoryLookups([superGraph('social', { subgraph_refs: ['users'] })]),
    );
    assert.deepEqual(v, { errors: [], warnings: [] });
  });

  test('graph_ref with another execution mode, or beside an inline SDL, is refused naming the field', async () => {
    const proxy = await validateApiDefinition(
      apiDefinition('a', {
        graphql: {
          enabled: true,
          execution_mode: 'proxyOnly',
          graph_ref: 'users',
          schema: 'type Query { a: Int }',
        },
      }),
      undefined,
      memoryLookups([]),
    );
    assert.deepEqual(
      proxy.errors.map((e) => `${e.path} ${e.type}`),
      ['spec.graphql.graph_ref Forbidden'],
    );
    const both = await validateApiDefinition(
      graphApi('b', 'subgraph', 'users', { subgraph: { sdl: USERS } }),
      undefined,
      memoryLookups([subGraph('users', { sdl: USERS })]),
    );
    assert.deepEqual(
      both.errors.map((e) => `${e.path} ${e.type}`),
      ['spec.graphql.subgraph.sdl Forbidden'],
    );
  });
});
