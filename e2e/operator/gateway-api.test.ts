/**
 * The Gateway API end to end: a real control plane with the Gateway API CRDs of the chart
 * (charts/svc-operator/gateway-api, from the sigs.k8s.io/gateway-api module), a gateway, the
 * operator as a process, and echo upstreams behind ClusterIP Services whose EndpointSlices are
 * written by hand (a bare API server has no endpoints controller) pointing at this machine's own
 * address (the API server refuses loopback endpoint addresses), where the upstreams listen. Requests
 * go through the listener's port with the route's host and must reach the backend each match
 * names, with the filters applied; the status of the class, the Gateway and the routes says what
 * is served and what is not, with the spec's reasons.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  SVC_GATEWAY_CLASS,
  condition,
  endpointService,
  generatedApis,
  hostAddress,
  httpGateway,
  type Cond,
} from '../harness/gateway-api.ts';
import {
  freePort,
  httpRequest,
  readEcho,
  startEchoUpstream,
  waitFor,
  type EchoUpstream,
  type OperatorProc,
} from '../harness/processes.ts';
import { makeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet } from '../../gateway/testing/tls-client.ts';
import { applyManifest, tlsSecretManifest } from './helpers.ts';
import { startGatewayApiSuite, startWorldOperator, stopGatewaySuite, type GatewaySuite } from './helpers.ts';

const NS = 'gwapi';
const OTHER = 'gwapi-apps';
type Name = 'a' | 'b' | 'c';

let w: GatewaySuite;
let operator: OperatorProc;
let port: number;
const upstreams = {} as Record<Name, EchoUpstream>;
const HOST = hostAddress();

/** A ClusterIP Service and its EndpointSlice pointing at the echo upstream `n`. */
const service = (n: Name, ns = NS, name = `svc-${n}`): string =>
  endpointService(ns, name, HOST, upstreams[n].port);

before(async () => {
  w = await startGatewayApiSuite({ name: 'gwapi', namespaces: [NS, OTHER] });
  // `/delay...` answers a second late (timeouts).
  for (const n of ['a', 'b', 'c'] as const)
    upstreams[n] = await startEchoUpstream(n, { host: HOST, latePrefix: '/delay' });
  port = await freePort();
  await applyManifest(
    w.cp,
    [service('a'), service('b'), service('c'), service('c', OTHER, 'shared')].join('---\n'),
  );
  operator = await startWorldOperator(w, {
    env: { WATCH_NAMESPACE: `${NS},${OTHER}`, SVC_INGRESS_ADDRESS: '127.0.0.1' },
  });
  await applyManifest(
    w.cp,
    `${SVC_GATEWAY_CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/another-controller}
---
${httpGateway(NS, 'edge', port)}`,
  );
});

// What started (a failed start leaves the rest undefined).
after(() => stopGatewaySuite(w, operator, ...Object.values(upstreams)));

interface Seen {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  upstream?: string;
  path?: string;
  query?: string;
  sent?: Record<string, string>;
}

