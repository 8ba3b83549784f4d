/**
 * Ingress templates with the webhooks on: a template is admitted and claims no route, the
 * ApiDefinitions the operator generates for an Ingress pass admission, a template change
 * re-builds its Ingresses' APIs, and deleting a template in use is refused, naming the Ingress.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  freePort,
  httpRequest,
  startEchoUpstream,
  waitFor,
  type OperatorProc,
} from '../harness/processes.ts';
import {
  applyManifest,
  startGatewaySuite,
  startWorldOperator,
  stopGatewaySuite,
  type GatewaySuite,
} from '../operator/helpers.ts';
import { startLocalWebhooks, type WebhookServer } from './helpers.ts';

const NS = 'default';
let w: GatewaySuite;
let hooks: WebhookServer;
let operator: OperatorProc;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let httpPort: number;

before(async () => {
  w = await startGatewaySuite({ name: 'ingress-templates', namespaces: [] });
  hooks = await startLocalWebhooks(w.cp, w.dir);
  upstream = await startEchoUpstream('orders');
  httpPort = await freePort();
  await applyManifest(
    w.cp,
    `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: svc}
spec: {controller: svc.io/ingress-controller}
---
apiVersion: v1
kind: Service
metadata: {name: orders, namespace: ${NS}}
spec: {type: ExternalName, externalName: 127.0.0.1, ports: [{name: http, port: ${upstream.port}}]}
`,
  );
  operator = await startWorldOperator(w, {
    env: {
      WATCH_NAMESPACE: NS,
      SVC_HTTP_INGRESS_PORT: String(httpPort),
      SVC_PUBLISH_SERVICE: `${NS}/gateway`,
    },
  });
});

after(async () => {
  await stopGatewaySuite(w, operator, upstream, hooks);
});

const template = (name: string, auth: string): string => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata:
  name: ${name}
  namespace: ${NS}
  labels: {svc.io/template: "true"}
spec:
  name: ${name}
${auth}
  proxy: {listen_path: /placeholder, target_url: http://template.invalid}
`;

const status = async (): Promise<number> =>
  (await httpRequest(`http://127.0.0.1:${httpPort}/orders/1`, { headers: { host: 'orders.example' } }))
    .status;

test('templates claim no route; the generated APIs are admitted and built from the template', async () => {
  // Two templates with the same placeholder listen path: neither claims it.
  await applyManifest(w.cp, template('token-auth', '  use_keyless: false\n  use_standard_auth: true'));
  await applyManifest(w.cp, template('other-auth', '  use_keyless: false\n  use_standard_auth: true'));
  await applyManifest(
    w.cp,
    `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: orders
  namespace: ${NS}
  annotations: {svc.io/template: token-auth}
spec:
  ingressClassName: svc
  rules:
    - host: orders.example
      http: {paths: [{path: /orders, pathType: Prefix, backend: {service: {name: orders, port: {name: http}}}}]}
`,
  );
  await waitFor(
    "served with the template's authentication (401 without a key)",
    async () => (await status()) === 401,
  );
});

test('deleting a template in use is refused by the webhook, naming the Ingress', async () => {
  const r = await w.cp.kubectl(['delete', 'apidefinition', 'token-auth', '-n', NS], { allowFailure: true });
  assert.notEqual(r.code, 0, r.stdout);
  assert.match(
    r.stderr,
    /template ApiDefinition default\/token-auth is still used by Ingress default\/orders/,
  );
  // An unused one goes.
  await w.cp.kubectl(['delete', 'apidefinition', 'other-auth', '-n', NS, '--wait=true']);
});

test('a template change re-builds the APIs of the Ingresses using it', async () => {
  await applyManifest(w.cp, template('token-auth', '  use_keyless: true\n  use_standard_auth: false'));
  await waitFor('served keyless after the template changed', async () => (await status()) === 200);
});

test('status.loadBalancer from the published Service: written when it gets an address, updated when it changes', async () => {
  const lb = async (): Promise<string> =>
    (
      await w.cp.kubectl([
        'get',
        'ingress',
        'orders',
        '-n',
        NS,
        '-o',
        'jsonpath={.status.loadBalancer.ingress[*].ip}',
      ])
    ).stdout;
  assert.equal(await lb(), '', 'no gateway Service yet: nothing written');
  const service = (ip: string): string => `apiVersion: v1
kind: Service
metadata: {name: gateway, namespace: ${NS}}
spec: {ports: [{name: http, port: 8080}], externalIPs: [${ip}]}
`;
  await applyManifest(w.cp, service('192.0.2.10'));
  await waitFor('the external IP in the status', async () => (await lb()) === '192.0.2.10');
  await applyManifest(w.cp, service('192.0.2.11'));
  await waitFor('the new address in the status', async () => (await lb()) === '192.0.2.11');
});

test('the Ingress deleted: its API gone, and the template may be deleted', async () => {
  await w.cp.kubectl(['delete', 'ingress', 'orders', '-n', NS, '--wait=true']);
  // Its port served nothing else: the gateway closes it (404 while another API keeps it open).
  await waitFor(
    'the API gone',
    async () => (await status().catch(() => 0)) !== 401 && (await status().catch(() => 0)) !== 200,
  );
  await w.cp.kubectl(['delete', 'apidefinition', 'token-auth', '-n', NS, '--wait=true', '--timeout=60s']);
});
