/**
 * GraphQL end to end: a real control plane, the operator as a process, a real gateway, a real
 * GraphQL upstream (graphql-js) and two JSON upstreams. A proxyOnly ApiDefinition with a schema
 * and a SecurityPolicy with `max_query_depth` and `restricted_types`, applied as a user would:
 * a valid query passes, an invalid one gets 400 without reaching the upstream, a too-deep one and
 * a restricted field get 403 for a key of that policy, and a per-API `limit.max_query_depth`
 * replaces the policy's depth for its API. An executionEngine ApiDefinition answers from the two
 * JSON upstreams (users, and their posts). examples/graphql-api-definition.yaml reconciles Ready.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  startGraphqlUpstream,
  startJsonUpstream,
  UPSTREAM_SDL,
  type TestUpstream,
} from '../../gateway/graphql/testing.ts';
import { derivedId } from '../../operator/ids.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import {
  admin,
  applyManifest,
  root,
  startWorld,
  stopWorld,
  type OperatorWorld,
  waitReady,
} from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'graph';
const KEY = 'e2e-graphql-key';
const PER_API_KEY = 'e2e-graphql-per-api-key';

let w: OperatorWorld;
let gql: TestUpstream;
let users: TestUpstream;
let posts: TestUpstream;

before(async () => {
  [gql, users, posts] = await Promise.all([startGraphqlUpstream(), startJsonUpstream(), startJsonUpstream()]);
  w = await startWorld({
    name: 'graphql',
    namespaces: [NS],
    operator: {
      org: ORG,
      env: { WATCH_NAMESPACE: `${NS},default`, SVC_RESYNC_PERIOD: '2s', LOG_LEVEL: 'debug' },
    },
  });
});

after(() => stopWorld(w, gql, users, posts));

/** Indents a multi-line text for a YAML block scalar. */
const block = (text: string, indent: string): string =>
  text
    .trim()
    .split('\n')
    .map((l) => `${indent}${l}`)
    .join('\n');

/** A GraphQL POST through the gateway: status and parsed body. */
async function query(
  path: string,
  q: string,
  key?: string,
): Promise<{
  status: number;
  body: { data?: unknown; errors?: { message: string; locations?: unknown }[] };
}> {
  const r = await httpRequest(`${w.gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: key }) },
    body: JSON.stringify({ query: q }),
  });
  let body: { data?: unknown; errors?: { message: string }[] } = {};
  try {
    body = JSON.parse(r.body) as typeof body;
  } catch {
    // Not JSON: an empty body for the assertions.
  }
  return { status: r.status, body };
}

test('a proxyOnly ApiDefinition and its SecurityPolicy: valid, invalid, too deep and restricted queries', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: people, namespace: ${NS}}
spec:
  name: people
  use_keyless: false
  use_standard_auth: true
  auth_configs:
    authToken: {auth_header_name: Authorization}
  proxy:
    listen_path: /directory/
    target_url: ${gql.url}
    strip_listen_path: true
  graphql:
    enabled: true
    execution_mode: proxyOnly
    schema: |
${block(UPSTREAM_SDL, '      ')}
`,
  );
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: 'people' });
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: people-readers, namespace: ${NS}}
spec:
  name: people-readers
  max_query_depth: 2
  partitions: {acl: true, complexity: true}
  access_rights_array:
    - name: people
      restricted_types:
        - {name: User, fields: [email]}
