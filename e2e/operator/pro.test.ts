/**
 * Mode pro end to end: a real dashboard on a PostgreSQL the test starts, a gateway in mode pro
 * loading from it, and the operator (mode pro, a short resync) pushing an ApiDefinition and a
 * SecurityPolicy to the dashboard. A key and a basic-auth user are registered through the
 * dashboard; traffic is allowed and refused as the policy says; an edit made in the dashboard is
 * reverted at the next reconcile; the gateway keeps serving while the dashboard restarts. The API
 * and the policy are Programmed once the gateway reports to the dashboard that it serves their
 * revision (`status.gateways`).
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, test } from 'node:test';
import { startPostgres, type TestPostgres } from '../../dashboard/testing/postgres.ts';
import { derivedId } from '../../operator/ids.ts';
import {
  createTenant,
  dashboardCall,
  startDashboardProc,
  type DashboardProc,
  type DashboardTenant,
} from '../harness/dashboard.ts';
import { freePort, httpRequest, waitFor, type GatewayProc, type OperatorProc } from '../harness/processes.ts';
import {
  applyManifest,
  readyOf,
  startWorld,
  statusOf,
  stopWorld,
  waitForStatus,
  type OperatorWorld,
  waitReady,
} from './helpers.ts';
import { startProGatewayAndOperator } from './pro-world.ts';

const NODE_SECRET = 'e2e-pro-node-secret-0123';

let w: OperatorWorld;
let pg: TestPostgres;
let pgUrl: string;
let dbPort: number;
let dashboard: DashboardProc;
let tenant: DashboardTenant;
let gw: GatewayProc;
let operator: OperatorProc;

async function startDb(): Promise<DashboardProc> {
  return startDashboardProc({
    name: 'pro-dashboard',
    logDir: w.dir,
    postgresUrl: pgUrl,
    port: dbPort,
    args: ['--node-secret', NODE_SECRET],
  });
}

before(async () => {
  w = await startWorld({ name: 'pro', namespaces: ['shop'] });
  pg = await startPostgres();
  pgUrl = await pg.createDatabase('pro');
  dbPort = await freePort();
  dashboard = await startDb();
  ({ tenant, gw, operator } = await startProGatewayAndOperator(w, {
    name: 'pro',
    dashboard,
    nodeSecret: NODE_SECRET,
    resync: '3s',
  }));
});

after(() => stopWorld(w, operator, gw, dashboard, pg));

async function call(path: string, headers: Record<string, string> = {}): Promise<number> {
  try {
    return (await httpRequest(`${gw.url}${path}`, { headers })).status;
  } catch {
    return 0;
  }
}

async function served(path: string, status: number, headers: Record<string, string> = {}): Promise<void> {
  await waitFor(`${path} answers ${status}`, async () => (await call(path, headers)) === status, 30_000);
}

test('pro: ApiDefinition and SecurityPolicy through the dashboard; a key from the dashboard is limited by the policy', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: catalog, namespace: shop}
spec:
  name: catalog
  use_keyless: false
  use_standard_auth: true
  proxy: {listen_path: /catalog/, target_url: "${w.upstream.url}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: catalog-basic, namespace: shop}
spec:
  name: catalog-basic
  rate: 3
  per: 60
  access_rights_array: [{name: catalog}]
`,
  );
  const api = await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name: 'catalog' });
  const pol = await waitReady(w.cp, { kind: 'securitypolicy', ns: 'shop', name: 'catalog-basic' });
  const apiId = String(api.api_id);
  const listed = await dashboardCall(dashboard.url, 'GET', `/api/apis/${apiId}`, { auth: tenant.reader.key });
  assert.equal(listed.status, 200, listed.text);
  await served('/catalog/x', 401);
  // The dashboard serves nothing: the status says where the API is held and which gateway serves it.
  // The gateway reports what it serves to the dashboard: Programmed once it serves the revision.
  const gatewayName = `${hostname()}:${String(gw.port)}`;
  const where = `API ${apiId} is held by the dashboard ${dashboard.url} in organisation ${tenant.org}; served at /catalog/ by 1 gateway connected to it: ${hostname()}`;
  const named = await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: 'shop', name: 'catalog' },
    'the gateway serving it named',
    (st) => (readyOf(st)?.message ?? '').startsWith(where),
    30_000,
  );
  assert.equal(readyOf(named)?.reason, 'Synced');
  assert.equal(
    readyOf(named)?.message,
    `${where}; revision ${String(named.latestSvcSpecHash).slice(0, 12)} served by its one gateway: ${gatewayName}`,
  );
  const programmedOf = (st: Record<string, unknown>): string | undefined =>
    (st.conditions as { type: string; status: string }[] | undefined)?.find((c) => c.type === 'Programmed')
      ?.status;
  assert.equal(programmedOf(named), 'True');
  assert.deepEqual(
    (named.gateways as { name: string; revision?: string }[]).map((g) => [g.name, g.revision]),
    [[gatewayName, named.latestSvcSpecHash]],
  );
  const polServed = await waitForStatus(
    w.cp,
    { kind: 'securitypolicy', ns: 'shop', name: 'catalog-basic' },
    'the policy applied by the gateway',
    (st) => programmedOf(st) === 'True',
    30_000,
  );
  assert.deepEqual(
    (polServed.gateways as { name: string; revision?: string }[]).map((g) => [g.name, g.revision]),
    [[gatewayName, polServed.latestSvcSpecHash]],
  );
  const key = await dashboardCall(dashboard.url, 'POST', '/api/keys', {
    auth: tenant.system.key,
    body: { apply_policies: [String(pol.pol_id)] },
  });
  assert.equal(key.status, 200, key.text);
  const auth = { authorization: String(key.body.key_id) };
  await served('/catalog/1', 200, auth);
  assert.equal(await call('/catalog/2', auth), 200);
  assert.equal(await call('/catalog/3', auth), 200);
  assert.equal(await call('/catalog/4', auth), 429, 'over the policy rate');
});

test('pro: a basic-auth user registered through the dashboard', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: basic, namespace: shop}
spec:
  name: basic
  use_keyless: false
  use_basic_auth: true
  proxy: {listen_path: /basic/, target_url: "${w.upstream.url}", strip_listen_path: true}
`,
  );
  const api = await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name: 'basic' });
  const apiId = String(api.api_id);
  const user = await dashboardCall(dashboard.url, 'POST', '/api/apis/keys/basic/alice', {
    auth: tenant.system.key,
    body: {
      org_id: tenant.org,
      basic_auth_data: { password: 'wonderland' },
      access_rights: { [apiId]: { api_id: apiId, api_name: 'basic', versions: ['Default'] } },
    },
  });
  assert.equal(user.status, 200, user.text);
  const basic = (u: string, p: string): Record<string, string> => ({
    authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
  });
  await served('/basic/x', 200, basic('alice', 'wonderland'));
  assert.notEqual(await call('/basic/x', basic('alice', 'wrong')), 200);
});

test('pro: an edit in the dashboard is reverted at the next reconcile', async () => {
  const api = await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name: 'basic' });
  const apiId = String(api.api_id);
  const cur = await dashboardCall(dashboard.url, 'GET', `/api/apis/${apiId}`, { auth: tenant.system.key });
  const def = cur.body.api_definition as Record<string, unknown>;
  const edited = { ...def, proxy: { ...(def.proxy as object), listen_path: '/drifted/' } };
  const put = await dashboardCall(dashboard.url, 'PUT', `/api/apis/${apiId}`, {
    auth: tenant.system.key,
    body: { api_definition: edited },
  });
  assert.equal(put.status, 200, put.text);
  await waitFor(
    'the listen path back to /basic/ in the dashboard',
    async () => {
      const r = await dashboardCall(dashboard.url, 'GET', `/api/apis/${apiId}`, { auth: tenant.reader.key });
      const proxy = (r.body.api_definition as { proxy?: { listen_path?: string } } | undefined)?.proxy;
      return proxy?.listen_path === '/basic/';
    },
    30_000,
  );
  await served('/drifted/x', 404);
});

/** A tenant's OperatorContext `ctx-{tag}` in shop: its user's key and org in a Secret. */
function contextManifest(tag: string, t: DashboardTenant): string {
  return `apiVersion: v1
kind: Secret
metadata: {name: ctx-${tag}-conf, namespace: shop}
stringData: {SVC_AUTH: "${t.system.key}", SVC_ORG: "${t.org}"}
---
apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: ctx-${tag}, namespace: shop}
spec:
  env: {mode: pro, url: "${dashboard.url}", user_owners: ["${t.reader.id}"]}
  secretRef: {name: ctx-${tag}-conf}
`;
}

