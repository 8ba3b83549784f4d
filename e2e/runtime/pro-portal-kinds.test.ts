/**
 * The operator's portal reconcilers (operator/controllers/portal/) against a real dashboard and a
 * gateway loading from it (harness/pro.ts), without a control plane: the objects are given as the
 * informers would hand them, the writes go through the real DashboardClient to the portal admin
 * API (docs/portal.md). What the reconcilers write is what a developer then sees and uses: the
 * product in the catalogue, a key the gateway accepts. e2e/operator/pro-portal.test.ts runs the
 * same through a real API server, webhooks and the operator process.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DashboardClient } from '../../operator/clients/dashboard.ts';
import type { Resolved } from '../../operator/connections.ts';
import { PushMemory } from '../../operator/controllers/sync.ts';
import { fakeEvents, fakeObjects } from '../../operator/controllers/testing.ts';
import {
  reconcileAPIDescription,
  type APIDescriptionObject,
} from '../../operator/controllers/portal/api-description.ts';
import {
  reconcilePortalAPICatalogue,
  type CatalogueObject,
} from '../../operator/controllers/portal/catalogue.ts';
import { reconcilePortalConfig, type PortalConfigObject } from '../../operator/controllers/portal/config.ts';
import type { Condition, SvcObject } from '../../lib/k8s/objects.ts';
import { silentLogger } from '../../lib/log.ts';
import { dashboardCall, portalCaller, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, writeApi, writePolicy, type ProWorld } from '../harness/pro.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

let w: ProWorld;
let tenant: DashboardTenant;
let gw: GatewayProc;
let client: DashboardClient;

before(async () => {
  w = await startProWorld({ name: 'portal-kinds', nodeSecret: 'e2e-portal-kinds-node-secret' });
  tenant = await w.tenant('kinds-org');
  await writeApi(w, tenant, 'orders', { use_keyless: false, use_standard_auth: true });
  await writePolicy(w, tenant, 'gold', 'orders', { rate: 100 });
  gw = await w.startGateway({
    name: 'kinds-gateway',
    secret: 'e2e-portal-kinds-gw',
    org: tenant.org,
    pollMs: 500,
  });
  client = new DashboardClient({
    mode: 'pro',
    url: w.dashboard.url,
    auth: tenant.system.key,
    org: tenant.org,
    insecureSkipVerify: false,
  });
});

after(async () => {
  await stopAll(client, w);
});

const READY: Condition[] = [
  { type: 'Ready', status: 'True', reason: 'Synced', message: '', lastTransitionTime: '' },
];

/** What every reconciler is given: the real client, status writes kept in memory. */
function deps<T extends SvcObject>(read: () => T) {
  const objects = fakeObjects<T>();
  return {
    objects,
    events: fakeEvents(),
    now: () => new Date(),
    log: silentLogger(),
    pushes: new PushMemory(),
    read: () => Promise.resolve(read()),
    connections: {
      resolve: (): Promise<Resolved> =>
        Promise.resolve({
          ok: true,
          conn: {
            mode: 'pro',
            url: client.url,
            auth: tenant.system.key,
            org: tenant.org,
            insecureSkipVerify: false,
          },
          client,
        }),
    },
    /** The status last written, merged into the object as the informer would show it. */
    withStatus: (obj: T): T => ({ ...obj, status: objects.statuses.at(-1) }),
  };
}

const meta = (name: string) => ({ name, namespace: 'shop', uid: `uid-${name}`, generation: 1 });
const admin = (path: string) =>
  dashboardCall(w.dashboard.url, 'GET', `/api/portal/${path}`, { auth: tenant.system.key });