/** A request through the listener's port with a Host header: what came back and which upstream answered. */
async function call(
  host: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<Seen> {
  const r = await httpRequest(`http://127.0.0.1:${port}${path}`, {
    method: opts.method ?? 'GET',
    headers: { host, ...opts.headers },
  });
  const body = readEcho(r.body); // {} when not the echo: the status alone
  return {
    status: r.status,
    headers: r.headers,
    ...(body.upstream === undefined ? {} : { upstream: body.upstream }),
    ...(body.path === undefined ? {} : { path: body.path }),
    ...(body.query === undefined ? {} : { query: body.query }),
    ...(body.headers === undefined ? {} : { sent: body.headers }),
  };
}

/** Waits until a request is answered as `want` says. */
async function waitServed(
  host: string,
  path: string,
  want: { upstream?: string; status?: number },
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<Seen> {
  return waitFor(`${host}${path} -> ${JSON.stringify(want)}`, async () => {
    const r = await call(host, path, opts);
    const ok =
      (want.upstream === undefined || r.upstream === want.upstream) && r.status === (want.status ?? 200);
    return ok ? r : undefined;
  });
}

async function getJson<T>(kind: string, name: string, ns?: string): Promise<T> {
  const out = await w.cp.kubectl(['get', kind, name, ...(ns === undefined ? [] : ['-n', ns]), '-o', 'json']);
  return JSON.parse(out.stdout) as T;
}

/** The conditions of a route for the Gateway edge, once they are there and `ok` holds. */
async function routeConditions(name: string, ok: (c: readonly Cond[]) => boolean, ns = NS): Promise<Cond[]> {
  return waitFor(`HTTPRoute ${ns}/${name} status`, async () => {
    const r = await getJson<{
      status?: { parents?: { parentRef: { name: string }; controllerName: string; conditions: Cond[] }[] };
    }>('httproutes.gateway.networking.k8s.io', name, ns);
    const mine = r.status?.parents?.find(
      (p) => p.parentRef.name === 'edge' && p.controllerName === 'svc.io/gateway-controller',
    );
    return mine && ok(mine.conditions) ? mine.conditions : undefined;
  });
}

const route = (name: string, spec: string, ns = NS): string => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: ${ns}}
spec:
  parentRefs: [{name: edge, namespace: ${NS}}]
${spec}`;

test("the GatewayClass of svc.io/gateway-controller is Accepted; another controller's is left alone", async () => {
  await waitFor('GatewayClass svc Accepted', async () => {
    const c = await getJson<{ status?: { conditions?: Cond[] } }>(
      'gatewayclasses.gateway.networking.k8s.io',
      'svc',
    );
    return condition(c.status?.conditions, 'Accepted')?.status === 'True' ? true : undefined;
  });
  const theirs = await getJson<{ status?: { conditions?: Cond[] } }>(
    'gatewayclasses.gateway.networking.k8s.io',
    'theirs',
  );
  assert.notEqual(condition(theirs.status?.conditions, 'Accepted')?.reason, 'Accepted');
});

test('path, header, query and method matches reach their backends; a request no match takes falls through', async () => {
  await applyManifest(
    w.cp,
    route(
      'shop',
      `  hostnames: [shop.example]
  rules:
    - matches: [{path: {type: Exact, value: /exact}}]
      backendRefs: [{name: svc-a, port: 80}]
    - matches:
        - {path: {type: PathPrefix, value: /api}, headers: [{name: X-Tier, value: gold}]}
        - {path: {type: PathPrefix, value: /api}, queryParams: [{name: variant, value: b}]}
      backendRefs: [{name: svc-b, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /api}, method: DELETE}]
      backendRefs: [{name: svc-c, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /api}}]
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /beta}, headers: [{name: X-Beta, type: RegularExpression, value: '^(yes|1)$'}]}]
      backendRefs: [{name: svc-b, port: 80}]
    - matches: [{path: {type: RegularExpression, value: '/api/v[0-9]+/items/[0-9]+'}}]
      backendRefs: [{name: svc-b, port: 80}]
    - matches: [{path: {type: RegularExpression, value: '/(docs|help)/.*[.]html'}}]
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{name: svc-c, port: 80}]
`,
    ),
  );
  await waitServed('shop.example', '/exact', { upstream: 'a' });
  // The generated APIs reach the gateway one by one: the catch-all too before the checks.
  await waitServed('shop.example', '/anything', { upstream: 'c' });
  assert.equal((await call('shop.example', '/exact/deeper')).upstream, 'c', 'Exact: not the paths under it');
  assert.equal((await call('shop.example', '/Exact')).upstream, 'c', 'Exact /exact: not /Exact (with case)');
  assert.equal((await call('shop.example', '/API/orders')).upstream, 'c', 'PathPrefix /api: not /API');
  assert.equal((await call('shop.example', '/api/orders')).upstream, 'a');
  const gold = await call('shop.example', '/api/orders?x=1', { headers: { 'x-tier': 'gold' } });
  assert.equal(gold.upstream, 'b');
  assert.equal(gold.path, '/api/orders', 'the backend gets the whole path');
  assert.equal(gold.query, '?x=1');
  // The Host the client sent reaches the backend, through a dispatch or not (the spec's).
  assert.equal(gold.sent?.host, 'shop.example');
  assert.equal((await call('shop.example', '/anything')).sent?.host, 'shop.example');
  assert.equal((await call('shop.example', '/api/orders?variant=b')).upstream, 'b');
  assert.equal(
    (await call('shop.example', '/api/orders', { headers: { 'x-tier': 'silver' } })).upstream,
    'a',
  );
  assert.equal((await call('shop.example', '/api/orders', { method: 'DELETE' })).upstream, 'c');
  // A method match comes before header matches (the spec's precedence).
  assert.equal(
    (await call('shop.example', '/api/x', { method: 'DELETE', headers: { 'x-tier': 'gold' } })).upstream,
    'c',
  );
  assert.equal((await call('shop.example', '/beta/1', { headers: { 'x-beta': 'yes' } })).upstream, 'b');
  // No header: on to the covering prefix (/).
  const fell = await call('shop.example', '/beta/1');
  assert.equal(fell.upstream, 'c');
  assert.equal(fell.path, '/beta/1');
  // Exactly a dispatched path, matched or not: the backend gets it as sent, no slash added.
  const bare = await call('shop.example', '/beta');
  assert.equal(bare.upstream, 'c');
  assert.equal(bare.path, '/beta');
  const deleted = await call('shop.example', '/api?variant=a', { method: 'DELETE' });
  assert.equal(deleted.upstream, 'c');
  assert.equal(deleted.path, '/api');
  assert.equal(deleted.query, '?variant=a');
  assert.equal((await call('shop.example', '/api/', { method: 'DELETE' })).path, '/api/');
  assert.equal((await call('shop.example', '/anything')).upstream, 'c');
  // PathPrefix matches whole segments: /api covers /api/x, not /apiary.
  assert.equal((await call('shop.example', '/apiary')).upstream, 'c', '/apiary is not under /api');
  // RegularExpression: the whole path must match; it comes before the PathPrefix /api it lies under.
  const rx = await call('shop.example', '/api/v2/items/42?q=1');
  assert.equal(rx.upstream, 'b');
  assert.equal(rx.path, '/api/v2/items/42', 'the backend gets the whole path');
  assert.equal(rx.query, '?q=1');
  assert.equal((await call('shop.example', '/api/v2/items/42x')).upstream, 'a', 'not a whole match: /api');
  assert.equal((await call('shop.example', '/api/vx/items/42')).upstream, 'a');
  assert.equal((await call('shop.example', '/help/a/b.html')).upstream, 'a');
  assert.equal((await call('shop.example', '/help/a/b.htm')).upstream, 'c', 'no match: on to /');
  assert.equal((await call('other.example', '/anything')).status, 404, 'another host is not served');

  const conds = await routeConditions('shop', (c) => condition(c, 'Accepted')?.status === 'True');
  assert.equal(condition(conds, 'ResolvedRefs')?.status, 'True');
  // Programmed once every generated API is served by the gateway.
  await waitFor('Gateway edge Programmed', async () => {
    const g = await getJson<{
      status?: {
        conditions?: Cond[];
        addresses?: { value: string }[];
        listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[];
      };
    }>('gateways.gateway.networking.k8s.io', 'edge', NS);
    const listener = g.status?.listeners?.find((l) => l.name === 'http');
    return condition(g.status?.conditions, 'Programmed')?.status === 'True' &&
      condition(g.status?.conditions, 'Accepted')?.status === 'True' &&
      listener?.attachedRoutes === 1 &&
      condition(listener.conditions, 'Programmed')?.status === 'True' &&
      g.status?.addresses?.[0]?.value === '127.0.0.1'
      ? true
      : undefined;
  });
});

test('weighted backends share requests roughly by weight', async () => {
  await applyManifest(
    w.cp,
    route(
      'split',
      `  hostnames: [split.example]
  rules:
    - backendRefs: [{name: svc-a, port: 80, weight: 3}, {name: svc-b, port: 80, weight: 1}]
