/**
 * Virtual endpoints as tables: functions from a base64 blob and from a file under plugin_dir
 * answer with their status, headers and body (the reference's `TykJsResponse` and our
 * `SvcJsResponse`), see the request and `config_data`, get the key's session with `use_session` (the meta_data they change saved to the key)
 * and an empty one without; a function that throws answers 500 with an error ID, or with
 * `proxy_on_error` the upstream answers; a function that loops times out (500) while other APIs
 * keep answering; entries match per method; a file path out of plugin_dir is refused when
 * written. Files and Redis stores, fast path on and off. With `enable_jsvm` off (the default) an
 * API with virtual endpoints, blob or file, is refused when written (POST and PUT: 400 naming the
 * entry, nothing stored) and left out when loaded from the store.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pluginDirWith } from '../../testing/plugin-dir.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, keyless } from '../../testing/harness.ts';
import type { Echoed } from '../../testing/echo.ts';
import { assertAnswer, describeEachSetup, provision, sendRow, type Row } from '../../testing/tables.ts';

const TIMEOUT_MS = 1000;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

const HELLO = `
function myVirtualHandler(request, session, config) {
  var responseObject = {
    Body: JSON.stringify({ method: request.Method, url: request.URL, q: request.Params.q, body: request.Body,
      ua: request.Headers['X-Test'], greeting: config.config_data.greeting }),
    Headers: { 'x-virtual': 'yes', 'content-type': 'application/json' },
    Code: 201,
  };
  return TykJsResponse(responseObject, session.meta_data);
}`;
const SESSION = `
function whoAmI(request, session, config) {
  return SvcJsResponse({ Body: JSON.stringify(session.meta_data || null), Code: 200 }, session.meta_data);
}`;
const COUNTER = `
function count(request, session, config) {
  var meta = session.meta_data || {};
  meta.count = (meta.count || 0) + 1;
  return TykJsResponse({ Body: String(meta.count), Code: 200 }, meta);
}`;
const THROWS = `function boom(request, session, config) { throw new Error('boom'); }`;
const LOOPS = `function spin(request, session, config) { while (true) {} }`;
const ESCAPE = `
function escape(request, session, config) {
  var p = typeof process === 'undefined' && typeof require === 'undefined' ? 'none' : 'leaked';
  return SvcJsResponse({ Body: p, Code: 200 }, {});
}`;

const virtual = (
  path: string,
  name: string,
  source: { blob: string } | { file: string },
  extra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  path,
  method: 'GET',
  response_function_name: name,
  function_source_type: 'blob' in source ? 'blob' : 'file',
  function_source_uri: 'blob' in source ? b64(source.blob) : source.file,
  ...extra,
});

const withVirtual = (entries: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  version_data: {
    not_versioned: true,
    default_version: 'Default',
    versions: {
      Default: { name: 'Default', use_extended_paths: true, extended_paths: { virtual: entries } },
    },
  },
  ...extra,
});

let echo: Echo;
let pluginDir: string;
before(async () => {
  echo = await startEcho('echo');
  pluginDir = await pluginDirWith('svc-virtual-', { 'virtual/hello.js': HELLO });
});
after(async () => {
  await echo.close();
});

const INTERNAL = /^Internal error \(ID [0-9a-f-]{36}\)$/;

/** A row: the answer's JSON (`json`), or which upstream answered (`upstream`). */
interface VirtualRow extends Row {
  json?: unknown;
  upstream?: string;
}

const rows: VirtualRow[] = [
  {
    name: 'a blob function answers with its status, headers and body',
    path: '/blob/hello?q=1',
    headers: { 'x-test': 'tested' },
    status: 201,
    responseHeaders: { 'x-virtual': 'yes' },
    json: { method: 'GET', url: '/blob/hello', q: ['1'], body: '', ua: ['tested'], greeting: 'hi' },
  },
  {
    name: 'a file function answers',
    path: '/file/hello',
    status: 201,
    responseHeaders: { 'x-virtual': 'yes' },
  },
  {
    name: 'another method goes upstream',
    method: 'POST',
    path: '/blob/hello',
    body: 'x',
    status: 200,
    upstream: 'echo',
  },
  { name: 'another path goes upstream', path: '/blob/other', status: 200, upstream: 'echo' },
  {
    name: "use_session: the function gets the key's session",
    path: '/session/with',
    headers: { authorization: 'tok' },
    status: 200,
    json: { team: 'blue' },
  },
  {
    name: 'without use_session the session is empty',
    path: '/session/without',
    headers: { authorization: 'tok' },
    status: 200,
    json: null,
  },
  { name: 'a function that throws answers 500', path: '/fail/boom', status: 500, error: INTERNAL },
  { name: 'with proxy_on_error the upstream answers', path: '/fail/proxied', status: 200, upstream: 'echo' },
  { name: 'the function sees no Node globals', path: '/blob/escape', status: 200, text: 'none' },
];

