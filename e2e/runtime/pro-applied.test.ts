/**
 * Mode pro, what the gateways serve, with real processes: a dashboard (SQLite) and two gateways
 * loading one organisation from it. Each gateway reports to the dashboard the revision of every
 * API and policy it serves (`POST /system/applied`); the operator's dashboard client reads them
 * (`GET /api/nodes/{apis|policies}/{id}`) and the status it writes from them says `Programmed`
 * when both serve the revision pushed, `Pending` naming them otherwise, and drops a gateway that
 * stopped with a `GatewayDropped` event.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcObject } from '../../lib/k8s/objects.ts';
import { DashboardClient } from '../../operator/clients/dashboard.ts';
import type { AppliedBy, AppliedOf } from '../../operator/clients/management.ts';
import { reportApiSynced } from '../../operator/controllers/served.ts';
import { NOW, fakeEvents, fakeObjects, readyOf } from '../../operator/controllers/testing.ts';
import { hashOf } from '../../operator/ids.ts';
import type { GatewayApiDefinition, GatewayPolicy } from '../../schemas/generated/models.ts';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const NODE_SECRET = 'e2e-applied-node-secret-0123';
let world: ProWorld;
let tenant: DashboardTenant;
let client: DashboardClient;

before(async () => {
  world = await startProWorld({ name: 'applied', nodeSecret: NODE_SECRET });
  tenant = await world.tenant('applied-org');
  for (const name of ['gw-a', 'gw-b']) {
    await world.startGateway({
      name,
      secret: 'applied-gateway-secret',
      org: tenant.org,
      env: { SVC_GW_NODE_HEARTBEAT_INTERVAL_MS: '200' },
    });
  }
  client = new DashboardClient({
    mode: 'pro',
    url: world.dashboard.url,
    auth: tenant.system.key,
    org: tenant.org,
    insecureSkipVerify: false,
  });
});

after(async () => {
  await stopAll(client, world);
});

/** The gateways the dashboard lists for `of` once each serves `revision` (all `count` of them). */
async function servedBy(of: AppliedOf, revision: string | undefined, count: number): Promise<AppliedBy[]> {
  let last: AppliedBy[] | undefined;
  return waitFor(
    `${String(count)} gateways serving ${of.kind}/${of.id} at ${String(revision)} (last ${JSON.stringify(last)})`,
    async () => {
      last = await client.appliedBy(of);
      return last?.length === count && last.every((g) => g.revision === revision) ? last : undefined;
    },
    20_000,
  );
}

const API_ID = 'applied';
const api = (listenPath: string): GatewayApiDefinition => ({
  api_id: API_ID,
  name: API_ID,
  org_id: tenant.org,
  use_keyless: true,
  proxy: { listen_path: listenPath, target_url: world.upstream.url, strip_listen_path: true },
});

test('every gateway reports to the dashboard the revision of each API and policy it serves', async () => {
  await client.createApi(api('/applied/'));
  const revision = hashOf(await client.getApi(API_ID));
  const both = await servedBy({ kind: 'apis', id: API_ID }, revision, 2);
  assert.equal(new Set(both.map((g) => g.name)).size, 2, 'two gateways, each named');
  for (const g of both) assert.ok(!Number.isNaN(Date.parse(g.appliedAt ?? '')), `${g.name} applied_at`);
  for (const g of world.gateways) assert.equal((await httpRequest(`${g.url}/applied/x`)).status, 200, g.url);

  // A policy: applied once each gateway has forgotten the one before (no reload of its routes).
  const policy = {
    id: 'applied-pol',
    name: 'applied-pol',
    org_id: tenant.org,
    rate: 10,
    per: 1,
    quota_max: -1,
    access_rights: { [API_ID]: { api_id: API_ID, api_name: API_ID, versions: ['Default'] } },
  } as unknown as GatewayPolicy;
  await client.createPolicy(policy);
  const pol = { kind: 'policies', id: 'applied-pol' } as const;
  const first = hashOf(await client.getPolicy(pol.id));
  await servedBy(pol, first, 2);
  await client.updatePolicy(pol.id, { ...policy, rate: 20 });
  const second = hashOf(await client.getPolicy(pol.id));
  assert.notEqual(second, first);
  await servedBy(pol, second, 2);

  // Read as the dashboard's users read: a user's key, read access to APIs (policies).
  const reader = await dashboardCall(world.dashboard.url, 'GET', `/api/nodes/apis/${API_ID}`, {
    auth: tenant.reader.key,
  });
  assert.equal(reader.status, 200, reader.text);
  const anonymous = await dashboardCall(world.dashboard.url, 'GET', `/api/nodes/policies/${pol.id}`);
  assert.equal(anonymous.status, 401, anonymous.text);
});

