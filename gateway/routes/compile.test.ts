import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { loadGatewayConfig } from '../config/load.ts';
import type { Store } from '../store/store.ts';
import { Dispatchers } from '../upstream/dispatchers.ts';
import { MemoryCounters } from '../limits/memory.ts';
import { LimitsGuard } from '../limits/guard.ts';
import { Sessions } from '../sessions/sessions.ts';
import { chain } from './chain.ts';
import { checkApi, type CompileEnv } from './check.ts';
import { buildRouteTable, type CompileDeps } from './compile.ts';
import { api, env } from './testing.ts';

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
    want: [
      'listen_port: Invalid type: must be integer',
      'proxy.listen_path: Invalid value: must match ^(/|$)',
    ],
  },
  {
    name: 'the shared rules of the model follow, labelled like Kubernetes field errors',
    def: api({ protocol: 'h2c', listen_port: 9000, enable_jwt: true }, { target_url: 'ftp://u' }),
    want: [
      'proxy.target_url: Unsupported value: "ftp://u": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
      'protocol: Unsupported value: this listener protocol is not supported yet by this gateway: set protocol to http, https, tcp or tls, or leave it empty to serve on the gateway port',
      'use_keyless: Forbidden: use_keyless excludes authentication, but enable_jwt is true: set use_keyless to false, or turn enable_jwt off',
    ].sort(),
  },
  {
    name: 'target_url missing',
    def: api({}, { target_url: undefined }),
    want: [
      'proxy.target_url: Required value: set the upstream address, such as http://<service>.<namespace>.svc:<port>',
    ],
  },
  {
    name: 'h2c listener',
    def: api({ protocol: 'h2c', listen_port: 9000 }),
    want: [
      'protocol: Unsupported value: this listener protocol is not supported yet by this gateway: set protocol to http, https, tcp or tls, or leave it empty to serve on the gateway port',
    ],
  },
  {
    name: 'https without certificate and without its own port',
    def: api({ protocol: 'https' }),
    want: [
      "protocol: Invalid value: https needs the gateway's TLS certificate: configure tls_cert_file and tls_key_file, or use http",
      'listen_port: Required value: https needs a listen_port of its own: the gateway port serves http',
    ],
  },
  {
    name: 'https with certificate on its own port',
    def: api({ protocol: 'https', listen_port: 8443 }),
    env: { ...env, tls: true },
    want: [],
  },
  {
    name: 'listen path of the management API on the gateway port',
    def: api({}, { listen_path: '/svc/apis/' }),
    want: [
      `proxy.listen_path: Invalid value: "/svc/apis/": the gateway's management API answers /svc and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`,
    ],
  },
  {
    name: 'management paths stay reserved with a control port (the rule does not depend on it)',
    def: api({}, { listen_path: '/hello' }),
    env: { ...env, controlPort: 9999 },
    want: [
      `proxy.listen_path: Invalid value: "/hello": the gateway's management API answers /hello and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`,
    ],
  },
  {
    name: 'a listen_port equal to the gateway port is the gateway port',
    def: api({ listen_port: 8080 }, { listen_path: '/Ready/' }),
    want: [
      `proxy.listen_path: Invalid value: "/Ready/": the gateway's management API answers /ready and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`,
    ],
  },
  {
    name: 'management paths are free on a port of their own',
    def: api({ listen_port: 9000 }, { listen_path: '/hello' }),
    want: [],
  },
  {
    name: 'listen_port of the control port',
    def: api({ listen_port: 9999 }),
    env: { ...env, controlPort: 9999 },
    want: ['listen_port: Invalid value: 9999 is the management port: choose another listen_port'],
  },
  {
    name: 'a listen path that is not canonical',
    def: api({}, { listen_path: '/p/./' }),
    want: [
      'proxy.listen_path: Invalid value: "/p/./" has a "." or ".." segment: write the path it stands for, "/p/"',
    ],
  },
  {
    name: 'bad domain',
    def: api({ domain: 'a*.example.com' }),
    want: [
      'domain: Invalid value: "a*.example.com" is not a host name: write one such as api.example.com, or *.example.com for its subdomains',
    ],
  },
];

for (const c of checks) {
  test(`checkApi: ${c.name}`, () => {
    const got = checkApi(c.def, c.env ?? env);
    assert.deepEqual(c.name.startsWith('the shared rules') ? got.sort() : got, c.want);
  });
}

const deps: CompileDeps = {
  store: {} as Store,
  counters: new MemoryCounters(),
  limits: new LimitsGuard({ failOpen: false, log: silentLogger() }),
  sessions: new Sessions({} as Store, { log: silentLogger() }),
  log: silentLogger(),
  config: loadGatewayConfig({ argv: ['--secret', 's'], env: {} }),
  now: Date.now,
  chain: [],
  dispatchers: new Dispatchers({ connectTimeoutMs: 1000, timeoutMs: 1000 }),
};

test('buildRouteTable: inactive and internal APIs are skipped, not served', async () => {
  const r = await buildRouteTable(
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
    r.table.routes.map((x) => x.id),
    ['on'],
  );
});

