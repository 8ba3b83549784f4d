/**
 * The developer portal's kinds in mode pro, end to end: a real control plane with the real
 * webhooks, a dashboard, a gateway loading from it and the operator (mode pro) as processes
 * (harness/pro.ts). The reference's 08-portal sample is applied and every object of it Ready,
 * held by the dashboard's portal (docs/portal.md); a product a developer signs up for gives a key
 * that the gateway accepts; the operator puts back what is changed in the dashboard, and deleting
 * the objects deletes them there.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dashboardCall, portalCaller, signedLicense, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';
import {
  httpRequest,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import { startLocalWebhooks } from '../webhooks/helpers.ts';
import { applyManifest, readyOf, startCluster, statusOf, waitForStatus, waitReady } from './helpers.ts';
import { portalSample } from './portal-samples.ts';

const NS = 'portal';
let cp: ControlPlane;
let pro: ProWorld;
let tenant: DashboardTenant;
let gw: GatewayProc;
let operator: OperatorProc;
/** What was started, for `after` (before() may fail half-way). */
const started: { stop: () => Promise<void> }[] = [];

before(async () => {
  const cluster = await startCluster('pro-portal', [NS, 'svc-operator-system']);
  cp = cluster.cp;
  started.push(cp);
  pro = await startProWorld({ name: 'portal', nodeSecret: 'e2e-pro-portal-node-secret' });
  started.push(pro);
  tenant = await pro.tenant('portal-org');
  gw = await pro.startGateway({
    name: 'pro-portal-gateway',
    secret: 'e2e-pro-portal-gw',
    org: tenant.org,
    pollMs: 500,
  });
  started.push(await startLocalWebhooks(cp, cluster.dir, 'pro-portal-webhooks', { operatorNamespaces: NS }));
  operator = await startOperator({
    name: 'pro-portal-operator',
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: pro.dir,
    org: tenant.org,
    env: {
      SVC_MODE: 'pro',
      SVC_URL: pro.dashboard.url,
      SVC_AUTH: tenant.system.key,
      ...(await signedLicense('e2e')),
      SVC_RESYNC_PERIOD: '2s',
      WATCH_NAMESPACE: NS,
    },
  });
  started.push(operator);
});

after(async () => {
  for (const p of started.reverse()) await p.stop();
});

const portalGet = (path: string) =>
  dashboardCall(pro.dashboard.url, 'GET', `/api/portal/${path}`, { auth: tenant.system.key });
const obj = (kind: string, name: string) => ({ kind, ns: NS, name });

test("pro: the reference's 08-portal sample is applied and Ready, held by the dashboard's portal", async () => {
  await applyManifest(cp, portalSample(NS, pro.upstream.url));
  await waitReady(cp, obj('apidefinition', 'httpbin'));
  const policy = await waitReady(cp, obj('securitypolicy', 'protect-api'));
  const product = await waitReady(cp, obj('apidescription', 'sample-portal-api'));
  const settings = await waitReady(cp, obj('portalconfig', 'sample-portal-config'));
  const catalogue = await waitReady(cp, obj('portalapicatalogue', 'sample-portal-api'));
  assert.match(readyOf(product)?.message ?? '', new RegExp(`developer portal of ${pro.dashboard.url}`));
  assert.equal(product.policyId, policy.pol_id);
  const held = await portalGet(`products/${String(product.id)}`);
  assert.equal(held.status, 200, held.text);
  assert.equal(held.body.name, 'sample portal config');
  assert.equal(held.body.auth_type, 'keyless');
  assert.equal(held.body.policy_id, policy.pol_id);
  assert.deepEqual(held.body.docs, { doc_type: 'oas', url: 'https://httpbin.org/spec.json' });
  const cat = await portalGet(`catalogues/${String(catalogue.id)}`);
  assert.equal(cat.status, 200, cat.text);
  assert.deepEqual(cat.body.apis, [product.id]);
  assert.deepEqual(catalogue.apis, [product.id]);
  assert.equal(settings.id, 'config');
  const config = await portalGet('config');
  assert.equal(config.body.developer_approval, 'manual', 'the sample sets nothing: the defaults');
});