test("the operator's status in mode pro: Programmed when both serve, Pending naming them, a stopped one dropped", async () => {
  const revision = hashOf(await client.getApi(API_ID));
  const both = await servedBy({ kind: 'apis', id: API_ID }, revision, 2);
  const names = both.map((g) => g.name).sort();
  const report = async (latestSvcSpecHash: string, before: { name: string }[] = []) => {
    const objects = fakeObjects<SvcObject<unknown, Record<string, unknown>>>();
    const events = fakeEvents();
    const obj: SvcObject<unknown, Record<string, unknown>> = {
      metadata: { name: 'applied', namespace: 'shop', uid: 'u1', generation: 1 },
      spec: {},
      status: { gateways: before },
    };
    await reportApiSynced(
      obj,
      { latestSvcSpecHash },
      {
        apiId: API_ID,
        client,
        org: tenant.org,
        api: { proxy: { listen_path: '/applied/' } },
        action: undefined,
      },
      { objects, events, now: () => NOW },
    );
    const status = objects.statuses.at(-1) as {
      gateways?: { name: string; revision?: string }[];
      conditions?: { type: string; status: string; reason: string }[];
    };
    const ready = readyOf(status);
    assert.ok(ready, 'a Ready condition');
    return { status, ready, events: events.lines };
  };

  const served = await report(revision);
  assert.equal(served.ready.status, 'True', served.ready.message);
  assert.match(
    served.ready.message,
    new RegExp(
      `^API applied is held by the dashboard .* in organisation ${tenant.org}; served at /applied/ by 2 gateways connected to it: .*; revision ${revision.slice(0, 12)} served by all 2 gateways: ${names.join(', ')}$`,
    ),
  );
  assert.equal(served.status.conditions?.find((c) => c.type === 'Programmed')?.status, 'True');
  assert.deepEqual(
    served.status.gateways?.map((g) => `${g.name} ${String(g.revision === revision)}`),
    names.map((n) => `${n} true`),
  );

  // A revision no gateway serves (a push not loaded yet): Pending, naming both.
  const pending = await report('f'.repeat(64));
  assert.equal(pending.ready.status, 'False');
  assert.equal(pending.ready.reason, 'Pending');
  assert.match(pending.ready.message, new RegExp(`waiting for 2 of 2 gateways .*: ${names.join(', ')}$`));

  // gw-b stops: it leaves with its notification stream; the status waits for gw-a alone.
  const [stopped] = world.gateways.splice(1, 1);
  assert.ok(stopped);
  await stopped.stop();
  const one = await servedBy({ kind: 'apis', id: API_ID }, revision, 1);
  const gone = names.find((n) => n !== one[0]?.name) ?? '';
  const after = await report(
    revision,
    names.map((name) => ({ name })),
  );
  assert.equal(after.ready.status, 'True', after.ready.message);
  assert.match(after.ready.message, /served by its one gateway/);
  assert.deepEqual(after.events, [
    `Warning GatewayDropped: gateway ${gone} left the registry of the gateways connected to the dashboard ${world.dashboard.url} (stopped, or disconnected): API applied no longer waits for it`,
  ]);
});

test('a restarted dashboard knows what the gateway serves again once it reconnects', async () => {
  const revision = hashOf(await client.getApi(API_ID));
  await servedBy({ kind: 'apis', id: API_ID }, revision, 1);
  await world.dashboard.stop();
  await world.startDashboard();
  // The gateway registers again and opens its stream: it reports in full at once.
  const again = await servedBy({ kind: 'apis', id: API_ID }, revision, 1);
  assert.ok(again[0]?.appliedAt !== undefined);
  await servedBy({ kind: 'policies', id: 'applied-pol' }, hashOf(await client.getPolicy('applied-pol')), 1);
});

test('the dashboard takes reports only from a registered node, in full first', async () => {
  const headers = { 'x-svc-node-secret': NODE_SECRET };
  const post = async (path: string, body: unknown, extra: Record<string, string> = {}) => {
    const r = await httpRequest(`${world.dashboard.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', ...extra },
      body: JSON.stringify(body),
    });
    return { status: r.status, text: r.body };
  };
  const registered = await post('/system/nodes', { hostname: 'probe', version: '0', orgs: [tenant.org] });
  assert.equal(registered.status, 200, registered.text);
  const nodeId = (JSON.parse(registered.text) as { Meta: { node_id: string } }).Meta.node_id;
  const rev = { revision: 'a'.repeat(64), applied_at: new Date().toISOString() };
  const cases: { name: string; id?: string; secret?: string; body: unknown; status: number; text: RegExp }[] =
    [
      { name: 'no node ID', body: { full: true }, status: 404, text: /Node not registered/ },
      { name: 'unknown node', id: 'nope', body: { full: true }, status: 404, text: /Node not registered/ },
      {
        name: 'wrong secret',
        id: nodeId,
        secret: 'wrong',
        body: { full: true },
        status: 401,
        text: /node secret/,
      },
      {
        name: 'a change before the full report',
        id: nodeId,
        body: { apis: { x: rev } },
        status: 409,
        text: /full/,
      },
      {
        name: 'bad revision',
        id: nodeId,
        body: { full: true, apis: { x: 1 } },
        status: 400,
        text: /apis\.x: /,
      },
      {
        name: 'in full',
        id: nodeId,
        body: { full: true, name: 'probe:1', apis: { x: rev } },
        status: 200,
        text: /OK/,
      },
      {
        name: 'then a change',
        id: nodeId,
        body: { policies: { p: rev }, apis: { x: null } },
        status: 200,
        text: /OK/,
      },
    ];
  for (const c of cases) {
    const r = await post('/system/applied', c.body, {
      ...(c.id === undefined ? {} : { 'x-svc-node-id': c.id }),
      ...(c.secret === undefined ? {} : { 'x-svc-node-secret': c.secret }),
    });
    assert.equal(r.status, c.status, `${c.name}: ${r.text}`);
    assert.match(r.text, c.text, c.name);
  }
});