/** An ApiDefinition in shop through the context `ctx-{tag}`. */
function tenantApi(tag: string, name: string, extra: string): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: shop}
spec:
  name: orders
${extra}  use_keyless: true
  contextRef: {name: ctx-${tag}}
  proxy: {listen_path: /orders/, target_url: "${w.upstream.url}", strip_listen_path: true}
`;
}

test('pro: two OperatorContexts with different organisations act as different tenants', async () => {
  const a = await createTenant(dashboard.url, 'tenant-a');
  const b = await createTenant(dashboard.url, 'tenant-b');
  await applyManifest(w.cp, contextManifest('a', a) + '---\n' + contextManifest('b', b));
  // The same API ID, name and listen path in both organisations.
  await applyManifest(
    w.cp,
    tenantApi('a', 'a-orders', '  api_id: orders\n') +
      '---\n' +
      tenantApi('b', 'b-orders', '  api_id: orders\n') +
      '---\n' +
      tenantApi('b', 'b-only', ''),
  );
  for (const name of ['a-orders', 'b-orders', 'b-only']) {
    await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name });
  }
  // No gateway loads these organisations (the suite's gateway loads the default one only).
  const unserved = await statusOf(w.cp, 'apidefinition', 'shop', 'a-orders');
  assert.equal(
    readyOf(unserved)?.message,
    `API orders is held by the dashboard ${dashboard.url} in organisation ${a.org}; no gateway of this organisation is connected to the dashboard: it is not served yet (at /orders/ once one connects)`,
  );
  const get = (t: DashboardTenant, id: string): ReturnType<typeof dashboardCall> =>
    dashboardCall(dashboard.url, 'GET', `/api/apis/${id}`, { auth: t.reader.key });
  for (const t of [a, b]) {
    const r = await get(t, 'orders');
    assert.equal(r.status, 200, r.text);
    const def = r.body.api_definition as { org_id?: string };
    assert.equal(def.org_id, t.org, `orders of ${t.org} filed in its own organisation`);
    assert.deepEqual(r.body.user_owners, [t.reader.id], 'user_owners from the context');
    const list = await dashboardCall(dashboard.url, 'GET', '/api/apis', { auth: t.reader.key });
    const ids = (list.body.apis as { api_definition: { api_id: string } }[]).map(
      (x) => x.api_definition.api_id,
    );
    const want = t === a ? ['orders'] : ['orders', derivedId('shop', 'b-only')];
    assert.deepEqual(ids.sort(), want.sort(), `only the APIs of ${t.org}`);
  }
  const bOnly = derivedId('shop', 'b-only');
  assert.equal((await get(a, bOnly)).status, 404, "B's API is not visible to A");
  assert.equal((await get(tenant, 'orders')).status, 404, 'nor to the default organisation');

  // A policy of A naming B's API: the dashboard refuses it, nothing lands in A or B.
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: cross, namespace: shop}
spec:
  name: cross
  contextRef: {name: ctx-a}
  access_rights_array: [{name: b-only}]
`,
  );
  const refused = await waitForStatus(
    w.cp,
    { kind: 'securitypolicy', ns: 'shop', name: 'cross' },
    'refused',
    (st) =>
      readyOf(st)?.status === 'False' &&
      (readyOf(st)?.message ?? '').includes('not found in your organisation'),
  );
  assert.equal(refused.pushedTo, undefined);
  for (const t of [a, b]) {
    const pols = await dashboardCall(dashboard.url, 'GET', '/api/portal/policies', { auth: t.reader.key });
    assert.equal(pols.status, 200, pols.text);
    assert.deepEqual(pols.body.Data, [], `no policy in ${t.org}`);
  }
  await w.cp.kubectl(['delete', 'securitypolicy', 'cross', '-n', 'shop', '--wait=true', '--timeout=30s']);

  // Deleting A's API leaves B's, with the same ID, intact.
  await w.cp.kubectl(['delete', 'apidefinition', 'a-orders', '-n', 'shop', '--wait=true', '--timeout=30s']);
  assert.equal((await get(a, 'orders')).status, 404, "A's orders deleted");
  const kept = await get(b, 'orders');
  assert.equal(kept.status, 200, kept.text);
  assert.equal((kept.body.api_definition as { org_id?: string }).org_id, b.org);
});

