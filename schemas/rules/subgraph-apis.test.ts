import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { composeSubgraphApis, subgraphApiRefProblems, type SubgraphApi } from './subgraph-apis.ts';
import type { FieldProblem } from './field-problem.ts';

const USERS =
  'extend type Query { users: [User!]! }\ntype User @key(fields: "id") { id: ID! name: String! }\n';
const POSTS =
  'extend type Query { posts: [Post!]! }\ntype Post { id: ID! title: String! }\nextend type User @key(fields: "id") { id: ID! @external posts: [Post!]! }\n';

/** A supergraph API's graphql in the reference's earlier form. */
const supergraph = (refs: unknown[], extra: Record<string, unknown> = {}, supergraphExtra = {}) => ({
  enabled: true,
  execution_mode: 'supergraph',
  supergraph: { subgraphs_refs: refs, ...supergraphExtra },
  ...extra,
});

const subgraphApi = (id: string, sdl: string): SubgraphApi => ({
  id,
  graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl } },
});

describe('subgraphApiRefProblems', () => {
  const cases: { name: string; graphql: unknown; want: FieldProblem[] }[] = [
    {
      name: "the reference's sample form: none",
      graphql: supergraph([
        { name: 'users', namespace: 'default' },
        { name: 'posts', namespace: 'default', headers: { 'x-team': 'a' } },
      ]),
      want: [],
    },
    { name: 'no refs (absent or empty): none', graphql: supergraph([]), want: [] },
    {
      name: 'on an API that is no supergraph',
      graphql: { ...supergraph([{ name: 'users' }]), execution_mode: 'proxyOnly' },
      want: [
        {
          path: 'graphql.supergraph.subgraphs_refs',
          type: 'Forbidden',
          message: 'names the subgraph APIs of a supergraph (execution_mode supergraph), not of proxyOnly',
        },
      ],
    },
    {
      name: 'beside graph_ref, and beside subgraphs',
      graphql: supergraph(
        [{ name: 'users' }],
        { graph_ref: 'social' },
        { subgraphs: [{ name: 'u', url: 'http://u', sdl: USERS }] },
      ),
      want: [
        {
          path: 'graphql.supergraph.subgraphs_refs',
          type: 'Forbidden',
          message: 'graph_ref names a SuperGraph that gives the subgraphs: keep one of the two',
        },
        {
          path: 'graphql.supergraph.subgraphs',
          type: 'Forbidden',
          message:
            'subgraphs_refs gives the subgraphs (the operator writes them from the APIs it names): remove subgraphs, or subgraphs_refs',
        },
      ],
    },
    {
      name: 'an entry without a name, one with an unknown field and bad headers, one twice',
      graphql: supergraph([
        { namespace: 'default' },
        { name: 'users', url: 'http://x', headers: { a: 1 } },
        { name: 'users', namespace: 'default' },
      ]),
      want: [
        {
          path: 'graphql.supergraph.subgraphs_refs[0]',
          type: 'Invalid',
          message: 'name a subgraph ApiDefinition as {name, namespace}',
        },
        {
          path: 'graphql.supergraph.subgraphs_refs[1].url',
          type: 'Forbidden',
          message: 'not a field of a subgraph reference (name, namespace, headers)',
        },
        {
          path: 'graphql.supergraph.subgraphs_refs[1].headers',
          type: 'Invalid',
          message: 'a map of header names to string values',
        },
        {
          path: 'graphql.supergraph.subgraphs_refs[2]',
          type: 'Invalid',
          message: 'names ApiDefinition default/users again (graphql.supergraph.subgraphs_refs[1])',
        },
      ],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      assert.deepEqual(subgraphApiRefProblems(c.graphql, 'default'), c.want);
    });

  test('a given schema that does not parse', () => {
    const got = subgraphApiRefProblems(
      supergraph([{ name: 'users' }], { schema: 'type Query {' }),
      'default',
    );
    assert.equal(got.length, 1);
    assert.equal(got[0]?.path, 'graphql.schema');
    assert.match(got[0].message, /^line 1, column 13: /);
  });
});