test('pro: a developer signs up, gets a key for a product and calls the API through the gateway', async () => {
  await cp.kubectl([
    'patch',
    'portalconfig',
    'sample-portal-config',
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { developer_approval: 'auto' } }),
  ]);
  await waitFor(
    'the portal approves developers by itself',
    async () => (await portalGet('config')).body.developer_approval === 'auto',
  );
  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: APIDescription
metadata: {name: orders, namespace: ${NS}}
spec:
  name: Orders
  short_description: Orders of the shop
  show: true
  auth_type: authToken
  key_approval: auto
  subscribable_events: [order.created]
  policyRef: {name: protect-api}
  docs:
    doc_type: swagger
    documentation: |
      openapi: 3.0.3
      info: {title: Orders, version: "1"}
      paths: {}
---
apiVersion: svc.svc.io/v1alpha1
kind: PortalAPICatalogue
metadata: {name: shop, namespace: ${NS}}
spec:
  apis: [{apiDescriptionRef: {name: orders}}]
`,
  );
  const product = await waitReady(cp, obj('apidescription', 'orders'));
  await waitReady(cp, obj('portalapicatalogue', 'shop'));
  const dev = portalCaller(pro.dashboard.url, tenant.org);
  const reg = await dev('POST', '/register', {
    email: 'dev@example.com',
    password: 'a-long-password',
    name: 'Dev',
  });
  assert.equal(reg.status, 200, reg.text);
  assert.equal(reg.body.status, 'active');
  const login = await dev('POST', '/login', { email: 'dev@example.com', password: 'a-long-password' });
  assert.equal(login.status, 200, login.text);
  const token = String(login.body.token);
  const cat = await dev('GET', '/catalogue', undefined, token);
  assert.equal(cat.status, 200, cat.text);
  const products = cat.body.products as { id: string; name: string; description?: string }[];
  const listed = products.find((p) => p.id === product.id);
  assert.ok(listed, `the catalogue lists the product: ${cat.text}`);
  assert.equal(listed.description, 'Orders of the shop');
  const req = await dev('POST', '/key-requests', { product_id: product.id }, token);
  assert.equal(req.status, 200, req.text);
  const key = String(req.body.key);
  assert.ok(key.length > 16, req.text);
  await waitFor(
    'the gateway accepts the developer key',
    async () => {
      const r = await httpRequest(`${gw.url}/httpbin/get`, { headers: { authorization: key } });
      return r.status === 200;
    },
    30_000,
  );
  const refused = await httpRequest(`${gw.url}/httpbin/get`, { headers: { authorization: 'not-a-key' } });
  assert.equal(refused.status, 403);
});

test('pro: a product changed in the dashboard is put back; deleted objects leave the portal', async () => {
  const product = await statusOf(cp, 'apidescription', NS, 'orders');
  const id = String(product.id);
  const held = await portalGet(`products/${id}`);
  const { created: _c, updated: _u, feed_url: _f, has_feed_secret: _h, ...body } = held.body;
  const put = await dashboardCall(pro.dashboard.url, 'PUT', `/api/portal/products/${id}`, {
    auth: tenant.system.key,
    body: { ...body, name: 'Changed by hand' },
  });
  assert.equal(put.status, 200, put.text);
  await waitFor(
    'the operator puts the product back',
    async () => (await portalGet(`products/${id}`)).body.name === 'Orders',
    30_000,
  );

  await cp.kubectl(['delete', 'portalapicatalogue', 'shop', '-n', NS, '--timeout=30s']);
  await cp.kubectl(['delete', 'apidescription', 'orders', '-n', NS, '--timeout=30s']);
  assert.equal((await portalGet(`products/${id}`)).status, 404);
  await cp.kubectl(['delete', 'portalconfig', 'sample-portal-config', '-n', NS, '--timeout=30s']);
  assert.equal((await portalGet('config')).body.developer_approval, 'manual', 'the defaults are back');
  // Without a PortalConfig the sample's product stays Ready.
  await waitForStatus(
    cp,
    obj('apidescription', 'sample-portal-api'),
    'still Ready',
    (s) => readyOf(s)?.status === 'True',
  );
});
