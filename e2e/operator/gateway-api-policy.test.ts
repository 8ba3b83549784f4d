/**
 * SvcRoutePolicy end to end (docs/gateway-api.md, "Policies on routes"): a real control plane with
 * the chart's CRDs and the Gateway API CRDs, a gateway, the operator as a process, and an echo
 * upstream behind a ClusterIP Service whose EndpointSlice is written by hand (as in
 * gateway-api.test.ts). The Gateway's listener is on the gateway's own port, so the generated
 * APIs are the ones `kubectl svc explain` asks about. What a client observes: 401 without a key
 * and 200 with a key created through the gateway's /svc/keys; 403 from a Gateway-level block
 * list; 429 past a route's rate limit; and the policy's status.ancestors (Accepted, Conflicted,
 * TargetNotFound). A route whose rules dispatch by method (a dispatcher API handing requests to
 * internal per-rule APIs) explains as a real request is answered: the hop followed, 401 by the
 * rule's auth-token. Keys' quotas and rate limits on routes: a SecurityPolicy whose access rights
 * name an HTTPRoute (the operator expands it to the generated APIs serving the route) given to an
 * ApiKey, applied before the route exists: they wait, then the key gets 200, 200, 403 quota
 * exceeded; on a route dispatching by method, the key passes on both rules' APIs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import type { ExplanationView } from '../../operator/cli/explain-print.ts';
import {
  SVC_GATEWAY_CLASS,
  endpointService,
  generatedApis,
  hostAddress,
  httpGateway,
} from '../harness/gateway-api.ts';
import {
  httpRequest,
  startEchoUpstream,
  waitFor,
  type EchoUpstream,
  type OperatorProc,
} from '../harness/processes.ts';
import {
  admin,
  applyManifest,
  readyOf,
  startGatewayApiSuite,
  startWorldOperator,
  stopGatewaySuite,
  waitForStatus,
  type GatewaySuite,
} from './helpers.ts';
import { secretValue } from './api-key-fixtures.ts';

const NS = 'gwpol';
const ORG = 'e2e-org';
const KEY = 'e2e-route-policy-key';
const PLUGIN = new URL('../../operator/cli/kubectl-svc.ts', import.meta.url).pathname;

let w: GatewaySuite;
let operator: OperatorProc;
let upstream: EchoUpstream;
const HOST = hostAddress();

/** An HTTPRoute `name` of the Gateway edge for host `<name>.example`, its rules' YAML (list items) given. */
const httpRoute = (name: string, rules: string): string => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: ${NS}}
spec:
  parentRefs: [{name: edge}]
  hostnames: [${name}.example]
  rules:
${rules}`;

/** The rules of a route sending all to svc-a. */
const TO_A = '    - backendRefs: [{name: svc-a, port: 80}]\n';

before(async () => {
  w = await startGatewayApiSuite({ name: 'gwpol', namespaces: [NS] });
  upstream = await startEchoUpstream('a', { host: HOST });
  operator = await startWorldOperator(w, {
    env: { WATCH_NAMESPACE: NS, SVC_INGRESS_ADDRESS: '127.0.0.1' },
  });
  await applyManifest(
    w.cp,
    `${endpointService(NS, 'svc-a', HOST, upstream.port)}---
${SVC_GATEWAY_CLASS}---
${httpGateway(NS, 'edge', w.gw.port)}---
${['shop', 'open', 'limited']
  .map((name) =>
    httpRoute(
      name,
      `    - matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{name: svc-a, port: 80}]
`,
    ),
  )
  .join('---\n')}`,
  );
});

after(() => stopGatewaySuite(w, operator, upstream));

/** A request through the gateway with a Host header: its status and whether the upstream answered. */
async function call(host: string, path: string, headers: Record<string, string> = {}) {
  const r = await httpRequest(`${w.gw.url}${path}`, { headers: { host, ...headers } });
  return { status: r.status, body: r.body, upstream: r.body.includes('"upstream":"a"') };
}

/** Waits until a request gets `status`. */
async function waitStatus(host: string, path: string, status: number, headers: Record<string, string> = {}) {
  return waitFor(`${host}${path} -> ${String(status)}`, async () => {
    const r = await call(host, path, headers);
    return r.status === status ? r : undefined;
  });
}

const policy = (name: string, target: string, spec: string, kind = 'HTTPRoute'): string =>
  `apiVersion: svc.svc.io/v1alpha1
