/**
 * The ingress controller end to end: a real control plane, a gateway with a default TLS
 * certificate (HTTPS ingress port), the operator as a process with its ingress ports, echo
 * upstreams behind ExternalName Services. Requests go through the gateway's ingress ports with the
 * Ingress's hosts (and SNI), and must reach the backend the Ingress names.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet } from '../../gateway/testing/tls-client.ts';
import { derivedId } from '../../operator/ids.ts';
import { ingressApiId } from '../../operator/translate/ingress.ts';
import {
  freePort,
  httpRequest,
  startEchoUpstream,
  waitFor,
  type OperatorProc,
} from '../harness/processes.ts';
import {
  admin,
  applyManifest,
  defaultCertEnv,
  eventsOf,
  readyOf,
  startGatewaySuite,
  startWorldOperator,
  stopGatewaySuite,
  tlsSecretManifest,
  waitForStatus,
  waitReady,
  type GatewaySuite,
} from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'shop';
const WATCH_CLASS = 'svc';

let w: GatewaySuite;
let operator: OperatorProc;
let httpPort: number;
let httpsPort: number;
const upstreams: Record<'a' | 'b' | 'c', Awaited<ReturnType<typeof startEchoUpstream>>> = {} as never;

/** The operator, with its ingress ports and a fixed load-balancer address. */
const startIngressOperator = (name: string): Promise<OperatorProc> =>
  startWorldOperator(w, {
    name,
    org: ORG,
    env: {
      WATCH_NAMESPACE: NS,
      WATCH_INGRESS_CLASS: WATCH_CLASS,
      SVC_HTTP_INGRESS_PORT: String(httpPort),
      SVC_HTTPS_INGRESS_PORT: String(httpsPort),
      SVC_INGRESS_ADDRESS: '127.0.0.1',
    },
  });

before(async () => {
  // HTTPS listen ports need the gateway's default certificate.
  w = await startGatewaySuite({ name: 'ingress', namespaces: [NS], env: defaultCertEnv() });
  for (const n of ['a', 'b', 'c'] as const) upstreams[n] = await startEchoUpstream(n);
  httpPort = await freePort();
  httpsPort = await freePort();
  // The chart installs this IngressClass (ingressClass.create).
  await applyManifest(
    w.cp,
    `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ${WATCH_CLASS}}
spec: {controller: svc.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
`,
  );
  // Backends: ExternalName Services standing for the local echo upstreams (a bare API server
  // has no endpoints controller or proxy; the generated target is the Service's address).
  await applyManifest(
    w.cp,
    (['a', 'b', 'c'] as const)
      .map(
        (n) => `apiVersion: v1
kind: Service
metadata: {name: svc-${n}, namespace: ${NS}}
spec:
  type: ExternalName
  externalName: 127.0.0.1
  ports: [{name: http, port: ${upstreams[n].port}}]
`,
      )
      .join('---\n'),
  );
  operator = await startIngressOperator('ingress-operator');
});

after(() => stopGatewaySuite(w, operator, ...Object.values(upstreams)));

/** A GET through the HTTP ingress port with a Host header: the status and the upstream that answered. */
async function viaHttp(
  host: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; upstream?: string; path?: string }> {
  const r = await httpRequest(`http://127.0.0.1:${httpPort}${path}`, { headers: { host, ...headers } });
  let body: { upstream?: string; path?: string } = {};
  try {
    body = JSON.parse(r.body) as typeof body;
  } catch {
    // Not the echo: keep the status.
  }
  return { status: r.status, upstream: body.upstream, path: body.path };
}

/** Waits until `host` + `path` is answered by `upstream` (or has `status`). */
async function waitServed(
  host: string,
  path: string,
  want: { upstream?: string; status?: number },
): Promise<void> {
  await waitFor(`${host}${path} -> ${JSON.stringify(want)}`, async () => {
    const r = await viaHttp(host, path);
    return (want.upstream === undefined || r.upstream === want.upstream) && r.status === (want.status ?? 200);
  });
}

