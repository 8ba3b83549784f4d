/**
 * The management API table of GATEWAY-BEHAVIOUR §1 (the rows of this issue), against a real
 * listener. Cases run in order: each one sees what the previous ones stored.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { send, type Res } from '../testing/client.ts';
import { SECRET, keyless, startGateway, useGateway } from '../testing/harness.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import type { Store } from '../store/store.ts';
import { FilesStore } from '../store/files.ts';
import { silentLogger } from '../../lib/log.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const target = 'http://127.0.0.1:9';
const api = (id: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> => {
  const def = keyless(id ?? 'x', '/a/', target, extra);
  if (id === undefined) delete def.api_id;
  return def;
};

const denied = { status: 'error', message: 'Attempted administrative access with invalid or missing key!' };
const malformed = { status: 'error', message: 'Request malformed' };
const apiNotFound = { status: 'error', message: 'API not found' };

interface Case {
  name: string;
  method: string;
  path: string;
  /** Omitted: the right secret. */
  secret?: string | null;
  body?: unknown;
  status: number;
  /** The exact JSON body, or a check of it. */
  want?: unknown;
  check?: (json: unknown) => void;
  headers?: Record<string, string>;
}

const cases: Case[] = [
  { name: 'no secret', method: 'GET', path: '/svc/apis', secret: null, status: 403, want: denied },
  { name: 'wrong secret', method: 'GET', path: '/svc/apis', secret: 'nope', status: 403, want: denied },
  {
    name: 'secret checked before the route',
    method: 'GET',
    path: '/svc/nothing',
    secret: null,
    status: 403,
    want: denied,
  },
  { name: 'empty list', method: 'GET', path: '/svc/apis', status: 200, want: [] },
  {
    name: 'POST with an ID: added',
    method: 'POST',
    path: '/svc/apis',
    body: api('one'),
    status: 200,
    want: { key: 'one', status: 'ok', action: 'added' },
  },
  {
    name: 'POST without an ID: one is generated',
    method: 'POST',
    path: '/svc/apis',
    body: api(undefined, { name: 'generated' }),
    status: 200,
    check: (json) => {
      const j = json as { key: string; status: string; action: string };
      assert.match(j.key, /^[0-9a-f]{32}$/);
      assert.deepEqual({ ...j, key: '' }, { key: '', status: 'ok', action: 'added' });
    },
  },
  {
    name: 'POST an ID that exists: 409',
    method: 'POST',
    path: '/svc/apis',
    body: api('one'),
    status: 409,
    want: { status: 'error', message: 'API already exists' },
  },
  {
    name: 'POST not JSON',
    method: 'POST',
    path: '/svc/apis',
    body: '{"name":',
    status: 400,
    want: malformed,
  },
  { name: 'POST a JSON array', method: 'POST', path: '/svc/apis', body: '[]', status: 400, want: malformed },
  { name: 'POST an empty body', method: 'POST', path: '/svc/apis', body: '', status: 400, want: malformed },
  {
    name: 'POST an invalid definition: the reason, nothing stored',
    method: 'POST',
    path: '/svc/apis',
    body: {
      api_id: 'bad',
      name: 'bad',
      proxy: { listen_path: 'nope', target_url: target },
      use_keyles: true,
    },
    status: 400,
    want: {
      status: 'error',
      message:
        'Validation of API Definition failed. Reason: use_keyles: unknown field: remove it, or check its spelling and nesting; proxy.listen_path: Invalid value: must match ^(/|$)',
    },
  },
  {
    name: 'the invalid one was not stored',
    method: 'GET',
    path: '/svc/apis/bad',
    status: 404,
    want: apiNotFound,
  },
  {
    name: 'POST a definition the gateway cannot serve',
    method: 'POST',
    path: '/svc/apis',
    body: api('ftp', { proxy: { listen_path: '/f/', target_url: 'ftp://x' } }),
    status: 400,
    want: {
      status: 'error',
      message:
        'Validation of API Definition failed. Reason: proxy.target_url: Unsupported value: "ftp://x": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
    },
  },
  {
    name: 'POST a setting the gateway does not enforce yet: refused by name, nothing stored',
    method: 'POST',
    path: '/svc/apis',
    body: api('openid', { use_openid: true, proxy: { listen_path: '/openid/', target_url: target } }),
    status: 400,
    want: {
      status: 'error',
      message: 'Validation of API Definition failed. Reason: use_openid: not supported by svc yet',
    },
  },
  {
    name: "POST a listen path under the management API's",
    method: 'POST',
    path: '/svc/apis',
    body: api('health', { proxy: { listen_path: '/hello/', target_url: target } }),
    status: 400,
    want: {
      status: 'error',
      message:
        'Validation of API Definition failed. Reason: proxy.listen_path: Invalid value: "/hello/": the gateway\'s management API answers /hello and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own',
    },
  },
  { name: 'GET one', method: 'GET', path: '/svc/apis/one', status: 200, want: api('one') },
  {
    name: 'GET one, trailing slash ignored',
    method: 'GET',
    path: '/svc/apis/one/',
    status: 200,
    want: api('one'),
  },
  { name: 'GET a missing API', method: 'GET', path: '/svc/apis/missing', status: 404, want: apiNotFound },
  {
    name: 'GET the list',
    method: 'GET',
    path: '/svc/apis/',
    status: 200,
    check: (json) => {
      const names = (json as { name: string }[]).map((a) => a.name).sort();
      assert.deepEqual(names, ['generated', 'one']);
    },
  },
  {
    name: 'PUT: modified',
    method: 'PUT',
    path: '/svc/apis/one',
    body: api('one', { name: 'renamed' }),
    status: 200,
    want: { key: 'one', status: 'ok', action: 'modified' },
  },
  {
    name: 'PUT took effect',
    method: 'GET',
    path: '/svc/apis/one',
    status: 200,
    want: api('one', { name: 'renamed' }),
  },
  {
    name: 'PUT without api_id in the body takes the path ID',
    method: 'PUT',
    path: '/svc/apis/one',
    body: api(undefined, { name: 'no-id' }),
    status: 200,
    want: { key: 'one', status: 'ok', action: 'modified' },
  },
  {
    name: 'PUT with another api_id in the body',
    method: 'PUT',
    path: '/svc/apis/one',
    body: api('two'),
    status: 400,
    want: {
      status: 'error',
      message: 'Request APIID does not match that in Definition! For Update operations these must match.',
    },
  },
  {
    name: 'PUT a missing API',
    method: 'PUT',
    path: '/svc/apis/missing',
    body: api('missing'),
    status: 404,
    want: apiNotFound,
  },
  { name: 'PUT not JSON', method: 'PUT', path: '/svc/apis/one', body: 'x', status: 400, want: malformed },
  {
    name: 'PUT an invalid definition',
    method: 'PUT',
    path: '/svc/apis/one',
    body: { api_id: 'one', proxy: { listen_path: '/a/', target_url: target } },
    status: 400,
    want: {
      status: 'error',
      message: 'Validation of API Definition failed. Reason: name: Required value: add this field',
    },
  },
  {
    name: 'the invalid PUT changed nothing',
    method: 'GET',
    path: '/svc/apis/one',
    status: 200,
    want: api('one', { name: 'no-id' }),
  },
  {
    name: 'DELETE: deleted',
    method: 'DELETE',
    path: '/svc/apis/one',
    status: 200,
    want: { key: 'one', status: 'ok', action: 'deleted' },
  },
  { name: 'DELETE again', method: 'DELETE', path: '/svc/apis/one', status: 404, want: apiNotFound },
  { name: 'reload', method: 'GET', path: '/svc/reload', status: 200, want: { status: 'ok', message: '' } },
  {
    name: 'reload, trailing slash',
    method: 'GET',
    path: '/svc/reload/',
    status: 200,
    want: { status: 'ok', message: '' },
  },
  {
    name: 'group reload',
    method: 'GET',
    path: '/svc/reload/group',
    status: 200,
    want: { status: 'ok', message: '' },
  },
  {
    name: 'reload with another method',
    method: 'POST',
    path: '/svc/reload',
    status: 405,
    want: { status: 'error', message: 'Method not allowed' },
    headers: { allow: 'GET' },
  },
  {
    name: 'PATCH on the collection',
    method: 'PATCH',
    path: '/svc/apis',
    status: 405,
    want: { status: 'error', message: 'Method not allowed' },
    headers: { allow: 'GET, POST' },
  },
  {
    name: 'PUT on the collection',
    method: 'PUT',
    path: '/svc/apis',
    body: api('x'),
    status: 405,
    want: { status: 'error', message: 'Method not allowed' },
  },
  {
    name: 'unknown route',
    method: 'GET',
    path: '/svc/nothing',
    status: 404,
    want: { status: 'error', message: 'Not found' },
  },
  {
    name: 'hello without the secret',
    method: 'GET',
    path: '/hello',
    secret: null,
    status: 200,
    want: {
      status: 'pass',
      version: '0.1.0',
      description: 'svc gateway',
      details: { store: { kind: 'files', status: 'pass' } },
    },
  },
  {
    name: 'ready',
    method: 'GET',
    path: '/ready/',
    secret: null,
    status: 200,
    want: { status: 'ok', message: 'ready' },
  },
  { name: 'hello with another method', method: 'DELETE', path: '/hello', secret: null, status: 405 },
];