test('buildRouteTable: a failing definition is left out with its problem named; the others serve', async () => {
  const r = await buildRouteTable(
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
  assert.deepEqual(
    r.table.routes.map((x) => x.id),
    ['good', 'p1'],
  );
  assert.deepEqual(r.problems, [
    { api_id: 'broken', message: 'apis/broken.json: Unexpected end of JSON input' },
    {
      api_id: 'bad',
      message:
        'proxy.target_url: Unsupported value: "ftp://x": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
    },
    { api_id: 'other-id', message: 'api_id: x differs from the ID it is stored under' },
    {
      api_id: 'p2',
      message: 'listen_port: port 9000 already serves http for API p1; a port has one protocol',
    },
  ]);
});

test('buildRouteTable: two APIs on one path is a warning, the first ID serves', async () => {
  const r = await buildRouteTable(
    [
      { id: 'b', value: api() },
      { id: 'a', value: api() },
    ],
    env,
    deps,
  );
  assert.deepEqual(r.warnings, ['APIs a and b claim the same domain and listen path; a serves it']);
  assert.equal(r.table.match('main', 'h', '/a/x')?.id, 'a');
});

test('buildRouteTable: listen paths that differ in case or trailing slash are one claim', async () => {
  const r = await buildRouteTable(
    [
      { id: 'upper', value: api({}, { listen_path: '/P/' }) },
      { id: 'lower', value: api({}, { listen_path: '/p' }) },
      { id: 'other-host', value: api({ domain: 'API.example.com' }, { listen_path: '/p/' }) },
      { id: 'same-host', value: api({ domain: 'api.example.com.' }, { listen_path: '/P' }) },
    ],
    env,
    deps,
  );
  assert.deepEqual(r.warnings, [
    'APIs other-host and same-host claim the same domain and listen path; other-host serves it',
    'APIs lower and upper claim the same domain and listen path; lower serves it',
  ]);
  assert.equal(r.table.match('main', 'h', '/P/x')?.id, 'lower');
  assert.equal(r.table.match('main', 'api.example.com', '/p')?.id, 'other-host');
});

test('buildRouteTable: an internal target naming a name two APIs share is a warning, the API still served', async () => {
  const r = await buildRouteTable(
    [
      { id: 'dup-1', value: api({ name: 'Dup Name' }, { listen_path: '/d1/' }) },
      { id: 'dup-2', value: api({ name: 'dup-name' }, { listen_path: '/d2/' }) },
      { id: 'caller', value: api({}, { listen_path: '/c/', target_url: 'svc://dup-name/x' }) },
    ],
    env,
    deps,
  );
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.warnings, [
    'API caller: proxy.target_url: Invalid value: svc://dup-name: 2 APIs have the name "dup-name" (dup-1, dup-2): write the API ID of the one meant (svc://<api_id>/...), or give the APIs different names (its requests to this target get 502 until then)',
  ]);
  assert.equal(r.table.match('main', 'h', '/c/x')?.id, 'caller');
});

const withChain: CompileDeps = { ...deps, chain };

test('buildRouteTable: an API whose stored text is unchanged keeps its route; a changed one is compiled again', async () => {
  const entry = (id: string, value: Record<string, unknown>) => ({ id, value, text: JSON.stringify(value) });
  const first = await buildRouteTable(
    [
      entry('same', api()),
      entry('changed', api({}, { listen_path: '/c/' })),
      entry(
        'mtls',
        api(
          { use_mutual_tls_auth: true, use_keyless: false, client_certificates: [] },
          { listen_path: '/m/' },
        ),
      ),
    ],
    env,
    withChain,
  );
  assert.deepEqual(first.problems, []);
  assert.deepEqual(
    [...first.reusable.keys()],
    ['same', 'changed'],
    'a route whose middleware reads certificates is never reused',
  );
  const second = await buildRouteTable(
    [
      entry('same', api()),
      entry('changed', api({}, { listen_path: '/c2/' })),
      entry(
        'mtls',
        api(
          { use_mutual_tls_auth: true, use_keyless: false, client_certificates: [] },
          { listen_path: '/m/' },
        ),
      ),
      { id: 'no-text', value: api({}, { listen_path: '/n/' }) },
    ],
    env,
    withChain,
    first.reusable,
  );
  const byId = (r: typeof first, id: string) => r.table.routes.find((x) => x.id === id);
  assert.equal(byId(second, 'same'), byId(first, 'same'), 'unchanged: the same route');
  assert.notEqual(byId(second, 'changed'), byId(first, 'changed'));
  assert.equal(second.table.match('main', 'h', '/c2/x')?.id, 'changed');
  assert.equal(second.table.match('main', 'h', '/c/x'), undefined);
  assert.notEqual(byId(second, 'mtls'), byId(first, 'mtls'));
  assert.deepEqual(
    [...second.reusable.keys()].sort(),
    ['changed', 'same'],
    'an entry without text is never reused',
  );
  // A kept route still takes part in the checks across APIs: a new API on its port with
  // another protocol is the one refused... and one before it in ID order wins the port.
  const third = await buildRouteTable(
    [
      entry('a-first', api({ listen_port: 9000, protocol: 'https' }, { listen_path: '/f/' })),
      entry('same', api({ listen_port: 9000 })),
    ],
    { ...env, tls: true },
    withChain,
    second.reusable,
  );
  assert.deepEqual(
    third.problems.map((p) => p.api_id),
    ['same'],
  );
});
