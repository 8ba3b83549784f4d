/**
 * The contract between the Gateway API translation and the gateway: what translate/gateway-api.ts
 * gives for a Gateway and its HTTPRoute, written to a real gateway process through its
 * management API as the operator's ApiDefinition controller would write it, answers requests as
 * the route says (matches in the spec's precedence, fall-through, weights, filters, redirects,
 * rewrites, 500 for a rule without a usable backend). Real echo upstreams; no API server (the
 * cluster's part is e2e/operator/gateway-api.test.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { translateApiDefinition } from '../../operator/translate/api-definition.ts';
import { translateGateway, type HttpRouteInput } from '../../operator/translate/gateway-api.ts';
import {
  httpRequest,
  readEcho,
  startEchoUpstream,
  startGateway,
  waitFor,
  type GatewayProc,
} from '../harness/processes.ts';
import { admin } from '../operator/helpers.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

type Name = 'a' | 'b' | 'c';
let dir: string;
let gw: GatewayProc;
const upstreams = {} as Record<Name, Awaited<ReturnType<typeof startEchoUpstream>>>;

const shop: HttpRouteInput = {
  metadata: { name: 'shop', namespace: 'ns' },
  spec: {
    parentRefs: [{ name: 'edge' }],
    hostnames: ['shop.example'],
    rules: [
      { matches: [{ path: { type: 'Exact', value: '/exact' } }], backendRefs: [{ name: 'a', port: 80 }] },
      {
        matches: [
          { path: { value: '/api' }, headers: [{ name: 'X-Tier', value: 'gold' }] },
          { path: { value: '/api' }, queryParams: [{ name: 'variant', value: 'b' }] },
        ],
        backendRefs: [{ name: 'b', port: 80 }],
      },
      { matches: [{ path: { value: '/api' }, method: 'DELETE' }], backendRefs: [{ name: 'c', port: 80 }] },
      { matches: [{ path: { value: '/api' } }], backendRefs: [{ name: 'a', port: 80 }] },
      {
        matches: [
          {
            path: { value: '/beta' },
            headers: [{ name: 'X-Beta', type: 'RegularExpression', value: '^(yes|1)$' }],
          },
        ],
        backendRefs: [{ name: 'b', port: 80 }],
      },
      {
        matches: [{ path: { value: '/headers' } }],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { set: [{ name: 'X-Added', value: 'yes' }], remove: ['X-Drop'] },
          },
          {
            type: 'ResponseHeaderModifier',
            responseHeaderModifier: { set: [{ name: 'X-Resp', value: '1' }], remove: ['X-Upstream'] },
          },
        ],
        backendRefs: [{ name: 'a', port: 80 }],
      },
      {
        matches: [{ path: { type: 'Exact', value: '/old' } }],
        filters: [
          {
            type: 'RequestRedirect',
            requestRedirect: {
              hostname: 'new.example',
              path: { type: 'ReplaceFullPath', replaceFullPath: '/new' },
              statusCode: 301,
            },
          },
        ],
      },
      {
        matches: [{ path: { value: '/rewrite' } }],
        filters: [
          {
            type: 'URLRewrite',
            urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } },
          },
        ],
        backendRefs: [{ name: 'b', port: 80 }],
      },
      {
        matches: [{ path: { value: '/full' } }],
        filters: [
          {
            type: 'URLRewrite',
            urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/landing' } },
          },
        ],
        backendRefs: [{ name: 'b', port: 80 }],
      },
      {
        matches: [{ path: { value: '/split' } }],
        backendRefs: [
          { name: 'a', port: 80, weight: 3 },
          { name: 'b', port: 80, weight: 1 },
        ],
      },
      { matches: [{ path: { value: '/missing' } }], backendRefs: [{ name: 'nobody', port: 80 }] },
      { matches: [{ path: { value: '/' } }], backendRefs: [{ name: 'c', port: 80 }] },
    ],
  },
};

/** Matches by method and query parameter only, as the conformance suite's (no catch-all rule). */
const methods: HttpRouteInput = {
  metadata: { name: 'methods', namespace: 'ns' },
  spec: {
    parentRefs: [{ name: 'edge' }],
    hostnames: ['methods.example'],
    rules: [
      { matches: [{ method: 'POST' }], backendRefs: [{ name: 'a', port: 80 }] },
      { matches: [{ method: 'GET' }], backendRefs: [{ name: 'b', port: 80 }] },
      { matches: [{ path: { value: '/path1' }, method: 'GET' }], backendRefs: [{ name: 'a', port: 80 }] },
      {
        matches: [{ path: { value: '/path2' }, queryParams: [{ name: 'animal', value: 'whale' }] }],
        backendRefs: [{ name: 'c', port: 80 }],
      },
      {
        matches: [{ path: { type: 'Exact', value: '/path3/deep' }, method: 'PUT' }],
        backendRefs: [{ name: 'c', port: 80 }],
      },
      { matches: [{ path: { value: '/path3' } }], backendRefs: [{ name: 'a', port: 80 }] },
    ],
  },
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-gwapi-contract-'));
  for (const n of ['a', 'b', 'c'] as const) upstreams[n] = await startEchoUpstream(n);
  gw = await startGateway({
    name: 'gwapi-contract',
    secret: 'e2e-gwapi-contract',
    dataDir: join(dir, 'gw'),
    logDir: dir,
  });
  const t = translateGateway(
    {
      metadata: { name: 'edge', namespace: 'ns' },
      spec: { gatewayClassName: 'svc', listeners: [{ name: 'http', port: gw.port, protocol: 'HTTP' }] },
    },
    [shop, methods],
    {
      service: (_ns, name) =>
        ['a', 'b', 'c'].includes(name) ? { spec: { ports: [{ name: 'http', port: 80 }] } } : undefined,
      endpointSlices: (_ns, name) => [
        {
          ports: [{ name: 'http', port: upstreams[name as Name].port }],
          endpoints: [{ addresses: ['127.0.0.1'] }],
        },
      ],
      secretExists: () => false,
      namespaceLabels: () => ({}),
      grants: [],
      gatewayPort: gw.port,
    },
  );
  for (const api of t.apis) {
    const def = translateApiDefinition(
      { metadata: { name: api.name, namespace: 'ns' }, spec: api.spec },
      { apiId: api.spec.api_id ?? '', orgId: 'org-1', policyId: () => 'p', certificateId: () => 'c' },
    );
    const r = await admin(gw, 'POST', '/svc/apis', def);
    assert.equal(r.status, 200, `${api.name}: ${JSON.stringify(r.body)}`);
  }
  assert.equal((await admin(gw, 'GET', '/svc/reload')).status, 200);
});