describe('composeSubgraphApis', () => {
  const apis: Record<string, SubgraphApi> = {
    'default/users': subgraphApi('users-id', USERS),
    'default/posts': subgraphApi('posts-id', POSTS),
    'default/plain': { id: 'plain-id', graphql: { enabled: true, execution_mode: 'proxyOnly' } },
    'default/by-graph': {
      id: 'by-graph-id',
      graphql: { enabled: true, execution_mode: 'subgraph', graph_ref: 'users-graph' },
    },
  };
  const lookups = (subGraphs: Record<string, string> = {}) => ({
    api: (r: { namespace: string; name: string }) => apis[`${r.namespace}/${r.name}`],
    subGraphSdl: (r: { namespace: string; name: string }) => subGraphs[`${r.namespace}/${r.name}`],
  });

  test('none named: undefined', () => {
    assert.equal(composeSubgraphApis({ execution_mode: 'supergraph' }, 'default', lookups()), undefined);
  });

  test('composed: each API by its ID with its SDL and headers, the composition as the schema', () => {
    const got = composeSubgraphApis(
      supergraph([{ name: 'users' }, { name: 'posts', namespace: 'default', headers: { 'x-team': 'a' } }]),
      'default',
      lookups(),
    );
    assert.ok(got !== undefined && 'graph' in got && got.graph.kind === 'SuperGraph', JSON.stringify(got));
    assert.deepEqual(got.graph.subgraphs, [
      { name: 'users', url: 'svc://users-id/', sdl: USERS },
      { name: 'posts', url: 'svc://posts-id/', sdl: POSTS, headers: { 'x-team': 'a' } },
    ]);
    assert.match(got.graph.schema, /type User \{\n {2}id: ID!\n {2}name: String!\n {2}posts: \[Post!\]!\n\}/);
  });

  test('the schema the API gives is served when it composes', () => {
    const schema =
      'type Query { users: [User!]! posts: [Post!]! }\ntype User { id: ID! name: String! posts: [Post!]! }\ntype Post { id: ID! title: String! }';
    const got = composeSubgraphApis(
      supergraph([{ name: 'users' }, { name: 'posts' }], { schema }),
      'default',
      lookups(),
    );
    assert.ok(got !== undefined && 'graph' in got && got.graph.kind === 'SuperGraph');
    assert.equal(got.graph.schema, schema);
  });

  const waits: {
    name: string;
    refs: unknown[];
    subGraphs?: Record<string, string>;
    reason: string;
    message: RegExp;
  }[] = [
    {
      name: 'an API that does not exist yet',
      refs: [{ name: 'users' }, { name: 'comments', namespace: 'default' }],
      reason: 'SubGraphApiNotFound',
      message:
        /^spec\.graphql\.supergraph\.subgraphs_refs\[1\]: ApiDefinition default\/comments does not exist: the supergraph is composed once it does$/,
    },
    {
      name: 'an API that is no subgraph',
      refs: [{ name: 'plain' }],
      reason: 'SubGraphApiInvalid',
      message: /ApiDefinition default\/plain is not a subgraph API \(graphql\.execution_mode subgraph\)$/,
    },
    {
      name: 'a subgraph API whose SubGraph does not exist yet',
      refs: [{ name: 'by-graph' }],
      reason: 'SubGraphNotFound',
      message: /ApiDefinition default\/by-graph serves SubGraph default\/users-graph, which does not exist/,
    },
    {
      name: 'a root field of the given schema no subgraph resolves',
      refs: [{ name: 'users' }],
      reason: 'CompositionFailed',
      message: /^spec\.graphql\.supergraph\.subgraphs_refs: the subgraph APIs do not compose: Query\.posts: /,
    },
  ];
  for (const w of waits)
    test(`waits: ${w.name}`, () => {
      const schema =
        w.reason === 'CompositionFailed'
          ? { schema: 'type Query { users: [User!]! posts: [String] }\ntype User { id: ID! }' }
          : {};
      const got = composeSubgraphApis(supergraph(w.refs, schema), 'default', lookups(w.subGraphs));
      assert.ok(got !== undefined && 'reason' in got, JSON.stringify(got));
      assert.equal(got.reason, w.reason);
      assert.match(got.message, w.message);
    });

  test('a subgraph API by graph_ref takes its SubGraph SDL', () => {
    const got = composeSubgraphApis(
      supergraph([{ name: 'by-graph' }]),
      'default',
      lookups({ 'default/users-graph': USERS }),
    );
    assert.ok(got !== undefined && 'graph' in got && got.graph.kind === 'SuperGraph');
    assert.deepEqual(got.graph.subgraphs, [{ name: 'by-graph', url: 'svc://by-graph-id/', sdl: USERS }]);
  });
});