`,
    ),
  );
  await waitServed('split.example', '/', { status: 200 });
  const counts: Record<string, number> = {};
  for (let i = 0; i < 80; i++) {
    const r = await call('split.example', `/w/${i}`);
    counts[r.upstream ?? String(r.status)] = (counts[r.upstream ?? String(r.status)] ?? 0) + 1;
  }
  assert.deepEqual(Object.keys(counts).sort(), ['a', 'b'], JSON.stringify(counts));
  assert.ok((counts.a ?? 0) >= 50 && (counts.a ?? 0) <= 70, JSON.stringify(counts));
});

test('header modifiers, redirects and URL rewrites', async () => {
  await applyManifest(
    w.cp,
    route(
      'filters',
      `  hostnames: [filters.example]
  rules:
    - matches: [{path: {value: /headers}}]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {set: [{name: X-Added, value: 'yes'}], add: [{name: X-List, value: 'b'}, {name: X-New, value: 'n'}], remove: [X-Drop]}
        - type: ResponseHeaderModifier
          responseHeaderModifier: {set: [{name: X-Resp, value: '1'}], remove: [X-Upstream]}
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {type: Exact, value: /old}}]
      filters: [{type: RequestRedirect, requestRedirect: {hostname: new.example, path: {type: ReplaceFullPath, replaceFullPath: /new}, statusCode: 301}}]
    - matches: [{path: {value: /rewrite}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]
      backendRefs: [{name: svc-b, port: 80}]
    - matches: [{path: {value: /full}}]
      filters:
        - {type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /landing}}}
        - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-Upstream, value: appended}, {name: X-Fresh, value: 'f'}]}}
      backendRefs: [{name: svc-b, port: 80}]
    - matches: [{path: {value: /host}}]
      filters: [{type: URLRewrite, urlRewrite: {hostname: backend.internal}}]
      backendRefs: [{name: svc-c, port: 80}]
    - matches: [{path: {value: /moved}}]
      filters: [{type: RequestRedirect, requestRedirect: {hostname: new.example}}]