after(async () => {
  try {
    await stopAll(gw, ...Object.values(upstreams));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

interface Answer {
  status: number;
  upstream?: string;
  path?: string;
  query?: string;
  sent: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

async function call(
  path: string,
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const r = await httpRequest(`${gw.url}${path}`, {
    method: opts.method ?? 'GET',
    headers: { host: 'shop.example', ...opts.headers },
  });
  const body = readEcho(r.body); // {} when not the echo
  return {
    status: r.status,
    ...(body.upstream === undefined ? {} : { upstream: body.upstream }),
    ...(body.path === undefined ? {} : { path: body.path }),
    ...(body.query === undefined ? {} : { query: body.query }),
    sent: body.headers ?? {},
    headers: r.headers,
  };
}

test('matches reach the backend the route names, in the spec precedence, with fall-through', async () => {
  await waitFor('the route table loaded', async () =>
    (await call('/exact')).upstream === 'a' ? true : undefined,
  );
  const rows: [string, { method?: string; headers?: Record<string, string> }, string, string][] = [
    ['/exact', {}, 'a', '/exact'],
    ['/exact/deeper', {}, 'c', '/exact/deeper'],
    // Path matches are compared with case: another case is on to the covering prefix (/).
    ['/EXACT', {}, 'c', '/EXACT'],
    ['/API/orders', {}, 'c', '/API/orders'],
    ['/api/orders', {}, 'a', '/api/orders'],
    ['/api/orders?x=1', { headers: { 'x-tier': 'gold' } }, 'b', '/api/orders'],
    ['/api/orders?variant=b', {}, 'b', '/api/orders'],
    ['/api/orders', { headers: { 'x-tier': 'silver' } }, 'a', '/api/orders'],
    ['/api/orders', { method: 'DELETE' }, 'c', '/api/orders'],
    // A method match comes before header matches.
    ['/api/x', { method: 'DELETE', headers: { 'x-tier': 'gold' } }, 'c', '/api/x'],
    ['/beta/1', { headers: { 'x-beta': 'yes' } }, 'b', '/beta/1'],
    // No header: on to the covering prefix, with the path unchanged.
    ['/beta/1', {}, 'c', '/beta/1'],
    ['/anything', {}, 'c', '/anything'],
  ];
  for (const [path, opts, upstream, seen] of rows) {
    const r = await call(path, opts);
    assert.equal(r.status, 200, `${path} ${JSON.stringify(opts)}`);
    assert.equal(r.upstream, upstream, `${path} ${JSON.stringify(opts)}`);
    assert.equal(r.path, seen, `${path} ${JSON.stringify(opts)}`);
  }
  assert.equal((await call('/api/orders?x=1', { headers: { 'x-tier': 'gold' } })).query, '?x=1');
});

test('the backend gets the Host header the client sent, served directly or through a dispatch', async () => {
  for (const [path, opts] of [
    ['/exact', {}],
    ['/anything', {}],
    ['/api/orders', { headers: { 'x-tier': 'gold' } }],
    ['/api/orders', { method: 'DELETE' }],
  ] as const) {
    const r = await call(path, opts);
    assert.equal(r.status, 200, path);
    assert.equal(r.sent.host, 'shop.example', `${path} ${JSON.stringify(opts)}`);
  }
});

test('a dispatched request reaches the backend with the path the client sent, no slash added', async () => {
  const on = { host: 'methods.example' };
  const rows: [string, string, string | number, string?, string?][] = [
    ['GET', '/path1', 'a', '/path1'],
    ['GET', '/path1/', 'a', '/path1/'],
    ['GET', '/path1/x', 'a', '/path1/x'],
    ['POST', '/path1', 'a', '/path1'],
    ['GET', '/', 'b', '/'],
    ['POST', '/', 'a', '/'],
    ['GET', '/path2?animal=whale', 'c', '/path2', '?animal=whale'],
    ['GET', '/path2', 'b', '/path2'],
    ['PUT', '/path3/deep', 'c', '/path3/deep'],
    // No PUT match of the Exact path: on to the covering prefix /path3, the path unchanged.
    ['GET', '/path3/deep?q=1', 'a', '/path3/deep', '?q=1'],
    // No match for the method at all: 404.
    ['PUT', '/', 404],
  ];
  for (const [method, path, want, seen, query] of rows) {
    const r = await call(path, { method, headers: on });
    const what = `${method} ${path}`;
    if (typeof want === 'number') {
      assert.equal(r.status, want, what);
      continue;
    }
    assert.equal(r.status, 200, what);
    assert.equal(r.upstream, want, what);
    assert.equal(r.path, seen, what);
    assert.equal(r.query ?? '', query ?? '', what);
  }
  // HEAD, which no rule matches: 404 without a JSON content type (there is no body to read).
  const head = await call('/', { method: 'HEAD', headers: on });
  assert.equal(head.status, 404);
  assert.doesNotMatch(String(head.headers['content-type'] ?? ''), /json/);
});

test('weights: 3 to 1', async () => {
  const counts: Record<string, number> = {};
  for (let i = 0; i < 40; i++) {
    const r = await call(`/split/${i}`);
    counts[r.upstream ?? String(r.status)] = (counts[r.upstream ?? String(r.status)] ?? 0) + 1;
  }
  assert.deepEqual(counts, { a: 30, b: 10 });
});

test('filters: header modifiers, a redirect, URL rewrites; a rule without a usable backend answers 500', async () => {
  const h = await call('/headers/x', { headers: { 'x-drop': 'gone' } });
  assert.equal(h.sent['x-added'], 'yes');
  assert.equal(h.sent['x-drop'], undefined);
  assert.equal(h.headers['x-resp'], '1');
  assert.equal(h.headers['x-upstream'], undefined);
  const r = await call('/old');
  assert.equal(r.status, 301);
  assert.equal(r.headers.location, `http://new.example:${gw.port}/new`);
  const rw = await call('/rewrite/items?q=1');
  assert.equal(rw.path, '/v2/items');
  assert.equal(rw.query, '?q=1');
  assert.equal((await call('/full/deep/path')).path, '/landing');
  assert.equal((await call('/missing')).status, 500);
});