`,
  );
  const st = await waitReady(w.cp, { kind: 'securitypolicy', ns: NS, name: 'people-readers' });
  const polId = st.pol_id as string;
  const pol = await admin(w.gw, 'GET', `/svc/policies/${polId}`);
  assert.equal(pol.status, 200);
  const held = pol.body as {
    max_query_depth: number;
    access_rights: Record<string, { restricted_types?: unknown }>;
  };
  assert.equal(held.max_query_depth, 2);
  assert.deepEqual(held.access_rights[derivedId(NS, 'people')]?.restricted_types, [
    { name: 'User', fields: ['email'] },
  ]);
  const key = await admin(w.gw, 'POST', `/svc/keys/${KEY}`, { org_id: ORG, apply_policies: [polId] });
  assert.equal(key.status, 200, JSON.stringify(key.body));

  // Served once the gateway has the API: a valid query with the key reaches the upstream.
  await waitFor('the API served', async () => {
    return (await query('/directory/', '{ hello }', KEY)).status === 200;
  });
  assert.deepEqual(await query('/directory/', '{ user(id: "1") { name } }', KEY), {
    status: 200,
    body: { data: { user: { name: 'Ada' } }, path: '/' },
  });
  assert.equal((await query('/directory/', '{ hello }')).status, 401, 'no key: refused');

  const before = gql.calls.length;
  const invalid = await query('/directory/', '{ user(id: "1") { nickname } }', KEY);
  assert.equal(invalid.status, 400);
  assert.match(invalid.body.errors?.[0]?.message ?? '', /Cannot query field "nickname" on type "User"/);
  assert.deepEqual(invalid.body.errors?.[0]?.locations, [{ line: 1, column: 19 }]);
  const syntax = await query('/directory/', '{ user(id: "1") {', KEY);
  assert.equal(syntax.status, 400);
  assert.match(syntax.body.errors?.[0]?.message ?? '', /^Syntax Error/);

  const deep = await query('/directory/', '{ user(id: "1") { friends { name } } }', KEY);
  assert.equal(deep.status, 403);
  assert.deepEqual(deep.body, { errors: [{ message: 'depth limit exceeded' }] });

  const restricted = await query('/directory/', '{ user(id: "1") { name email } }', KEY);
  assert.equal(restricted.status, 403);
  assert.equal(restricted.body.errors?.[0]?.message, 'field: email is restricted on type: User');
  assert.equal(gql.calls.length, before, 'refused queries never reached the upstream');
});

test('a per-API limit.max_query_depth in a SecurityPolicy replaces its root depth for that API', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: people-deep, namespace: ${NS}}
spec:
  name: people-deep
  max_query_depth: 2
  access_rights_array:
    - name: people
      limit: {max_query_depth: 3}
`,
  );
  const st = await waitReady(w.cp, { kind: 'securitypolicy', ns: NS, name: 'people-deep' });
  const polId = st.pol_id as string;
  const pol = await admin(w.gw, 'GET', `/svc/policies/${polId}`);
  const right = (pol.body as { access_rights: Record<string, { limit?: { max_query_depth?: number } }> })
    .access_rights[derivedId(NS, 'people')];
  assert.equal(right?.limit?.max_query_depth, 3);
  const key = await admin(w.gw, 'POST', `/svc/keys/${PER_API_KEY}`, { org_id: ORG, apply_policies: [polId] });
  assert.equal(key.status, 200, JSON.stringify(key.body));

  const calls = gql.calls.length;
  const three = await query('/directory/', '{ user(id: "1") { friends { name } } }', PER_API_KEY);
  assert.equal(three.status, 200, 'depth 3: past the root limit, within the per-API one');
  assert.equal(gql.calls.length, calls + 1, 'reached the upstream');
  const four = await query('/directory/', '{ user(id: "1") { friends { friends { name } } } }', PER_API_KEY);
  assert.deepEqual(four, { status: 403, body: { errors: [{ message: 'depth limit exceeded' }] } });
});

test('an executionEngine ApiDefinition answers from two real JSON upstreams', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: graph, namespace: ${NS}}
spec:
  name: graph
  use_keyless: true
  proxy:
    listen_path: /graph/
    strip_listen_path: true
  graphql:
    enabled: true
    execution_mode: executionEngine
    schema: |
      type Query { user(id: ID!): User }
      type User { id: ID! name: String posts: [Post!] }
      type Post { id: ID! title: String }
    type_field_configurations:
      - type_name: Query
        field_name: user
        mapping: {disabled: true}
        data_source:
          kind: HTTPJSONDataSource
          data_source_config: {url: "${users.url}/users/{{.arguments.id}}", method: GET}
      - type_name: User
        field_name: posts
        mapping: {path: items}
        data_source:
          kind: HTTPJSONDataSource
          data_source_config: {url: "${posts.url}/users/{{.object.id}}/posts", method: GET}
`,
  );
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: 'graph' });
  await waitFor('the data graph served', async () => {
    return (await query('/graph/', '{ user(id: "2") { name } }')).status === 200;
  });
  const [u0, p0] = [users.calls.length, posts.calls.length];
  assert.deepEqual(await query('/graph/', '{ user(id: "1") { id name posts { title } } }'), {
    status: 200,
    body: {
      data: { user: { id: '1', name: 'Ada', posts: [{ title: 'Notes' }, { title: 'Engines' }] } },
    },
  });
  assert.deepEqual(users.calls.slice(u0), ['/users/1']);
  assert.deepEqual(posts.calls.slice(p0), ['/users/1/posts']);

  // An unknown user: the field is null, the upstream's 404 an error with its path.
  const missing = await query('/graph/', '{ user(id: "9") { name } }');
  assert.equal(missing.status, 200);
  assert.deepEqual((missing.body as { data: unknown }).data, { user: null });
  assert.deepEqual((missing.body.errors?.[0] as { path?: unknown } | undefined)?.path, ['user']);
});

test('examples/graphql-api-definition.yaml: both APIs Ready; the proxyOnly one validates and serves its playground', async () => {
  const r = await w.cp.kubectl(['apply', '-f', join(root, 'examples', 'graphql-api-definition.yaml')], {
    allowFailure: true,
  });
  assert.equal(r.code, 0, r.stderr);
  for (const name of ['people', 'people-graph']) {
    await waitReady(w.cp, { kind: 'apidefinition', ns: 'default', name });
  }
  // Its upstream is a cluster service this test does not have: an invalid query is refused
  // before the gateway would try it.
  const invalid = await waitFor('the example served', async () => {
    const got = await query('/people/', '{ nope }');
    return got.status === 400 ? got : undefined;
  });
  assert.equal(invalid.body.errors?.[0]?.message, 'Cannot query field "nope" on type "Query".');
  const page = await httpRequest(`${w.gw.url}/people/playground`);
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'] ?? '', /^text\/html/);
  assert.match(page.body, /people · GraphQL playground/);
});