kind: SvcRoutePolicy
metadata: {name: ${name}, namespace: ${NS}}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: ${kind}, name: ${target}}]
${spec}`;

/** An HTTPRoute of the test's Gateway for `host`, its rules' YAML given, and a SvcRoutePolicy asking for keys. */
const keyedRoute = (name: string, rules: string): string =>
  `${httpRoute(name, rules)}---
${policy(`${name}-auth`, name, '  use_standard_auth: true\n')}`;

interface Ancestor {
  ancestorRef: { kind: string; name: string };
  controllerName: string;
  conditions: { type: string; status: string; reason: string; message: string }[];
}

/** A policy's ancestors, once `ok` holds of them. */
async function ancestors(name: string, ok: (a: readonly Ancestor[]) => boolean): Promise<Ancestor[]> {
  return waitFor(`SvcRoutePolicy ${name} ancestors`, async () => {
    const out = await w.cp.kubectl(['get', 'svcroutepolicy', name, '-n', NS, '-o', 'json']);
    const list = (JSON.parse(out.stdout) as { status?: { ancestors?: Ancestor[] } }).status?.ancestors;
    return list !== undefined && ok(list) ? list : undefined;
  });
}
const reasonOf = (a: Ancestor | undefined) => a?.conditions.find((c) => c.type === 'Accepted')?.reason;

interface GeneratedApi {
  metadata: { name: string; generation: number };
  spec: { api_id: string; name: string };
  status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] };
}

/** The generated API whose name says it carries `policyName`, once served at its generation. */
async function servedApiWith(policyName: string): Promise<GeneratedApi> {
  return waitFor(`a generated API with SvcRoutePolicy ${policyName}, Programmed`, async () => {
    const out = await generatedApis(w.cp, NS, 'edge', 'json');
    const api = (JSON.parse(out) as { items: GeneratedApi[] }).items.find((a) =>
      a.spec.name.endsWith(`with SvcRoutePolicy ${NS}/${policyName}`),
    );
    const p = api?.status?.conditions?.find((c) => c.type === 'Programmed');
    return api && p?.status === 'True' && p.observedGeneration === api.metadata.generation ? api : undefined;
  });
}

test('a policy requiring an auth token: 401 without a key, 200 with a key created through /svc/keys; kubectl svc explain names it', async () => {
  await waitStatus('shop.example', '/orders', 200);
  await applyManifest(w.cp, policy('shop-auth', 'shop', '  use_standard_auth: true\n'));
  const [a] = await ancestors('shop-auth', (l) => reasonOf(l[0]) === 'Accepted');
  assert.ok(a);
  assert.deepEqual(a.ancestorRef, {
    group: 'gateway.networking.k8s.io',
    kind: 'Gateway',
    namespace: NS,
    name: 'edge',
  });
  assert.equal(a.controllerName, 'svc.io/gateway-controller');

  const unauthorized = await waitStatus('shop.example', '/orders', 401);
  assert.equal(unauthorized.upstream, false, 'the upstream is not reached');
  const api = await servedApiWith('shop-auth');
  const id = api.spec.api_id;
  const key = await admin(w.gw, 'POST', `/svc/keys/${KEY}`, {
    org_id: ORG,
    access_rights: { [id]: { api_id: id, api_name: api.spec.name, versions: ['Default'] } },
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  const ok = await waitStatus('shop.example', '/orders', 200, { authorization: KEY });
  assert.equal(ok.upstream, true);
  assert.equal((await call('shop.example', '/orders', { authorization: 'not-a-key' })).status, 403);

  // The plugin asks the gateway: the API matched names the policy, auth-token refuses.
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      PLUGIN,
      [
        'explain',
        'GET',
        'http://shop.example/orders',
        '--gateway',
        w.gw.url,
        '--secret-env',
        'PLUGIN_SECRET',
        '-o',
        'json',
      ],
      { env: { PATH: process.env.PATH ?? '', KUBECONFIG: w.cp.kubeconfig, PLUGIN_SECRET: w.gw.secret } },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : 1, stdout, stderr });
      },
    );
  });
  assert.equal(r.code, 0, r.stderr);
  const x = JSON.parse(r.stdout) as ExplanationView;
  assert.ok(x.matched);
  assert.equal(x.matched.api_id, id);
  assert.match(x.matched.name, new RegExp(`with SvcRoutePolicy ${NS}/shop-auth$`));
  assert.equal(x.answer.status, 401);
  assert.deepEqual(
    x.steps.filter((s) => s.decision !== 'passed').map((s) => s.middleware),
    ['auth-token'],
  );
});

/** The plugin's explain of `GET url` against the gateway (`-o json` unless `table`). */
async function explainGet(
  url: string,
  headers: Record<string, string> = {},
  table = false,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ['explain', 'GET', url, '--gateway', w.gw.url, '--secret-env', 'PLUGIN_SECRET'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (!table) args.push('-o', 'json');
  return new Promise((resolve) => {
    execFile(
      PLUGIN,
      args,
      { env: { PATH: process.env.PATH ?? '', KUBECONFIG: w.cp.kubeconfig, PLUGIN_SECRET: w.gw.secret } },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : 1, stdout, stderr });
      },
    );
  });
}

test('a method-dispatched route (GET and POST rules on one path) under a policy with use_standard_auth: explain follows the dispatcher to the rule API, 401 by auth-token as a real request', async () => {
  await applyManifest(
    w.cp,
    keyedRoute(
      'dispatch',
      `    - matches: [{path: {type: PathPrefix, value: /items}, method: GET}]
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /items}, method: POST}]
      backendRefs: [{name: svc-a, port: 80}]
