/**
 * Internal targets (`svc://<api_id>/<path>?<query>`: `proxy.target_url`, `proxy.target_internal`,
 * `url_rewrites[].rewrite_to`, `rewrite_to_internal` and a trigger's): the request goes through
 * the other API's chain in process, `internal: true` APIs are reachable only this way, loops are
 * cut with 508 (internal endpoints and `svc://self`: internal-endpoints.test.ts) and an API that is not loaded gets 502. Tables (request in; status, error, the
 * path, query and headers the upstream saw out) against the files and Redis stores, with the fast
 * path on and off (routes with internal targets are served by node:http).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, oneVersion, assertWriteRefused, withGateway } from '../testing/harness.ts';
import { assertAnswer, describeProvisioned, type Expected, type RowRequest } from '../testing/tables.ts';

interface Row extends Expected, RowRequest {
  name: string;
  /** What the upstream saw (a 200 only). */
  upstreamPath?: string;
  upstreamQuery?: string;
  upstreamMethod?: string;
  upstreamBody?: string;
}

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  // The internal API every other one goes to: not served to clients; adds a header.
  keyless(
    'int-b',
    '/int-b/',
    echo().url,
    { internal: true, ...oneVersion({ global_headers: { 'x-via-b': 'b' } }) },
    { strip_listen_path: true },
  ),
  // target_url svc://: the path after the listen path follows the target's path.
  keyless('int-a', '/int-a/', 'svc://int-b/base?from=a', {}, { strip_listen_path: true }),
  // The object form, with the target API's ID.
  keyless(
    'int-obj',
    '/int-obj/',
    '',
    {},
    {
      strip_listen_path: true,
      target_internal: { target: 'int-b', path: '/obj', query: 'k=v' },
    },
  ),
  // Rewrites to another API, by URL, object and trigger.
  keyless(
    'int-rw',
    '/int-rw/',
    echo().url,
    oneVersion({
      extended_paths: {
        url_rewrites: [
          {
            path: '/go/{id}',
            method: 'GET',
            match_pattern: '/go/(\\w+)',
            rewrite_to: '/plain/$1',
            triggers: [
              {
                on: 'any',
                options: { header_matches: { 'X-Internal': { match_rx: '^yes$' } } },
                rewrite_to: 'svc://int-b/trig/$1',
              },
            ],
          },
          {
            path: '/items/{id}',
            method: 'GET',
            match_pattern: '/items/(\\w+)',
            rewrite_to: 'svc://int-b/items/$1?check_limits=true',
          },
          {
            path: '/object',
            match_pattern: '/object',
            rewrite_to: '/unused',
            rewrite_to_internal: { target: 'int-b', path: '/from-object', query: 'o=1' },
          },
        ],
      },
    }),
    { strip_listen_path: true },
  ),
  // An internal API without a listen path (the reference's dynamic_auth sample): reached through
  // svc:// only, with the path the target gives; written without one, stored with the empty one.
  {
    api_id: 'int-nopath',
    name: 'int-nopath',
    use_keyless: true,
    internal: true,
    proxy: { target_url: echo().url },
    ...oneVersion({ global_headers: { 'x-via-nopath': 'n' } }),
  },
  keyless('to-nopath', '/to-nopath/', 'svc://int-nopath/np', {}, { strip_listen_path: true }),
  // The target's own authentication applies.
  keyed('int-keyed', '/int-keyed/', echo().url, { internal: true, use_standard_auth: true }),
  keyless('to-keyed', '/to-keyed/', 'svc://int-keyed/', {}, { strip_listen_path: true }),
  // A dispatcher: every request handed on with what follows the listen path (`^/?(.*)$` to
  // `svc://<api>/$1`) to an internal API that does not strip its listen path: as in the reference
  // gateway, its upstream gets the target's path alone, the listen path the hand-over put before
  // it not sent.
  keyless(
    'dispatch',
    '/dispatch',
    echo().url,
    oneVersion({
      extended_paths: {
        url_rewrites: [{ path: '/', match_pattern: '^/?(.*)$', rewrite_to: 'svc://int-whole/$1' }],
      },
    }),
  ),
  keyless('int-whole', '/whole', `${echo().url}/up`, { internal: true }),
  // The same handing on the whole path, under the next API's listen path (as the Gateway API
  // translation writes it): the next API reads it as a client's request for it.
  keyless(
    'dispatch-full',
    '/dispatch-full',
    echo().url,
    oneVersion({
      extended_paths: {
        url_rewrites: [{ path: '/', match_pattern: '^/?(.*)$', rewrite_to: 'svc://int-full/full/$1' }],
      },
    }),
  ),
  keyless('int-full', '/full', echo().url, { internal: true }),
  // A subgraph API as the reference's federation samples write it (listen path, target URL with
  // the subgraph server's `/query`, no strip), called as `svc://<api>` (the supergraph's
  // `tyk://<api>`): its upstream gets `/query`, not `/query/users-subgraph/`. Its endpoints are
  // matched after its listen path as for a client; `$tyk_context.path` is the path it was handed.
  keyless(
    'users-subgraph',
    '/users-subgraph/',
    `${echo().url}/query`,
    {
      enable_context_vars: true,
      ...oneVersion({
        global_headers: { 'x-seen-path': '$tyk_context.path' },
        extended_paths: {
          transform_headers: [
            {
              path: '/items/{id}',
              method: 'GET',
              add_headers: { 'x-endpoint': 'items' },
              delete_headers: [],
            },
          ],
        },
      }),
    },
    { strip_listen_path: false },
  ),
  keyless('to-subgraph', '/to-subgraph/', 'svc://users-subgraph', {}, { strip_listen_path: true }),
  keyless(
    'to-subgraph-under',
    '/to-subgraph-under/',
    'svc://users-subgraph/users-subgraph',
    {},
    { strip_listen_path: true },
  ),
  // Loops and missing APIs.
  keyless('loop-a', '/loop-a/', 'svc://loop-b/'),
  keyless('loop-b', '/loop-b/', 'svc://loop-a/', { internal: true }),
  keyless('loop-self', '/loop-self/', 'svc://loop-self/again'),
  keyless('to-missing', '/to-missing/', 'svc://nowhere/x'),
];