/** The names of the ApiDefinitions generated for an Ingress. */
async function generatedFor(ingress: string): Promise<string[]> {
  const out = await w.cp.kubectl([
    'get',
    'apidefinitions',
    '-n',
    NS,
    '-l',
    `svc.io/ingress=${ingress}`,
    '-o',
    'jsonpath={.items[*].metadata.name}',
  ]);
  return out.stdout
    .trim()
    .split(/\s+/)
    .filter((s) => s !== '')
    .sort();
}

/** An Ingress of our class in NS; `spec` is the rest of its spec (YAML, indented as in it). */
const ingress = (name: string, spec: string): string => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: ${NS}}
spec:
  ingressClassName: ${WATCH_CLASS}
${spec}`;

const backend = (n: 'a' | 'b' | 'c', port = '{name: http}'): string =>
  `{service: {name: svc-${n}, port: ${port}}}`;

test('two hosts and three paths (a named port, a numbered one): each served by its backend; status and annotation written', async () => {
  await applyManifest(
    w.cp,
    ingress(
      'shop',
      `  rules:
    - host: shop.example
      http:
        paths:
          - {path: /cart, pathType: Prefix, backend: ${backend('a')}}
          - {path: /, pathType: Prefix, backend: ${backend('b', `{number: ${upstreams.b.port}}`)}}
    - host: api.example
      http:
        paths:
          - {path: /v1, pathType: ImplementationSpecific, backend: ${backend('c')}}
`,
    ),
  );
  await waitServed('shop.example', '/cart/items', { upstream: 'a' });
  await waitServed('shop.example', '/anything', { upstream: 'b' });
  await waitServed('api.example', '/v1/orders', { upstream: 'c' });
  // The whole path reaches the backend, as with any ingress controller.
  assert.equal((await viaHttp('shop.example', '/cart/items')).path, '/cart/items');
  assert.equal((await viaHttp('api.example', '/v2')).status, 404, 'a path no rule has');
  assert.equal((await viaHttp('other.example', '/cart')).status, 404, 'a host no rule has');
  const names = await generatedFor('shop');
  assert.equal(names.length, 3);
  const ing = JSON.parse((await w.cp.kubectl(['get', 'ingress', 'shop', '-n', NS, '-o', 'json'])).stdout) as {
    metadata: { annotations?: Record<string, string>; finalizers?: string[] };
    status?: { loadBalancer?: { ingress?: { ip?: string }[] } };
  };
  assert.deepEqual(ing.status?.loadBalancer?.ingress, [{ ip: '127.0.0.1' }]);
  assert.deepEqual(
    (ing.metadata.annotations?.['svc.io/apis'] ?? '')
      .split(',')
      .map((e) => e.split('=')[0])
      .sort(),
    names,
  );
  const id = ingressApiId(NS, 'shop', {
    scheme: 'http',
    host: 'shop.example',
    path: '/cart',
    pathType: 'Prefix',
  });
  assert.equal(
    (await admin(w.gw, 'GET', `/svc/apis/${id}`)).status,
    200,
    'the ID derived from name, host and path',
  );
  // The API's status reports where it is served: the ingress port, not the management port.
  const st = await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: names[0] ?? '' });
  assert.match(readyOf(st)?.message ?? '', new RegExp(`at http://[a-z.]+:${httpPort}/`));
  const events = await eventsOf(w.cp, NS, 'involvedObject.kind=Ingress,involvedObject.name=shop');
  assert.equal(events.split(' ').filter((r) => r === 'Created').length, 3, 'an Event per generated API');
});