describeEachSetup(
  'virtual endpoints',
  () => ({
    argv: ['--enable-jsvm', '--plugin-dir', pluginDir, '--plugin-timeout-ms', String(TIMEOUT_MS)],
  }),
  ({ gw }) => {
    before(async () => {
      await provision(
        gw(),
        [
          keyless(
            'blob',
            '/blob/',
            echo.url,
            withVirtual(
              [
                virtual('/hello', 'myVirtualHandler', { blob: HELLO }),
                virtual('/escape', 'escape', { blob: ESCAPE }),
              ],
              { config_data: { greeting: 'hi' } },
            ),
          ),
          keyless(
            'file',
            '/file/',
            echo.url,
            withVirtual([virtual('/hello', 'myVirtualHandler', { file: 'virtual/hello.js' })], {
              config_data: { greeting: 'hi' },
            }),
          ),
          keyed(
            'session',
            '/session/',
            echo.url,
            withVirtual([
              virtual('/with', 'whoAmI', { blob: SESSION }, { use_session: true }),
              virtual('/without', 'whoAmI', { blob: SESSION }, { use_session: false }),
              virtual('/count', 'count', { blob: COUNTER }, { use_session: true }),
              virtual('/count-off', 'count', { blob: COUNTER }, { use_session: false }),
            ]),
          ),
          keyless(
            'fail',
            '/fail/',
            echo.url,
            withVirtual([
              virtual('/boom', 'boom', { blob: THROWS }, { proxy_on_error: false }),
              virtual('/proxied', 'boom', { blob: THROWS }, { proxy_on_error: true }),
            ]),
          ),
          keyless('loops', '/loops/', echo.url, withVirtual([virtual('/spin', 'spin', { blob: LOOPS })])),
          keyless(
            'loops-proxied',
            '/loops-proxied/',
            echo.url,
            withVirtual([virtual('/spin', 'spin', { blob: LOOPS }, { proxy_on_error: true })]),
          ),
          keyless('plain', '/plain/', echo.url),
        ],
        {
          tok: {
            meta_data: { team: 'blue' },
            access_rights: { session: { api_id: 'session', versions: [] } },
          },
          counted: {
            meta_data: { team: 'green' },
            access_rights: { session: { api_id: 'session', versions: [] } },
          },
        },
      );
    });

    test('use_session: the meta_data the function returns changed is saved to the key', async () => {
      const count = async (path: string): Promise<number> => {
        const res = await gw().request({ path, headers: { authorization: 'counted' } });
        assert.equal(res.status, 200, res.text);
        return Number(res.text);
      };
      const first = await count('/session/count');
      assert.equal(await count('/session/count'), first + 1);
      // Without use_session the function gets no session and nothing is saved.
      assert.equal(await count('/session/count-off'), 1);
      const key = await gw().admin('GET', '/svc/keys/counted');
      assert.equal(key.status, 200, key.text);
      assert.deepEqual((key.json as { meta_data?: unknown }).meta_data, { team: 'green', count: first + 1 });
    });

    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        const { res, served } = await sendRow(gw(), row);
        assertAnswer(res, row);
        if (row.text !== undefined) assert.equal(res.text, row.text);
        if (row.json !== undefined) assert.deepEqual(res.json, row.json);
        if (row.upstream !== undefined) assert.equal((res.json as Echoed).upstream, row.upstream);
        // The function gets the request body: node:http serves these APIs, fast path or not.
        assert.equal(served, 0, 'served by node:http');
      });
    }

    test('a looping function times out while other APIs keep answering', async () => {
      const started = performance.now();
      const stuck = gw().request({ fresh: true, path: '/loops/spin' });
      const proxied = gw().request({ fresh: true, path: '/loops-proxied/spin' });
      await new Promise((r) => setTimeout(r, 100));
      const others = await Promise.all(
        ['/plain/x', '/blob/hello'].map(async (path) => {
          const res = await gw().request({ fresh: true, path });
          return { path, status: res.status, at: performance.now() - started };
        }),
      );
      const res = await stuck;
      const took = performance.now() - started;
      for (const o of others) {
        assert.ok(o.status === 200 || o.status === 201, `${o.path}: ${String(o.status)}`);
        assert.ok(o.at < took, `${o.path} answered after the looping request`);
      }
      assert.equal(res.status, 500);
      assert.match(res.text, /Internal error \(ID /);
      assert.ok(took >= TIMEOUT_MS - 20, `answered after ${String(Math.round(took))} ms`);
      assert.equal((await proxied).status, 200, 'proxy_on_error: the upstream answers after the timeout');
      assert.equal((await gw().request({ fresh: true, path: '/loops/spin' })).status, 500);
    });

    test('a file out of plugin_dir is refused when written', async () => {
      const res = await gw().admin(
        'POST',
        '/svc/apis',
        keyless('escape', '/escape/', echo.url, withVirtual([virtual('/x', 'f', { file: '../x.js' })])),
      );
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, /extended_paths\.virtual\[0\]\.function_source_uri/);
    });
  },
);