const rows: Row[] = [
  {
    name: 'target_url svc://: through the internal API (its header) to its upstream',
    path: '/int-a/items/1?x=2',
    status: 200,
    upstreamPath: '/base/items/1',
    upstreamQuery: 'from=a&x=2',
    upstreamHeaders: { 'x-via-b': 'b' },
  },
  {
    name: 'target_url svc://: a POST body goes through',
    method: 'POST',
    path: '/int-a/post',
    headers: { 'content-type': 'text/plain' },
    body: 'hello',
    status: 200,
    upstreamPath: '/base/post',
    upstreamQuery: 'from=a',
    upstreamMethod: 'POST',
    upstreamBody: 'hello',
  },
  {
    name: 'target_internal: path and query of the object',
    path: '/int-obj/z',
    status: 200,
    upstreamPath: '/obj/z',
    upstreamQuery: 'k=v',
    upstreamHeaders: { 'x-via-b': 'b' },
  },
  {
    name: 'rewrite_to svc:// with a group and a query',
    path: '/int-rw/items/42',
    status: 200,
    upstreamPath: '/items/42',
    upstreamQuery: 'check_limits=true',
    upstreamHeaders: { 'x-via-b': 'b' },
  },
  {
    name: 'rewrite_to_internal wins over rewrite_to',
    path: '/int-rw/object',
    status: 200,
    upstreamPath: '/from-object',
    upstreamQuery: 'o=1',
    upstreamHeaders: { 'x-via-b': 'b' },
  },
  {
    name: 'trigger rewrite_to svc:// when it holds',
    path: '/int-rw/go/7',
    headers: { 'x-internal': 'yes' },
    status: 200,
    upstreamPath: '/trig/7',
    upstreamHeaders: { 'x-via-b': 'b' },
  },
  {
    name: 'trigger does not hold: the entry rewrites on the same upstream',
    path: '/int-rw/go/7',
    status: 200,
    upstreamPath: '/plain/7',
    upstreamHeaders: { 'x-via-b': undefined },
  },
  { name: 'an internal API is not served to clients', path: '/int-b/items', status: 404 },
  {
    name: 'a rewrite of nothing after the listen path: the next API gets nothing after its listen path, its upstream the target path alone, no slash added',
    path: '/dispatch',
    status: 200,
    upstreamPath: '/up',
  },
  {
    name: 'the same with a query',
    path: '/dispatch?animal=whale',
    status: 200,
    upstreamPath: '/up',
    upstreamQuery: 'animal=whale',
  },
  {
    name: 'a trailing slash the client sent is kept',
    path: '/dispatch/',
    status: 200,
    upstreamPath: '/up/',
  },
  {
    name: "a path handed on follows the target's path, without the next API's listen path (no strip there)",
    path: '/dispatch/a/b',
    status: 200,
    upstreamPath: '/up/a/b',
  },
  {
    name: "the whole path handed on under the next API's listen path: read as a client's, no slash added",
    path: '/dispatch-full',
    status: 200,
    upstreamPath: '/full',
  },
  {
    name: 'the whole path handed on: a trailing slash the client sent is kept',
    path: '/dispatch-full/',
    status: 200,
    upstreamPath: '/full/',
  },
  {
    name: "the whole path handed on: the next API sends it as a client's (no strip)",
    path: '/dispatch-full/a/b?x=1',
    status: 200,
    upstreamPath: '/full/a/b',
    upstreamQuery: 'x=1',
  },
  {
    name: "a subgraph API as the reference's samples write it, called as svc://<api>: its upstream gets its target's /query",
    path: '/to-subgraph',
    status: 200,
    upstreamPath: '/query',
    upstreamHeaders: { 'x-seen-path': '/', 'x-endpoint': undefined },
  },
  {
    name: 'the same API handed a path: matched after its listen path (its endpoint), sent after /query, $tyk_context.path the path handed',
    path: '/to-subgraph/items/1',
    status: 200,
    upstreamPath: '/query/items/1',
    upstreamHeaders: { 'x-seen-path': '/items/1', 'x-endpoint': 'items' },
  },
  {
    name: "a path under the API's listen path is read as a client's: its endpoint, and the listen path sent (no strip)",
    path: '/to-subgraph-under/items/2',
    status: 200,
    upstreamPath: '/query/users-subgraph/items/2',
    upstreamHeaders: { 'x-seen-path': '/users-subgraph/items/2', 'x-endpoint': 'items' },
  },
  {
    name: 'an internal API without a listen path: through it (its header) with the target path',
    path: '/to-nopath/x?y=1',
    status: 200,
    upstreamPath: '/np/x',
    upstreamQuery: 'y=1',
    upstreamHeaders: { 'x-via-nopath': 'n' },
  },
  { name: 'an internal API without a listen path is not served to clients', path: '/np/x', status: 404 },
  {
    name: "the target API's authentication applies",
    path: '/to-keyed/x',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'a loop between two APIs is cut',
    path: '/loop-a/x',
    status: 508,
    error: /^Loop detected: .*\(loop-a -> loop-b -> loop-a\)$/,
  },
  {
    // Each hop adds /again to the path: no state repeats, so the hop limit (16) cuts it.
    name: 'an API targeting itself with a growing path is cut at the hop limit',
    path: '/loop-self/x',
    status: 508,
    error: /^Loop detected: .*\(loop-self( -> loop-self){16}\)$/,
  },
  {
    name: 'a target API not loaded: 502 naming it',
    path: '/to-missing/x',
    status: 502,
    error: 'Internal target API nowhere is not loaded on this gateway',
  },
];