test('Exact and Prefix: an Exact path serves itself, a Prefix path its subtree (element-wise)', async () => {
  await applyManifest(
    w.cp,
    ingress(
      'types',
      `  rules:
    - host: types.example
      http:
        paths:
          - {path: /exact, pathType: Exact, backend: ${backend('a')}}
          - {path: /prefix/, pathType: Prefix, backend: ${backend('b')}}
`,
    ),
  );
  await waitServed('types.example', '/exact', { upstream: 'a' });
  // Exact serves that path alone: nothing under it (no other route on this host).
  assert.equal((await viaHttp('types.example', '/exact/more')).status, 404);
  await waitServed('types.example', '/prefix', { upstream: 'b' });
  assert.equal((await viaHttp('types.example', '/prefix/deeper/still')).upstream, 'b');
  // Element-wise: /prefixed is not under /prefix.
  assert.equal((await viaHttp('types.example', '/prefixed')).status, 404);
});

test('a default backend and a wildcard host (one label only)', async () => {
  await applyManifest(
    w.cp,
    ingress(
      'fallback',
      `  defaultBackend: ${backend('c')}
  rules:
    - host: "*.wild.example"
      http:
        paths:
          - {path: /, pathType: Prefix, backend: ${backend('a')}}
`,
    ),
  );
  await waitServed('tenant.wild.example', '/x', { upstream: 'a' });
  await waitServed('nobody.example', '/whatever', { upstream: 'c' });
  // A wildcard host covers exactly one label, as the Ingress spec says: a deeper name is not its
  // own and falls through to the default backend.
  assert.equal((await viaHttp('a.b.wild.example', '/x')).upstream, 'c');
  assert.equal((await viaHttp('wild.example', '/x')).upstream, 'c');
  // A path of another Ingress's host that no rule covers falls through to the default backend.
  assert.equal((await viaHttp('api.example', '/v2')).upstream, 'c');
});

test('an Ingress of another class is ignored; the legacy annotation of ours is served', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: theirs, namespace: ${NS}}
spec:
  ingressClassName: nginx
  rules:
    - host: theirs.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('a')}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: legacy
  namespace: ${NS}
  annotations: {kubernetes.io/ingress.class: ${WATCH_CLASS}}
spec:
  rules:
    - host: legacy.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('b')}}]}
`,
  );
  await waitServed('legacy.example', '/', { upstream: 'b' });
  assert.deepEqual(await generatedFor('theirs'), []);
  // Served by the default backend (any host), not by a route of its own.
  assert.equal((await viaHttp('theirs.example', '/')).upstream, 'c');
});

test('a missing Service: a Warning Event naming the field; served once the Service exists', async () => {
  await applyManifest(
    w.cp,
    ingress(
      'early',
      `  rules:
    - host: early.example
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: late, port: {name: http}}}}]}
`,
    ),
  );
  await waitFor('a ServiceNotFound event', async () => {
    const messages = await eventsOf(
      w.cp,
      NS,
      'involvedObject.name=early,reason=ServiceNotFound',
      '{.items[*].message}',
    );
    return messages.includes(
      'spec.rules[0].http.paths[0].backend.service.name: Not found: Service shop/late does not exist',
    );
  });
  await applyManifest(
    w.cp,
    `apiVersion: v1
kind: Service
metadata: {name: late, namespace: ${NS}}
spec: {type: ExternalName, externalName: 127.0.0.1, ports: [{name: http, port: ${upstreams.a.port}}]}
`,
  );
  await waitServed('early.example', '/', { upstream: 'a' });
});

/** The certificate the HTTPS ingress port presents for SNI `host`, and the upstream that answered. */
async function viaHttps(
  host: string,
  path: string,
): Promise<{ fingerprint: string; upstream?: string; status: number }> {
  const r = await tlsGet(httpsPort, path, { servername: host });
  return { fingerprint: r.serverFingerprint, upstream: r.json?.upstream, status: r.status };
}

const tlsSecret = (c: MadeCert): string => tlsSecretManifest(NS, 'secure-tls', c);

test("TLS: the host served over HTTPS with the Secret's certificate by SNI; the Secret rotated without a restart", async () => {
  const first = await makeCert('secure.example');
  const rotated = await makeCert('secure.example');
  await applyManifest(w.cp, tlsSecret(first));
  await applyManifest(
    w.cp,
    ingress(
      'secure',
      `  tls: [{hosts: [secure.example], secretName: secure-tls}]
  rules:
    - host: secure.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('a')}}]}