test("pro: an ApiKey is filed in its connection's organisation: the pro operator's, or an OperatorContext's", async () => {
  const b = await createTenant(dashboard.url, 'tenant-keys');
  await applyManifest(w.cp, contextManifest('keys', b));
  await waitReady(w.cp, { kind: 'operatorcontext', ns: 'shop', name: 'ctx-keys' });
  const keysOf = async (t: DashboardTenant): Promise<string[]> => {
    const r = await dashboardCall(dashboard.url, 'GET', '/api/keys?p=-1', { auth: t.reader.key });
    assert.equal(r.status, 200, r.text);
    return (r.body.data as { keys: string[] }).keys;
  };
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: pro-key, namespace: shop}
spec:
  alias: pro key
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: ctx-key, namespace: shop}
spec:
  contextRef: {name: ctx-keys}
`,
  );
  const [mine, other] = [
    await waitReady(w.cp, { kind: 'apikey', ns: 'shop', name: 'pro-key' }),
    await waitReady(w.cp, { kind: 'apikey', ns: 'shop', name: 'ctx-key' }),
  ];
  assert.ok((await keysOf(tenant)).includes(String(mine.keyHash)));
  assert.ok(!(await keysOf(tenant)).includes(String(other.keyHash)));
  assert.ok((await keysOf(b)).includes(String(other.keyHash)));
  assert.ok(!(await keysOf(b)).includes(String(mine.keyHash)));
  for (const name of ['pro-key', 'ctx-key']) {
    await w.cp.kubectl(['delete', 'apikey', name, '-n', 'shop', '--wait=true', '--timeout=30s']);
  }
  assert.ok(!(await keysOf(tenant)).includes(String(mine.keyHash)), 'deleted from the dashboard');
  assert.ok(!(await keysOf(b)).includes(String(other.keyHash)));
});

test('pro: an SvcOasApiDefinition is served by the pro gateway', async () => {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '1.0.0' },
    paths: {},
    'x-svc-api-gateway': {
      info: { name: 'petstore', state: { active: true } },
      upstream: { url: w.upstream.url },
      server: { listenPath: { value: '/pets/', strip: true } },
    },
  };
  await applyManifest(
    w.cp,
    `apiVersion: v1