`,
    ),
  );
  await applyManifest(
    w.cp,
    route(
      'any-host-redirect',
      `  hostnames: ['*.wild.example']
  rules:
    - filters: [{type: RequestRedirect, requestRedirect: {statusCode: 308}}]
`,
    ),
  );
  const h = await waitServed(
    'filters.example',
    '/headers/x',
    { upstream: 'a' },
    { headers: { 'x-drop': 'gone', 'x-list': 'a' } },
  );
  assert.ok(h.sent, 'the echo says what it was sent');
  assert.equal(h.sent['x-added'], 'yes');
  assert.equal(h.sent['x-drop'], undefined);
  assert.equal(h.sent['x-list'], 'a,b', "add: appended to the client's value");
  assert.equal(h.sent['x-new'], 'n', 'add: set when the client sent none');
  assert.equal(h.headers['x-resp'], '1');
  assert.equal(h.headers['x-upstream'], undefined);

  const r = await waitServed('filters.example', '/old', { status: 301 });
  assert.equal(r.headers.location, `http://new.example:${port}/new`);
  // The request's path kept; with no hostname on a route of several hosts, the request's Host.
  const moved = await waitServed('filters.example', '/moved/deep/1', { status: 302 });
  assert.equal(moved.headers.location, `http://new.example:${port}/moved/deep/1`);
  const wild = await waitServed('shop.wild.example', '/any/where', { status: 308 });
  assert.equal(wild.headers.location, 'http://shop.wild.example/any/where');

  const rw = await waitServed('filters.example', '/rewrite/items?q=1', { upstream: 'b' });
  assert.equal(rw.path, '/v2/items');
  assert.equal(rw.query, '?q=1');
  const full = await call('filters.example', '/full/deep/path');
  assert.equal(full.path, '/landing');
  assert.equal(full.headers['x-upstream'], 'b, appended', "add: after the upstream's own value");
  assert.equal(full.headers['x-fresh'], 'f', 'add: set when the upstream sent none');
  const host = await waitServed('filters.example', '/host/x', { upstream: 'c' });
  assert.equal(host.sent?.host, 'backend.internal', 'URLRewrite hostname: the Host the backend gets');
  assert.equal(host.path, '/host/x');
});

test('timeouts: a backend later than timeouts.request answers 504; within it, 200', async () => {
  await applyManifest(
    w.cp,
    route(
      'timeouts',
      `  hostnames: [timeouts.example]
  rules:
    - matches: [{path: {value: /delay}}]
      timeouts: {request: 300ms}
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {value: /delay-ok}}]
      timeouts: {request: 3s}
      backendRefs: [{name: svc-a, port: 80}]
`,
    ),
  );
  const started = Date.now();
  await waitServed('timeouts.example', '/delay/1', { status: 504 });
  assert.ok(Date.now() - started < 30_000);
  const t0 = Date.now();
  assert.equal((await call('timeouts.example', '/delay/2')).status, 504);
  assert.ok(Date.now() - t0 < 900, `504 after ${String(Date.now() - t0)} ms, before the backend's 1 s`);
  assert.equal((await call('timeouts.example', '/delay-ok/1')).status, 200);
});

