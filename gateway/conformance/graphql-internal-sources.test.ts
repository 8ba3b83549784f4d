/**
 * The execution engine's data sources that are other APIs of the gateway (`svc://<api>/<path>`),
 * through a real gateway to a real echo upstream: the call is handed to the API's chain in
 * process, whatever its domain, and an `internal: true` API and internal endpoints are reachable; the API is named by ID
 * (dots and all), by name as the reference writes it (every run of other characters than letters
 * and digits one `-`, a ` #category` suffix left out), or `self`; a graph calling itself is cut
 * after 8 data graphs, and the gateway's own bookkeeping of that never reaches an upstream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyless, oneVersion, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { provision } from '../testing/tables.ts';

let echo: Echo;
let gw: InProcessGateway;

const SDL = `
type Query {
  plain: Echoed
  byDomain: Echoed
  byDottedName: Echoed
  byDottedId: Echoed
  hidden: Echoed
  secret: Echoed
  loop: String
}
type Echoed { path: String hops: String upstream: String }
`;

/** A REST source serving `field` from `url`, as the reference's version 2 form writes it. */
const rest = (field: string, url: string): Record<string, unknown> => ({
  kind: 'REST',
  root_fields: [{ type: 'Query', fields: [field] }],
  config: { url, method: 'GET' },
});

const graph = (): Record<string, unknown> => ({
  enabled: true,
  execution_mode: 'executionEngine',
  version: '2',
  schema: SDL,
  engine: {
    field_configs: [
      ...['plain', 'byDomain', 'byDottedName', 'byDottedId', 'hidden', 'secret'].map((f) => ({
        type_name: 'Query',
        field_name: f,
        disable_default_mapping: true,
        path: [],
      })),
      // What the upstream saw of the gateway's hop count (none, once fixed).
      {
        type_name: 'Echoed',
        field_name: 'hops',
        disable_default_mapping: true,
        path: ['headers', 'x-svc-graph-hops'],
      },
    ],
    data_sources: [
      rest('plain', 'svc://plain-echo/a'),
      rest('byDomain', 'svc://domain-echo/b'),
      rest('byDottedName', 'svc://catalogue.v2/c'),
      rest('byDottedId', 'svc://echo.by.id/d'),
      rest('hidden', 'svc://hidden-echo/e'),
      rest('secret', 'svc://ie-echo/secret'),
      {
        kind: 'GraphQL',
        root_fields: [{ type: 'Query', fields: ['loop'] }],
        config: { url: 'svc://self/', method: 'POST' },
      },
    ],
  },
});

before(async () => {
  echo = await startEcho('echo');
  gw = await startGateway();
  const apis = [
    keyless('udg-int', '/udg-int/', '', { graphql: graph() }),
    keyless('plain-echo', '/plain-echo/', echo.url, {}, { strip_listen_path: true }),
    // An API with a domain: a client reaches it on that host only, a data graph by its name.
    keyless(
      'domain-echo',
      '/domain-echo/',
      echo.url,
      { domain: 'echo.example.com' },
      { strip_listen_path: true },
    ),
    // Named with dots and a category, as the reference's looping names read them.
    keyless(
      'catalogue-id',
      '/catalogue/',
      echo.url,
      { name: 'Catalogue.V2 #shop' },
      { strip_listen_path: true },
    ),
    keyless('echo.by.id', '/by-id/', echo.url, {}, { strip_listen_path: true }),
    keyless('hidden-echo', '/hidden-echo/', echo.url, { internal: true }, { strip_listen_path: true }),
    // An internal endpoint: served to other APIs of the gateway only.
    keyless(
      'ie-echo',
      '/ie-echo/',
      echo.url,
      oneVersion({ extended_paths: { internal: [{ path: '/secret', method: 'GET' }] } }),
      { strip_listen_path: true },
    ),
  ];
  await provision(gw, apis);
});
after(async () => {
  await stopAll(gw, echo);
});

const ask = async (query: string): Promise<unknown> => {
  const res = await gw.request({
    method: 'POST',
    path: '/udg-int/',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  assert.equal(res.status, 200, res.text);
  return res.json;
};

const rows: { name: string; field: string; path: string }[] = [
  { name: 'an API without a domain', field: 'plain', path: '/a' },
  { name: 'an API with a domain (called by name, not by host)', field: 'byDomain', path: '/b' },
  { name: 'an API named with dots and a category (svc://catalogue.v2)', field: 'byDottedName', path: '/c' },
  { name: 'an API whose ID has dots (svc://echo.by.id)', field: 'byDottedId', path: '/d' },
  { name: 'an internal API (served to no client)', field: 'hidden', path: '/e' },
  { name: 'an internal endpoint of an API', field: 'secret', path: '/secret' },
];

for (const row of rows) {
  test(`svc:// data source: ${row.name}, through its chain to its upstream; no hop count reaches it`, async () => {
    assert.deepEqual(await ask(`{ ${row.field} { path hops upstream } }`), {
      data: { [row.field]: { path: row.path, hops: null, upstream: 'echo' } },
    });
  });
}

test('the internal API and endpoint still refuse clients; the API with a domain answers only on its host', async () => {
  const hidden = await gw.request({ path: '/hidden-echo/e' });
  assert.equal(hidden.status, 404, hidden.text);
  const secret = await gw.request({ path: '/ie-echo/secret' });
  assert.equal(secret.status, 403, secret.text);
  const other = await gw.request({ path: '/domain-echo/b' });
  assert.equal(other.status, 404, other.text);
  const own = await gw.request({ path: '/domain-echo/b', headers: { host: 'echo.example.com' } });
  assert.equal(own.status, 200, own.text);
});

test('a graph calling itself is cut after 8 data graphs, with the field path', async () => {
  assert.deepEqual(await ask('{ loop }'), {
    data: { loop: null },
    errors: [
      {
        message: 'data source API self: the request went through 8 data graphs (a loop?)',
        locations: [{ line: 1, column: 3 }],
        path: ['loop'],
      },
    ],
  });
});

test("a client's own x-svc-graph-hops header does not lift the cut", async () => {
  const res = await gw.request({
    method: 'POST',
    path: '/udg-int/',
    headers: { 'content-type': 'application/json', 'x-svc-graph-hops': '-100' },
    body: JSON.stringify({ query: '{ loop }' }),
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(
    (res.json as { errors: { message: string }[] }).errors[0]?.message,
    'data source API self: the request went through 8 data graphs (a loop?)',
  );
});
