import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { loadGatewayConfig } from '../config/load.ts';
import type { Store } from '../store/store.ts';
import { Dispatchers } from '../upstream/dispatchers.ts';
import { buildRouteTable, checkApi, parseTarget, type CompileDeps, type CompileEnv } from './compile.ts';

const env: CompileEnv = { listenPort: 8080, controlPort: undefined, tls: false };
const api = (
  extra: Record<string, unknown> = {},
  proxy: Record<string, unknown> = {},
): Record<string, unknown> => ({
  name: 'a',
  use_keyless: true,
  proxy: { listen_path: '/a/', target_url: 'http://u:1', ...proxy },
  ...extra,
});

const checks: { name: string; def: unknown; env?: CompileEnv; want: string[] }[] = [
  { name: 'minimal keyless API', def: api(), want: [] },
  {
    name: 'cluster service address without scheme',
    def: api({}, { target_url: 'svc.ns.svc:8080' }),
    want: [],
  },
  {
    name: 'schema problems come first, with field paths',
    def: { name: 'a', proxy: { listen_path: 'a' }, listen_port: 'x' },
    want: ['listen_port: Invalid type: must be integer', 'proxy.listen_path: Invalid value: must match ^/'],
  },
  {
    name: 'target_url missing',
    def: api({}, { target_url: undefined }),
    want: ['proxy.target_url: Required value: add the upstream URL'],
  },
  {
    name: 'target_url with another scheme',
    def: api({}, { target_url: 'ftp://u' }),
    want: ['proxy.target_url: Unsupported value: scheme ftp (use http or https)'],
  },
  {
    name: 'target_url not a URL',
    def: api({}, { target_url: 'http://' }),
    want: ['proxy.target_url: Invalid value: not a URL'],
  },
  {
    name: 'tcp listener',
    def: api({ protocol: 'tcp', listen_port: 9000 }),
    want: ['protocol: Unsupported value: tcp listeners are not supported yet; use http or https'],
  },
  {
    name: 'https without certificate and without its own port',
    def: api({ protocol: 'https' }),
    want: [
      "protocol: https needs the gateway's TLS certificate (tls_cert_file and tls_key_file)",
      'listen_port: https needs its own listen_port; the gateway port serves http',
    ],
  },
  {
    name: 'https with certificate on its own port',
    def: api({ protocol: 'https', listen_port: 8443 }),
    env: { ...env, tls: true },
    want: [],
  },
  {
    name: 'listen path of the management API on the shared port',
    def: api({}, { listen_path: '/svc/apis/' }),
    want: [
      "proxy.listen_path: /svc is the management API's on the gateway port; choose another path, a listen_port, or a control_port",
    ],
  },
  {
    name: 'management paths are free with a control port',
    def: api({}, { listen_path: '/hello' }),
    env: { ...env, controlPort: 9999 },
    want: [],
  },
  {
    name: 'listen_port of the control port',
    def: api({ listen_port: 9999 }),
    env: { ...env, controlPort: 9999 },
    want: ['listen_port: 9999 is the management port'],
  },
  {
    name: 'bad domain',
    def: api({ domain: 'a*.example.com' }),
    want: ['domain: Invalid value: a host name such as api.example.com, or *. and a host name'],
  },
];

for (const c of checks) {
  test(`checkApi: ${c.name}`, () => {
    assert.deepEqual(checkApi(c.def, c.env ?? env), c.want);
  });
}

test('parseTarget', () => {
  assert.deepEqual(parseTarget('https://u.example:8443/base/?k=v'), {
    origin: 'https://u.example:8443',
    host: 'u.example:8443',
    basePath: '/base',
    baseQuery: 'k=v',
  });
  assert.deepEqual(parseTarget('orders.shop.svc:8080'), {
    origin: 'http://orders.shop.svc:8080',
    host: 'orders.shop.svc:8080',
    basePath: '',
    baseQuery: '',
  });
});

const deps: CompileDeps = {
  store: {} as Store,
  log: silentLogger(),
  config: loadGatewayConfig({ argv: ['--secret', 's'], env: {} }),
  now: Date.now,
  chain: [],
  dispatchers: new Dispatchers({ connectTimeoutMs: 1000, timeoutMs: 1000 }),
};

test('buildRouteTable: inactive and internal APIs are skipped, not served', () => {
  const r = buildRouteTable(
    [
      { id: 'on', value: { ...api(), api_id: 'on' } },
      { id: 'off', value: { ...api({ active: false }), api_id: 'off' } },
      { id: 'internal', value: { ...api({ internal: true }), api_id: 'internal' } },
    ],
    env,
    deps,
  );
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.skipped, ['off', 'internal']);
  assert.deepEqual(
    r.table?.routes.map((x) => x.id),
    ['on'],
  );
});

test('buildRouteTable: any failing definition means no table, each problem named', () => {
  const r = buildRouteTable(
    [
      { id: 'good', value: api() },
      { id: 'broken', problem: 'apis/broken.json: Unexpected end of JSON input' },
      { id: 'bad', value: api({}, { target_url: 'ftp://x' }) },
      { id: 'other-id', value: { ...api(), api_id: 'x' } },
      { id: 'p1', value: api({ listen_port: 9000 }) },
      { id: 'p2', value: api({ listen_port: 9000, protocol: 'https' }) },
    ],
    { ...env, tls: true },
    deps,
  );
  assert.equal(r.table, undefined);
  assert.deepEqual(r.problems, [
    { api_id: 'broken', message: 'apis/broken.json: Unexpected end of JSON input' },
    { api_id: 'bad', message: 'proxy.target_url: Unsupported value: scheme ftp (use http or https)' },
    { api_id: 'other-id', message: 'api_id: x differs from the ID it is stored under' },
    {
      api_id: 'p2',
      message: 'listen_port: port 9000 already serves http for API p1; a port has one protocol',
    },
  ]);
});

test('buildRouteTable: two APIs on one path is a warning, the first ID serves', () => {
  const r = buildRouteTable(
    [
      { id: 'b', value: api() },
      { id: 'a', value: api() },
    ],
    env,
    deps,
  );
  assert.deepEqual(r.warnings, ['APIs a and b claim the same domain and listen path; a serves it']);
  assert.equal(r.table?.match('main', 'h', '/a/x')?.id, 'a');
});