`,
    ),
  );
  await ancestors('dispatch-auth', (l) => reasonOf(l[0]) === 'Accepted');
  await servedApiWith('dispatch-auth');
  const real = await waitStatus('dispatch.example', '/items/1', 401);
  assert.equal(real.upstream, false);
  const post = await httpRequest(`${w.gw.url}/items/1`, {
    method: 'POST',
    headers: { host: 'dispatch.example' },
  });
  assert.equal(post.status, 401);

  const r = await explainGet('http://dispatch.example/items/1');
  assert.equal(r.code, 0, r.stderr);
  const x = JSON.parse(r.stdout) as ExplanationView;
  assert.equal(x.answer.status, real.status);
  assert.equal(x.answer.body, real.body);
  assert.equal(x.answer.proxied_to, undefined);
  const refused = x.steps.filter((s) => s.decision !== 'passed');
  assert.deepEqual(
    refused.map((s) => [s.middleware, s.status]),
    [['auth-token', 401]],
  );
  // Both APIs: the dispatcher the request matched, and the GET rule's API it is handed on to,
  // whose name carries the policy; the hop is a step between them, the refusal is the rule's.
  const dispatcher = x.matched?.api_id;
  assert.ok(dispatcher !== undefined);
  assert.equal(x.hops?.length, 1);
  const hop = x.hops[0];
  assert.ok(hop);
  assert.equal(hop.from, dispatcher);
  assert.match(hop.target, /^GET svc:\/\/[^/]+\/items\/1$/);
  assert.equal(hop.path, '/items/1');
  assert.match(hop.matched.name, new RegExp(`rules\\[0\\].* with SvcRoutePolicy ${NS}/dispatch-auth$`));
  assert.ok(x.steps.some((s) => s.middleware === 'internal-target' && s.api_id === dispatcher));
  assert.equal(refused[0]?.api_id, hop.matched.api_id);

  const table = await explainGet('http://dispatch.example/items/1', {}, true);
  assert.equal(table.code, 0, table.stderr);
  assert.match(
    table.stdout,
    new RegExp(`^Hop 1: +GET svc://\\S+ -> .* with SvcRoutePolicy ${NS}/dispatch-auth \\(`, 'm'),
  );
  assert.match(table.stdout, /^upstream +internal-target +passed /m);
  assert.match(
    table.stdout,
    new RegExp(`^By: +auth-token \\(authentication\\) of .* with SvcRoutePolicy ${NS}/dispatch-auth`, 'm'),
  );

  // With a key to the rule's API: 200 from the upstream, and explain says the upstream.
  const id = hop.matched.api_id;
  const key = await admin(w.gw, 'POST', '/svc/keys/e2e-dispatch-key', {
    org_id: ORG,
    access_rights: { [id]: { api_id: id, api_name: hop.matched.name, versions: ['Default'] } },
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  const ok = await waitStatus('dispatch.example', '/items/1', 200, { authorization: 'e2e-dispatch-key' });
  assert.equal(ok.upstream, true);
  assert.equal((JSON.parse(ok.body) as { path: string }).path, '/items/1');
  const passed = await explainGet('http://dispatch.example/items/1', { authorization: 'e2e-dispatch-key' });
  assert.equal(passed.code, 0, passed.stderr);
  const y = JSON.parse(passed.stdout) as ExplanationView;
  assert.equal(y.answer.status, 200);
  assert.match(y.answer.proxied_to ?? '', new RegExp(`^GET http://[^/]+:${String(upstream.port)}/items/1$`));
});