`,
    ),
  );
  await waitFor("the Secret's certificate served by SNI", async () => {
    const r = await viaHttps('secure.example', '/hello-tls').catch(() => undefined);
    return r?.fingerprint === first.fingerprint && r.upstream === 'a';
  });
  await applyManifest(w.cp, tlsSecret(rotated));
  await waitFor('the rotated certificate served', async () => {
    const r = await viaHttps('secure.example', '/').catch(() => undefined);
    return r?.fingerprint === rotated.fingerprint && r.upstream === 'a';
  });
});

test('a template adding token authentication: 401 without a key, 200 with one', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata:
  name: token-auth
  namespace: ${NS}
  labels: {svc.io/template: "true"}
spec:
  name: token-auth
  use_keyless: false
  use_standard_auth: true
  proxy: {listen_path: /template-placeholder, target_url: http://template.invalid}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: protected
  namespace: ${NS}
  annotations: {svc.io/template: token-auth}
spec:
  ingressClassName: ${WATCH_CLASS}
  rules:
    - host: protected.example
      http: {paths: [{path: /orders, pathType: Prefix, backend: ${backend('b')}}]}
`,
  );
  await waitServed('protected.example', '/orders', { status: 401 });
  const id = ingressApiId(NS, 'protected', {
    scheme: 'http',
    host: 'protected.example',
    path: '/orders',
    pathType: 'Prefix',
  });
  const key = await admin(w.gw, 'POST', '/svc/keys/e2e-ingress-key', {
    org_id: ORG,
    access_rights: { [id]: { api_id: id, api_name: 'protected', versions: ['Default'] } },
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  await waitFor('served with the key', async () => {
    const r = await viaHttp('protected.example', '/orders/1', { authorization: 'e2e-ingress-key' });
    return r.status === 200 && r.upstream === 'b';
  });
  // The template itself is never pushed, and it is Ready as a template naming its user.
  const st = await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'token-auth' },
    'Template',
    (s) =>
      readyOf(s)?.reason === 'Template' && (readyOf(s)?.message ?? '').includes('Ingress shop/protected'),
  );
  assert.equal(st.api_id, undefined);
  assert.equal(
    (await admin(w.gw, 'GET', `/svc/apis/${derivedId(NS, 'token-auth')}`)).status,
    404,
    'the template is not pushed',
  );
  // Deleting it while the Ingress uses it is held by its finalizer (no webhooks here), naming the Ingress.
  await w.cp.kubectl(['delete', 'apidefinition', 'token-auth', '-n', NS, '--wait=false']);
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: NS, name: 'token-auth' },
    'InUse',
    (s) => readyOf(s)?.reason === 'InUse' && (readyOf(s)?.message ?? '').includes('Ingress shop/protected'),
  );
  await w.cp.kubectl(['delete', 'ingress', 'protected', '-n', NS, '--wait=true']);
  await waitFor('the template released', async () => {
    const r = await w.cp.kubectl(['get', 'apidefinition', 'token-auth', '-n', NS], { allowFailure: true });
    return r.code !== 0;
  });
});