test("RequestMirror: the mirror backend gets a copy, the client the main backend's answer", async () => {
  await applyManifest(
    w.cp,
    route(
      'mirror',
      `  hostnames: [mirror.example]
  rules:
    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-b, port: 80}}}]
      backendRefs: [{name: svc-a, port: 80}]
`,
    ),
  );
  const r = await waitServed('mirror.example', '/mirrored/1?q=2', { upstream: 'a' });
  assert.equal(r.path, '/mirrored/1');
  await waitFor('the mirror got its copy', () =>
    Promise.resolve(upstreams.b.seen.includes('/mirrored/1?q=2') ? true : undefined),
  );
  assert.equal(
    upstreams.a.seen.filter((u) => u === '/mirrored/1?q=2').length,
    upstreams.b.seen.filter((u) => u === '/mirrored/1?q=2').length,
    'one copy per request',
  );
});

test('status: what svc cannot serve is refused (UnsupportedValue) and not served; missing and forbidden backends named; a backend appProtocol the gateway cannot speak is UnsupportedProtocol (500)', async () => {
  await applyManifest(
    w.cp,
    route(
      'extension',
      `  hostnames: [extension.example]
  rules:
    - filters: [{type: ExtensionRef, extensionRef: {group: example.com, kind: Thing, name: x}}]
      backendRefs: [{name: svc-a, port: 80}]
`,
    ),
  );
  const refused = await routeConditions('extension', (c) => condition(c, 'Accepted')?.status === 'False');
  assert.equal(condition(refused, 'Accepted')?.reason, 'UnsupportedValue');
  assert.match(
    condition(refused, 'Accepted')?.message ?? '',
    /spec\.rules\[0\]\.filters\[0\]\.type: Unsupported value: "ExtensionRef"/,
  );
  assert.equal((await call('extension.example', '/')).status, 404, 'a refused route is not served at all');

  await applyManifest(
    w.cp,
    route(
      'refs',
      `  hostnames: [refs.example]
  rules:
    - matches: [{path: {value: /missing}}]
      backendRefs: [{name: nobody, port: 80}]
    - matches: [{path: {value: /cross}}]
      backendRefs: [{name: shared, namespace: ${OTHER}, port: 80}]
`,
    ),
  );
  const notFound = await routeConditions('refs', (c) => condition(c, 'ResolvedRefs')?.status === 'False');
  assert.equal(condition(notFound, 'Accepted')?.status, 'True');
  assert.equal(condition(notFound, 'ResolvedRefs')?.reason, 'BackendNotFound');
  assert.match(
    condition(notFound, 'ResolvedRefs')?.message ?? '',
    /RefNotPermitted|Forbidden: no ReferenceGrant/,
  );
  // A rule without a usable backend answers 500, as the spec says.
  await waitServed('refs.example', '/missing', { status: 500 });
  await waitServed('refs.example', '/cross', { status: 500 });

  // A backend port whose appProtocol the gateway cannot speak (HTTP/2): UnsupportedProtocol, 500;
  // the same port as kubernetes.io/ws (WebSocket over HTTP/1.1) is served.
  const appProtocolService = (appProtocol: string): string =>
    endpointService(NS, 'svc-proto', HOST, upstreams.a.port, { appProtocol });
  await applyManifest(w.cp, appProtocolService('kubernetes.io/h2c'));
  await applyManifest(
    w.cp,
    route('proto', `  hostnames: [proto.example]\n  rules: [{backendRefs: [{name: svc-proto, port: 80}]}]\n`),
  );
  const h2c = await routeConditions('proto', (c) => condition(c, 'ResolvedRefs')?.status === 'False');
  assert.equal(condition(h2c, 'Accepted')?.status, 'True');
  assert.equal(condition(h2c, 'ResolvedRefs')?.reason, 'UnsupportedProtocol');
  assert.match(
    condition(h2c, 'ResolvedRefs')?.message ?? '',
    /Service gwapi\/svc-proto port 80 has appProtocol "kubernetes\.io\/h2c"/,
  );
  await waitServed('proto.example', '/', { status: 500 });
  await applyManifest(w.cp, appProtocolService('kubernetes.io/ws'));
  await waitServed('proto.example', '/', { upstream: 'a' });
  const ws = await routeConditions('proto', (c) => condition(c, 'ResolvedRefs')?.status === 'True');
  assert.equal(condition(ws, 'ResolvedRefs')?.reason, 'ResolvedRefs');

  // The grant makes the cross-namespace backend usable.
  await applyManifest(
    w.cp,
    `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: let-gwapi, namespace: ${OTHER}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${NS}}]
  to: [{group: '', kind: Service, name: shared}]
`,
  );
  await waitServed('refs.example', '/cross', { upstream: 'c' });

  // A route of another namespace: the listener allows the Gateway's own only.
  await applyManifest(
    w.cp,
    route('elsewhere', `  rules: [{backendRefs: [{name: shared, port: 80}]}]\n`, OTHER),
  );
  const other = await routeConditions(
    'elsewhere',
    (c) => condition(c, 'Accepted')?.status === 'False',
    OTHER,
  );
  assert.equal(condition(other, 'Accepted')?.reason, 'NotAllowedByListeners');
  // Refused by every listener, its backends are still checked: ResolvedRefs names the missing one.
  await applyManifest(
    w.cp,
    route('elsewhere-missing', `  rules: [{backendRefs: [{name: nobody, port: 80}]}]\n`, OTHER),
  );
  const missing = await routeConditions(
    'elsewhere-missing',
    (c) => condition(c, 'Accepted')?.status === 'False',
    OTHER,
  );
  assert.equal(condition(missing, 'Accepted')?.reason, 'NotAllowedByListeners');
  assert.equal(condition(missing, 'ResolvedRefs')?.status, 'False');
  assert.equal(condition(missing, 'ResolvedRefs')?.reason, 'BackendNotFound');

  // Detached from edge (it names another Gateway now): svc's parent status for edge goes away.
  await applyManifest(
    w.cp,
    `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mirror, namespace: ${NS}}
spec:
  parentRefs: [{name: nowhere}]
  rules: [{backendRefs: [{name: svc-a, port: 80}]}]
`,
  );
  await waitFor('no parent status of edge on the detached route', async () => {
    const r = await getJson<{ status?: { parents?: { parentRef: { name: string } }[] } }>(
      'httproutes.gateway.networking.k8s.io',
      'mirror',
      NS,
    );
    return (r.status?.parents ?? []).some((p) => p.parentRef.name === 'edge') ? undefined : true;
  });
});