test('a newer policy on the same route is Conflicted naming the older one, which still applies', async () => {
  await applyManifest(w.cp, policy('shop-open', 'shop', '  use_keyless: true\n'));
  const [a] = await ancestors('shop-open', (l) => l.length > 0);
  assert.equal(reasonOf(a), 'Conflicted');
  assert.match(a?.conditions[0]?.message ?? '', /older SvcRoutePolicy, shop-auth/);
  // The operator's policy cache holds shop-open now (its status came from it): a route served
  // after this is from a Gateway reconcile that saw it, and shop still asks for a key.
  await applyManifest(w.cp, httpRoute('probe', TO_A));
  await waitStatus('probe.example', '/', 200);
  assert.equal((await call('shop.example', '/orders')).status, 401);
});

test('a route-level rate limit: 429 after the limit; a Gateway-level block list: 403 on routes without their own policy', async () => {
  await waitStatus('limited.example', '/', 200);
  await applyManifest(w.cp, policy('limited-rate', 'limited', '  global_rate_limit: {rate: 3, per: 60}\n'));
  await ancestors('limited-rate', (l) => reasonOf(l[0]) === 'Accepted');
  await servedApiWith('limited-rate');
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await call('limited.example', '/x')).status);
  assert.deepEqual(statuses, [200, 200, 200, 429, 429]);

  await waitStatus('open.example', '/', 200);
  await applyManifest(
    w.cp,
    policy(
      'edge-block',
      'edge',
      '  enable_ip_blacklisting: true\n  blacklisted_ips: [127.0.0.1, "::1", "::ffff:127.0.0.1"]\n',
      'Gateway',
    ),
  );
  const blocked = await waitStatus('open.example', '/', 403);
  assert.equal(blocked.upstream, false);
  const [a] = await ancestors('edge-block', (l) => reasonOf(l[0]) === 'Accepted');
  assert.equal(a?.ancestorRef.kind, 'Gateway');
  // The route-level policies win, whole: shop still asks for its key and serves it.
  assert.equal((await call('shop.example', '/orders', { authorization: KEY })).status, 200);
});

test('a policy whose route is not there: TargetNotFound; the route created: Accepted', async () => {
  await applyManifest(w.cp, policy('later', 'later', '  use_standard_auth: true\n'));
  const [a] = await ancestors('later', (l) => l.length > 0);
  assert.equal(reasonOf(a), 'TargetNotFound');
  assert.equal(a?.ancestorRef.kind, 'HTTPRoute');
  await applyManifest(w.cp, httpRoute('later', TO_A));
  await ancestors('later', (l) => reasonOf(l[0]) === 'Accepted' && l.length === 1);
  await waitStatus('later.example', '/', 401);
});

/** Waits until a resource's Ready condition has `reason` (and `message`, when given). */
async function waitReason(kind: string, name: string, reason: string, message?: RegExp) {
  const st = await waitForStatus(w.cp, { kind, ns: NS, name }, `Ready ${reason}`, (s) => {
    const r = readyOf(s);
    return r?.reason === reason && (message === undefined || message.test(r.message ?? ''));
  });
  return readyOf(st);
}

test('a SecurityPolicy naming an HTTPRoute gives a key its quota on the route: applied key, policy, route, they wait, then 200, 200, 403 quota exceeded', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: route-key, namespace: ${NS}}
spec:
  policies: [route-plan]