test('the reconcilers write settings, a product and a catalogue; a developer gets a key the gateway accepts', async () => {
  const config: PortalConfigObject = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'PortalConfig',
    metadata: meta('portal'),
    spec: { developer_approval: 'auto' },
  };
  const c = deps(() => config);
  await reconcilePortalConfig('shop/portal', { ...c, configs: () => [config] });
  assert.equal((await admin('config')).body.developer_approval, 'auto');

  let product: APIDescriptionObject = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'APIDescription',
    metadata: meta('orders'),
    spec: {
      name: 'Orders',
      short_description: 'Orders of the shop',
      show: true,
      auth_type: 'authToken',
      key_approval: 'auto',
      policyRef: { name: 'gold', namespace: 'shop' },
      docs: {
        doc_type: 'swagger',
        documentation: 'openapi: 3.0.3\ninfo: {title: Orders, version: "1"}\npaths: {}\n',
      },
    },
  };
  const p = deps(() => product);
  await reconcileAPIDescription('shop/orders', {
    ...p,
    policy: () => ({
      metadata: { name: 'gold', namespace: 'shop' },
      status: { pol_id: 'gold', conditions: READY },
    }),
  });
  product = p.withStatus(product);
  const productStatus = product.status ?? {};
  assert.equal(
    productStatus.conditions?.find((x) => x.type === 'Ready')?.status,
    'True',
    JSON.stringify(productStatus),
  );
  const held = await admin(`products/${String(productStatus.id)}`);
  assert.equal(held.status, 200, held.text);
  assert.equal(held.body.policy_id, 'gold');

  let catalogue: CatalogueObject = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'PortalAPICatalogue',
    metadata: meta('public'),
    spec: { apis: [{ apiDescriptionRef: { name: 'orders', namespace: 'shop' } }] },
  };
  const k = deps(() => catalogue);
  await reconcilePortalAPICatalogue('shop/public', {
    ...k,
    description: () => ({ ...product, status: { ...productStatus, conditions: READY } }),
  });
  catalogue = k.withStatus(catalogue);
  assert.deepEqual(catalogue.status?.apis, [productStatus.id]);

  const dev = portalCaller(w.dashboard.url, tenant.org);
  const reg = await dev('POST', '/register', { email: 'dev@example.com', password: 'a-long-password' });
  assert.equal(reg.status, 200, reg.text);
  assert.equal(reg.body.status, 'active', 'developer_approval auto, from the PortalConfig');
  const login = await dev('POST', '/login', { email: 'dev@example.com', password: 'a-long-password' });
  const token = String(login.body.token);
  const cat = await dev('GET', '/catalogue', undefined, token);
  const listed = (cat.body.products as { id: string; description?: string }[]).find(
    (x) => x.id === productStatus.id,
  );
  assert.equal(listed?.description, 'Orders of the shop', cat.text);
  const req = await dev('POST', '/key-requests', { product_id: productStatus.id }, token);
  assert.equal(req.status, 200, req.text);
  const key = String(req.body.key);
  await waitFor(
    'the gateway accepts the developer key',
    async () =>
      (await httpRequest(`${gw.url}/orders/get`, { headers: { authorization: key } })).status === 200,
    30_000,
  );

  // Deleted: the catalogue, then the product, leave the portal; the settings' defaults come back.
  const going = { deletionTimestamp: new Date() };
  catalogue = {
    ...catalogue,
    metadata: { ...catalogue.metadata, ...going, finalizers: ['finalizers.svc.svc.io/portalapicatalogue'] },
  };
  await reconcilePortalAPICatalogue('shop/public', { ...k, description: () => undefined });
  assert.equal((await admin(`catalogues/${String(catalogue.status?.id)}`)).status, 404);
  product = {
    ...product,
    metadata: { ...product.metadata, ...going, finalizers: ['finalizers.svc.svc.io/apidescription'] },
  };
  await reconcileAPIDescription('shop/orders', { ...p, policy: () => undefined });
  assert.equal((await admin(`products/${String(productStatus.id)}`)).status, 404);
  const settled = c.withStatus(config);
  const gone: PortalConfigObject = {
    ...settled,
    metadata: { ...settled.metadata, ...going, finalizers: ['finalizers.svc.svc.io/portalconfig'] },
  };
  await reconcilePortalConfig('shop/portal', { ...c, read: () => Promise.resolve(gone), configs: () => [] });
  assert.equal((await admin('config')).body.developer_approval, 'manual');
});