test('listener status: routes attached to a listener whose certificate is missing are counted; a listener of only unknown kinds supports none', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: certs, namespace: ${NS}}
spec:
  gatewayClassName: svc
  listeners:
    - {name: https, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: no-such-secret}]}}
    - {name: kinds, port: 8081, protocol: HTTP, allowedRoutes: {kinds: [{kind: InvalidRoute}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: on-certs, namespace: ${NS}}
spec:
  parentRefs: [{name: certs, sectionName: https}]
  rules: [{backendRefs: [{name: svc-a, port: 80}]}]
`,
  );
  interface Listener {
    name: string;
    attachedRoutes: number;
    supportedKinds: unknown[];
    conditions: Cond[];
  }
  const listeners = await waitFor('Gateway certs listener status', async () => {
    const g = await getJson<{ status?: { listeners?: Listener[] } }>(
      'gateways.gateway.networking.k8s.io',
      'certs',
      NS,
    );
    const https = g.status?.listeners?.find((l) => l.name === 'https');
    return https?.attachedRoutes === 1 ? g.status?.listeners : undefined;
  });
  const https = listeners.find((l) => l.name === 'https');
  assert.equal(condition(https?.conditions, 'ResolvedRefs')?.reason, 'InvalidCertificateRef');
  assert.equal(condition(https?.conditions, 'Programmed')?.status, 'False');
  const kinds = listeners.find((l) => l.name === 'kinds');
  assert.ok(kinds);
  assert.deepEqual(kinds.supportedKinds, []);
  assert.equal(condition(kinds.conditions, 'ResolvedRefs')?.reason, 'InvalidRouteKinds');
  await w.cp.kubectl(['delete', 'gateways.gateway.networking.k8s.io', 'certs', '-n', NS, '--wait=false']);
});

test('an HTTP and an HTTPS listener on one port: both Conflicted ProtocolConflict, not accepted, not programmed; no route attaches, no API is generated', async () => {
  const certificate = await makeCert('clash.example');
  await applyManifest(
    w.cp,
    `${tlsSecretManifest(NS, 'clash-cert', certificate)}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: clash, namespace: ${NS}}
spec:
  gatewayClassName: svc
  listeners:
    - {name: clear, port: 8090, protocol: HTTP}
    - {name: secure, port: 8090, protocol: HTTPS, tls: {certificateRefs: [{name: clash-cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: on-clash, namespace: ${NS}}
spec:
  parentRefs: [{name: clash}]
  rules: [{backendRefs: [{name: svc-a, port: 80}]}]
`,
  );
  interface Listener {
    name: string;
    attachedRoutes: number;
    conditions: Cond[];
  }
  const g = await waitFor('Gateway clash status', async () => {
    const got = await getJson<{ status?: { conditions?: Cond[]; listeners?: Listener[] } }>(
      'gateways.gateway.networking.k8s.io',
      'clash',
      NS,
    );
    const listeners = got.status?.listeners ?? [];
    return listeners.length === 2 && listeners.every((l) => condition(l.conditions, 'Programmed'))
      ? got.status
      : undefined;
  });
  for (const l of g.listeners ?? []) {
    assert.equal(condition(l.conditions, 'Conflicted')?.status, 'True', l.name);
    assert.equal(condition(l.conditions, 'Conflicted')?.reason, 'ProtocolConflict', l.name);
    assert.equal(condition(l.conditions, 'Accepted')?.status, 'False', l.name);
    assert.equal(condition(l.conditions, 'Programmed')?.status, 'False', l.name);
    assert.equal(l.attachedRoutes, 0, l.name);
  }
  assert.equal(condition(g.conditions, 'Accepted')?.status, 'False');
  assert.equal(condition(g.conditions, 'Accepted')?.reason, 'ListenersNotValid');
  assert.match(
    condition(g.conditions, 'Accepted')?.message ?? '',
    /conflicted: clear \(ProtocolConflict\), secure \(ProtocolConflict\)/,
  );
  const parent = await waitFor('HTTPRoute on-clash status', async () => {
    const r = await getJson<{
      status?: { parents?: { parentRef: { name: string }; conditions: Cond[] }[] };
    }>('httproutes.gateway.networking.k8s.io', 'on-clash', NS);
    return r.status?.parents?.find((p) => p.parentRef.name === 'clash');
  });
  assert.equal(condition(parent.conditions, 'Accepted')?.reason, 'NotAllowedByListeners');
  const apis = await generatedApis(w.cp, NS, 'clash', 'name');
  assert.equal(apis.trim(), '', 'no API is generated for conflicted listeners');
  await w.cp.kubectl(['delete', 'gateways.gateway.networking.k8s.io', 'clash', '-n', NS, '--wait=false']);
});

test("a listener's certificate Secret of another namespace: served as a ReferenceGrant allows it (every Secret, or by name), refused for another name, withdrawn with the grant", async () => {
  const SECURE = 'secure.example';
  const tlsPort = await freePort();
  const first = await makeCert(SECURE);
  const rotated = await makeCert(SECURE);
  interface Listener {
    name: string;
    attachedRoutes: number;
    conditions: Cond[];
  }
  /** The listener's status once `ok` holds. */
  const listenerWhen = (what: string, ok: (l: Listener) => boolean): Promise<Listener> =>
    waitFor(`Gateway vault listener ${what}`, async () => {
      const g = await getJson<{ status?: { listeners?: Listener[] } }>(
        'gateways.gateway.networking.k8s.io',
        'vault',
        NS,
      );
      const l = g.status?.listeners?.find((x) => x.name === 'https');
      return l && ok(l) ? l : undefined;
    });
  const refNotPermitted = (l: Listener): boolean =>
    condition(l.conditions, 'ResolvedRefs')?.reason === 'RefNotPermitted';
  const programmed = (l: Listener): boolean =>
    condition(l.conditions, 'ResolvedRefs')?.status === 'True' &&
    condition(l.conditions, 'Programmed')?.status === 'True';
  /** The certificate the listener presents for SNI SECURE, and who answered; undefined when refused. */
  const served = async (): Promise<{ fingerprint: string; upstream?: string } | undefined> => {
    try {
      const r = await tlsGet(tlsPort, '/', { servername: SECURE });
      return {
        fingerprint: r.serverFingerprint,
        ...(r.json?.upstream === undefined ? {} : { upstream: r.json.upstream }),
      };
    } catch {
      return undefined; // No listener on the port, or the handshake refused: not served.
    }
  };
  const waitServedWith = (fingerprint: string): Promise<unknown> =>
    waitFor(`${SECURE} served with ${fingerprint.slice(0, 12)}`, async () => {
      const r = await served();
      return r?.fingerprint === fingerprint && r.upstream === 'a' ? r : undefined;
    });
  const waitWithdrawn = (): Promise<unknown> =>
    waitFor(`${SECURE} no longer served with the granted certificate`, async () => {
      const r = await served();
      return r === undefined || (r.fingerprint !== first.fingerprint && r.fingerprint !== rotated.fingerprint)
        ? true
        : undefined;
    });
  const grant = (to: string): string => `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: vault-certs, namespace: ${OTHER}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: ${NS}}]
  to: [${to}]
`;

  // The Secret is in OTHER; no grant yet: RefNotPermitted, nothing served.
  await applyManifest(
    w.cp,
    `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: vault, namespace: ${NS}}
spec:
  gatewayClassName: svc
  listeners:
    - name: https
      port: ${tlsPort}
      protocol: HTTPS
      hostname: ${SECURE}
      tls: {certificateRefs: [{name: vault-tls, namespace: ${OTHER}}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: on-vault, namespace: ${NS}}
spec:
  parentRefs: [{name: vault}]
  rules: [{backendRefs: [{name: svc-a, port: 80}]}]
`,
  );
  const denied = await listenerWhen('RefNotPermitted', refNotPermitted);
  assert.match(
    condition(denied.conditions, 'ResolvedRefs')?.message ?? '',
    new RegExp(`no ReferenceGrant in namespace ${OTHER} lets Gateways of ${NS} name Secret vault-tls`),
  );
  assert.equal(condition(denied.conditions, 'Programmed')?.status, 'False');
  assert.equal(await served(), undefined, 'nothing is served without the grant');

  // Every Secret of OTHER granted, before the Secret exists: InvalidCertificateRef until it appears.
  await applyManifest(w.cp, grant(`{group: '', kind: Secret}`));
  const missing = await listenerWhen(
    'InvalidCertificateRef',
    (l) => condition(l.conditions, 'ResolvedRefs')?.reason === 'InvalidCertificateRef',
  );
  assert.match(condition(missing.conditions, 'ResolvedRefs')?.message ?? '', /Not found: Secret/);
  await applyManifest(w.cp, tlsSecretManifest(OTHER, 'vault-tls', first));
  await listenerWhen('Programmed', programmed);
  await waitServedWith(first.fingerprint);

  // The Secret rotated: the listener serves the new certificate.
  await applyManifest(w.cp, tlsSecretManifest(OTHER, 'vault-tls', rotated));
  await waitServedWith(rotated.fingerprint);

  // A grant of another Secret only: refused again, the certificate withdrawn.
  await applyManifest(w.cp, grant(`{group: '', kind: Secret, name: other-tls}`));
  await listenerWhen('RefNotPermitted for another name', refNotPermitted);
  await waitWithdrawn();

  // That Secret granted by name: served again.
  await applyManifest(w.cp, grant(`{group: '', kind: Secret, name: vault-tls}`));
  await listenerWhen('Programmed by name', programmed);
  await waitServedWith(rotated.fingerprint);

  // The grant deleted: refused, withdrawn.
  await w.cp.kubectl(['delete', 'referencegrants.gateway.networking.k8s.io', 'vault-certs', '-n', OTHER]);
  await listenerWhen('RefNotPermitted once the grant is gone', refNotPermitted);
  await waitWithdrawn();
  await w.cp.kubectl(['delete', 'gateways.gateway.networking.k8s.io', 'vault', '-n', NS, '--wait=false']);
});

test('deleting the Gateway deletes its generated APIs: nothing is served', async () => {
  await waitServed('shop.example', '/exact', { upstream: 'a' });
  await w.cp.kubectl([
    'delete',
    'gateways.gateway.networking.k8s.io',
    'edge',
    '-n',
    NS,
    '--wait=true',
    '--timeout=60s',
  ]);
  await waitFor('no generated ApiDefinitions', async () => {
    const out = await generatedApis(w.cp, NS, 'edge', 'name');
    return out.trim() === '' ? true : undefined;
  });
  // Not served any more: 404, or the listener's port closed once no API uses it.
  await waitFor('shop.example/exact no longer served', async () => {
    try {
      return (await call('shop.example', '/exact')).status === 404 ? true : undefined;
    } catch {
      return true;
    }
  });
});