kind: ConfigMap
metadata: {name: petstore-oas, namespace: shop}
data:
  oas.json: ${JSON.stringify(JSON.stringify(doc))}
---
apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata: {name: petstore, namespace: shop}
spec:
  svcOAS:
    configmapRef: {name: petstore-oas, keyName: oas.json}
`,
  );
  const oas = await waitReady(w.cp, { kind: 'svcoasapidefinition', ns: 'shop', name: 'petstore' });
  assert.match(
    readyOf(oas)?.message ?? '',
    new RegExp(
      `held by the dashboard .* in organisation ${tenant.org}; served at /pets/ by 1 gateway connected to it`,
    ),
  );
  const held = await dashboardCall(dashboard.url, 'GET', `/api/apis/oas/${derivedId('shop', 'petstore')}`, {
    auth: tenant.reader.key,
  });
  assert.equal(held.status, 200, held.text);
  await served('/pets/dogs', 200);
  const r = await httpRequest(`${gw.url}/pets/dogs`);
  assert.equal(r.status, 200);
  assert.match(r.body, /"\/dogs"/, 'the listen path stripped');
});

test('pro: the dashboard restarts while the gateway keeps serving', async () => {
  await dashboard.stop();
  assert.equal(await call('/catalog/x'), 401, 'the API is still served (a key is required)');
  dashboard = await startDb();
  const r = await dashboardCall(dashboard.url, 'GET', '/api/apis', { auth: tenant.reader.key });
  assert.equal(r.status, 200, r.text);
});