const JSVM_OFF =
  /version_data\.versions\.Default\.extended_paths\.virtual\[0\]: Forbidden: JavaScript virtual endpoints are off on this gateway: set enable_jsvm/;

describeEachSetup(
  'virtual endpoints, enable_jsvm off',
  () => ({ argv: ['--plugin-dir', pluginDir] }),
  ({ gw }) => {
    const sources: [string, { blob: string } | { file: string }][] = [
      ['blob', { blob: HELLO }],
      ['file', { file: 'virtual/hello.js' }],
    ];
    for (const [kind, source] of sources) {
      test(`a ${kind} virtual endpoint is refused when written, nothing stored`, async () => {
        const id = `off-${kind}`;
        const def = keyless(
          id,
          `/${id}/`,
          echo.url,
          withVirtual([virtual('/hello', 'myVirtualHandler', source)]),
        );
        const res = await gw().admin('POST', '/svc/apis', def);
        assert.equal(res.status, 400, res.text);
        assert.match(res.text, JSVM_OFF);
        assert.equal((await gw().admin('GET', `/svc/apis/${id}`)).status, 404);

        // PUT over a stored API: refused, the stored one unchanged.
        assert.equal((await gw().admin('POST', '/svc/apis', keyless(id, `/${id}/`, echo.url))).status, 200);
        const put = await gw().admin('PUT', `/svc/apis/${id}`, def);
        assert.equal(put.status, 400, put.text);
        assert.match(put.text, JSVM_OFF);
        const stored = await gw().admin('GET', `/svc/apis/${id}`);
        assert.equal(stored.status, 200);
        assert.equal((stored.json as Record<string, unknown>).version_data, undefined);
      });
    }

    test('a stored API with a virtual endpoint is not served after a reload', async () => {
      const id = 'off-stored';
      await gw().store.put(
        'apis',
        id,
        keyless(
          id,
          `/${id}/`,
          echo.url,
          withVirtual([virtual('/hello', 'myVirtualHandler', { blob: HELLO })]),
        ),
      );
      const res = await gw().admin('GET', '/svc/reload');
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, new RegExp(`API ${id}: ${JSVM_OFF.source}`));
      const answer = await gw().request({ path: `/${id}/hello` });
      assert.equal(answer.status, 404, answer.text);
    });

    test('a disabled virtual endpoint is accepted', async () => {
      const id = 'off-disabled';
      const res = await gw().admin(
        'POST',
        '/svc/apis',
        keyless(
          id,
          `/${id}/`,
          echo.url,
          withVirtual([virtual('/hello', 'myVirtualHandler', { blob: HELLO }, { disabled: true })]),
        ),
      );
      assert.equal(res.status, 200, res.text);
      await gw().reload();
      const answer = await gw().request({ path: `/${id}/hello` });
      assert.equal(answer.status, 200, answer.text);
      assert.equal((answer.json as Echoed).upstream, 'echo');
    });
  },
);