`,
  );
  await waitReason('apikey', 'route-key', 'PolicyNotFound');
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: route-plan, namespace: ${NS}}
spec:
  name: route-plan
  rate: 100
  per: 60
  quota_max: 2
  quota_renewal_rate: 86400
  access_rights_array: [{kind: HTTPRoute, name: keyed}]
`,
  );
  const waiting = await waitReason(
    'securitypolicy',
    'route-plan',
    'ApiNotFound',
    new RegExp(`HTTPRoute ${NS}/keyed, which no generated ApiDefinition serves yet`),
  );
  assert.equal(waiting?.status, 'False');
  // The key waits for its policy, which waits for the route.
  await waitReason('apikey', 'route-key', 'PolicyNotReady');

  await applyManifest(w.cp, keyedRoute('keyed', TO_A));
  await servedApiWith('keyed-auth');
  const policyStatus = await waitForStatus(
    w.cp,
    { kind: 'securitypolicy', ns: NS, name: 'route-plan' },
    'Ready',
    (st) => readyOf(st)?.status === 'True',
  );
  const linked = (policyStatus.linked_apis ?? []) as { kind: string; name: string }[];
  assert.equal(linked.length, 1, JSON.stringify(linked));
  assert.match(linked[0]?.name ?? '', /^edge-[0-9a-f]{12}$/);
  await waitForStatus(
    w.cp,
    { kind: 'apikey', ns: NS, name: 'route-key' },
    'Ready',
    (st) => readyOf(st)?.status === 'True',
  );
  const value = (await secretValue(w.cp, NS, 'route-key')) ?? '';
  assert.ok(value.length >= 32);

  await waitStatus('keyed.example', '/a', 401);
  // The key's policy reaches the gateway's cache with the key: wait for its first 200.
  const first = await waitStatus('keyed.example', '/a', 200, { authorization: value });
  assert.equal(first.upstream, true);
  const second = await call('keyed.example', '/b', { authorization: value });
  assert.equal(second.status, 200);
  const third = await call('keyed.example', '/c', { authorization: value });
  assert.equal(third.status, 403);
  assert.match(third.body, /Quota exceeded/);
  assert.equal(third.upstream, false);
  // Another route under keys: this key has no access rights there.
  const other = await call('shop.example', '/orders', { authorization: value });
  assert.equal(other.status, 403);
  assert.doesNotMatch(other.body, /Quota exceeded/);
});

test('a key for an HTTPRoute dispatching by method passes on both rules (each rule API carries its auth)', async () => {
  await applyManifest(
    w.cp,
    `${keyedRoute(
      'methods',
      `    - matches: [{path: {type: PathPrefix, value: /items}, method: GET}]
      backendRefs: [{name: svc-a, port: 80}]
    - matches: [{path: {type: PathPrefix, value: /items}, method: POST}]
      backendRefs: [{name: svc-a, port: 80}]
`,
    )}---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: methods-plan, namespace: ${NS}}
spec:
  name: methods-plan
  access_rights_array: [{kind: HTTPRoute, name: methods, limit: {rate: 100, per: 60}}]
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: methods-key, namespace: ${NS}}
spec:
  policies: [methods-plan]
`,
  );
  const st = await waitForStatus(
    w.cp,
    { kind: 'securitypolicy', ns: NS, name: 'methods-plan' },
    'Ready',
    (s) => readyOf(s)?.status === 'True',
  );
  // The public dispatching API and the internal API of each rule.
  assert.ok(((st.linked_apis ?? []) as unknown[]).length >= 3, JSON.stringify(st.linked_apis));
  await waitForStatus(
    w.cp,
    { kind: 'apikey', ns: NS, name: 'methods-key' },
    'Ready',
    (s) => readyOf(s)?.status === 'True',
  );
  const value = (await secretValue(w.cp, NS, 'methods-key')) ?? '';
  await waitStatus('methods.example', '/items/1', 401);
  const get = await waitStatus('methods.example', '/items/1', 200, { authorization: value });
  assert.equal(get.upstream, true);
  const post = await httpRequest(`${w.gw.url}/items/2`, {
    method: 'POST',
    headers: { host: 'methods.example', authorization: value },
  });
  assert.equal(post.status, 200, post.body);
  assert.equal((JSON.parse(post.body) as { path: string }).path, '/items/2');
  const unkeyed = await httpRequest(`${w.gw.url}/items/2`, {
    method: 'POST',
    headers: { host: 'methods.example' },
  });
  assert.equal(unkeyed.status, 401);
});