describeProvisioned('internal targets', apis, {}, (gw) => {
  for (const row of rows) {
    test(`${row.name}: ${String(row.status)}`, async () => {
      const res = await gw().request({
        fresh: true,
        method: row.method ?? 'GET',
        path: row.path,
        ...(row.headers === undefined ? {} : { headers: row.headers }),
        ...(row.body === undefined ? {} : { body: row.body }),
      });
      assertAnswer(res, row);
      if (row.status !== 200) return;
      const got = res.json as Echoed;
      if (row.upstreamPath !== undefined) assert.equal(got.path, row.upstreamPath);
      assert.equal(got.query, row.upstreamQuery ?? '');
      assert.equal(got.method, row.upstreamMethod ?? row.method ?? 'GET');
      if (row.upstreamBody !== undefined) assert.equal(got.body, row.upstreamBody);
    });
  }
  test('a request through as many hops as allowed leaves no listener warning (one close listener per response)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(`${w.name}: ${w.message}`);
    };
    process.on('warning', onWarning);
    try {
      const res = await gw().request({ fresh: true, path: '/loop-self/x' });
      assert.equal(res.status, 508);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
      [],
    );
  });
});

test('writes: a malformed svc:// target is refused with 400 naming the field', async () => {
  await withGateway(async (gw) => {
    const cases: { def: Record<string, unknown>; part: string }[] = [
      {
        def: keyless('bad-url', '/bad-url/', 'svc://not an id/x'),
        part: 'proxy.target_url: Invalid value: "svc://not an id/x": "not an id" is not an API ID',
      },
      {
        def: keyless('bad-empty', '/bad-empty/', 'svc:///x'),
        part: 'proxy.target_url: Invalid value: "svc:///x": "" is not an API ID',
      },
      {
        def: keyless('bad-ref', '/bad-ref/', '', {}, { target_internal: { target: 'default/other' } }),
        part: 'proxy.target_internal.target: Invalid value: "default/other": the gateway takes the ID of the target API',
      },
      {
        def: keyless(
          'bad-rw',
          '/bad-rw/',
          echo().url,
          oneVersion({
            extended_paths: {
              url_rewrites: [{ path: '/a', match_pattern: '/a(.*)', rewrite_to: 'svc://$1/a' }],
            },
          }),
        ),
        part: 'version_data.versions.Default.extended_paths.url_rewrites[0].rewrite_to: Invalid value: "svc://$1": "$1" is not an API ID',
      },
    ];
    for (const c of cases) await assertWriteRefused(gw, c.def, [c.part]);
    // A well-formed target to an API not stored yet is accepted: it answers 502 until it is.
    const ok = await gw.admin('POST', '/svc/apis', keyless('later', '/later/', 'svc://not-yet/x'));
    assert.equal(ok.status, 200, ok.text);
  });
});