test("an SvcOasApiDefinition template: its document's token authentication on the Ingress's APIs", async () => {
  await applyManifest(
    w.cp,
    `apiVersion: v1
kind: ConfigMap
metadata: {name: oas-template, namespace: ${NS}}
data:
  oas.yaml: |
    openapi: 3.0.3
    info: {title: template, version: 1.0.0}
    paths: {}
    components:
      securitySchemes:
        token: {type: apiKey, in: header, name: Authorization}
    security: [{token: []}]
    x-svc-api-gateway:
      info: {name: oas-template, state: {active: true}}
      upstream: {url: http://template.invalid}
      server:
        listenPath: {value: /oas-template-placeholder/, strip: false}
        authentication: {enabled: true, securitySchemes: {token: {enabled: true}}}
---
apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata:
  name: oas-token
  namespace: ${NS}
  labels: {template: "true"}
spec:
  svcOAS: {configmapRef: {name: oas-template, keyName: oas.yaml}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: oas-protected
  namespace: ${NS}
  annotations: {svc.io/template: oas-token}
spec:
  ingressClassName: ${WATCH_CLASS}
  rules:
    - host: oas-protected.example
      http: {paths: [{path: /items, pathType: Prefix, backend: ${backend('c')}}]}
`,
  );
  await waitServed('oas-protected.example', '/items', { status: 401 });
  // The template itself is never pushed.
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/oas/${derivedId(NS, 'oas-token')}`)).status, 404);
  await waitForStatus(
    w.cp,
    { kind: 'svcoasapidefinition', ns: NS, name: 'oas-token' },
    'Template',
    (s) =>
      readyOf(s)?.reason === 'Template' && (readyOf(s)?.message ?? '').includes('Ingress shop/oas-protected'),
  );
  await w.cp.kubectl(['delete', 'ingress', 'oas-protected', '-n', NS, '--wait=true']);
  await w.cp.kubectl([
    'delete',
    'svcoasapidefinition',
    'oas-token',
    '-n',
    NS,
    '--wait=true',
    '--timeout=60s',
  ]);
});

test('operator restart: nothing duplicated, nothing rewritten', async () => {
  const apiIds = async (): Promise<string[]> =>
    ((await admin(w.gw, 'GET', '/svc/apis')).body as { api_id: string }[]).map((a) => a.api_id).sort();
  // Each ApiDefinition with its generation: a spec written again would move it.
  const generations = async (): Promise<string> =>
    (
      await w.cp.kubectl([
        'get',
        'apidefinitions',
        '-n',
        NS,
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}={.metadata.generation} {end}',
      ])
    ).stdout;
  const idsBefore = await apiIds();
  const before = await generations();
  await operator.stop();
  operator = await startIngressOperator('ingress-operator-2');
  await waitServed('shop.example', '/cart', { upstream: 'a' });
  assert.deepEqual(await apiIds(), idsBefore);
  assert.equal(await generations(), before);
});

test('an Ingress made while the operator is down: served after its start, its Events name the Ingress', async () => {
  await operator.stop();
  await applyManifest(
    w.cp,
    ingress(
      'offline',
      `  rules:
    - host: offline.example
      http:
        paths:
          - {path: /, pathType: Prefix, backend: ${backend('a')}}
`,
    ),
  );
  operator = await startIngressOperator('ingress-operator-3');
  await waitServed('offline.example', '/x', { upstream: 'a' });
  // The operator found this Ingress in its first list (whose items carry no kind), not in a
  // watch event: its Event must still name the Ingress, as kubectl describe looks it up.
  await waitFor('a Created Event about the Ingress offline', async () => {
    const events = await eventsOf(
      w.cp,
      NS,
      'involvedObject.kind=Ingress,involvedObject.name=offline,reason=Created',
    );
    return events.trim() === 'Created';
  });
});

test('the Ingress deleted: its ApiDefinitions and APIs are gone', async () => {
  const id = ingressApiId(NS, 'shop', {
    scheme: 'http',
    host: 'shop.example',
    path: '/cart',
    pathType: 'Prefix',
  });
  await w.cp.kubectl(['delete', 'ingress', 'shop', '-n', NS, '--wait=true']);
  await waitFor(
    'the generated ApiDefinitions deleted',
    async () => (await generatedFor('shop')).length === 0,
  );
  await waitFor(
    'the API gone from the gateway',
    async () => (await admin(w.gw, 'GET', `/svc/apis/${id}`)).status === 404,
  );
  // The default backend of another Ingress answers now.
  await waitServed('shop.example', '/cart', { upstream: 'c' });
});