describe('management API', () => {
  const gw = useGateway();

  for (const c of cases) {
    test(`${c.method} ${c.path}: ${c.name}`, async () => {
      const headers: Record<string, string> = {};
      if (c.secret !== null) headers['x-svc-authorization'] = c.secret ?? SECRET;
      const body =
        c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
      const res: Res = await send({
        port: gw().adminPort,
        method: c.method,
        path: c.path,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      assert.equal(res.status, c.status, res.text);
      assert.equal(res.headers['content-type'], 'application/json');
      assert.equal(res.text, JSON.stringify(res.json), 'compact JSON');
      if (c.want !== undefined) assert.deepEqual(res.json, c.want);
      c.check?.(res.json);
      for (const [k, v] of Object.entries(c.headers ?? {})) assert.equal(res.headers[k], v, k);
    });
  }

  test('HEAD /hello: 200 without a body', async () => {
    const res = await send({ port: gw().adminPort, method: 'HEAD', path: '/hello' });
    assert.equal(res.status, 200);
    assert.equal(res.text, '');
  });
});

describe('management API on its own port', () => {
  const gw = useGateway({ argv: ['--control-port', '0'] });

  test('the control port answers, the gateway port does not', async () => {
    assert.notEqual(gw().adminPort, gw().port);
    assert.equal((await gw().admin('GET', '/svc/apis')).status, 200);
    const onGateway = await send({
      port: gw().port,
      path: '/svc/apis',
      headers: { 'x-svc-authorization': SECRET },
    });
    assert.equal(onGateway.status, 404);
    assert.deepEqual(onGateway.json, { error: 'Not Found' });
    assert.equal((await send({ port: gw().adminPort, path: '/hello' })).status, 200);
    assert.deepEqual((await send({ port: gw().adminPort, path: '/elsewhere' })).json, {
      status: 'error',
      message: 'Not found',
    });
  });
});

/** A store whose listing fails until `healthy` is set: the store is down at start. */
function flakyStore(inner: Store): { store: Store; heal: () => void } {
  let healthy = false;
  const store = new Proxy(inner, {
    get(t, prop) {
      if (prop === 'list') {
        return (c: Parameters<Store['list']>[0]) =>
          healthy ? t.list(c) : Promise.reject(new Error('store down'));
      }
      const v: unknown = Reflect.get(t, prop, t);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  return {
    store,
    heal: () => {
      healthy = true;
    },
  };
}

describe('readiness', () => {
  test('/ready is 503 until the first successful load, then 200', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-gw-ready-'));
    const { store, heal } = flakyStore(await FilesStore.open(dir, silentLogger()));
    const gw = await startGateway({ store, dataDir: dir });
    try {
      const before = await send({ port: gw.port, path: '/ready' });
      assert.equal(before.status, 503);
      assert.deepEqual(before.json, {
        status: 'error',
        message: 'not ready: the routes have not loaded yet',
      });
      heal();
      await waitFor('the retried load', async () =>
        (await send({ port: gw.port, path: '/ready' })).status === 200 ? true : undefined,
      );
    } finally {
      await gw.stop();
    }
  });
});
