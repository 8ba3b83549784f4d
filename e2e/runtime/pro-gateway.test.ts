/**
 * Gateways in mode pro, with real processes: a dashboard (SQLite) and a gateway started with
 * `--dashboard URL --node-secret ...`. The gateway loads its organisation's APIs (classic and
 * OAS) and policies from the dashboard, serves keys created there, refuses writes to its own
 * `/svc/apis`, follows changes through the notification stream, keeps serving while the dashboard
 * is down, starts from its snapshot when the dashboard is unreachable, and picks up changes once
 * the dashboard is back.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { oasDocument } from '../../schemas/testing.ts';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';

const NODE_SECRET = 'e2e-node-secret-0123456789';
const GW_SECRET = 'pro-gateway-secret';
let w: ProWorld;
let a: DashboardTenant;
let b: DashboardTenant;

async function startProGateway(name: string, dataDir: string, wait = true): Promise<GatewayProc> {
  const g = await w.startGateway({ name, secret: GW_SECRET, org: a.org, dataDir, pollMs: 300 });
  if (wait) await waitStatus(g, '/classic/', 200);
  return g;
}

async function get(g: GatewayProc, path: string, headers: Record<string, string> = {}): Promise<number> {
  try {
    return (await httpRequest(g.url + path, { headers })).status;
  } catch {
    return 0;
  }
}

async function waitStatus(
  g: GatewayProc,
  path: string,
  status: number,
  headers: Record<string, string> = {},
): Promise<void> {
  let last = 0;
  await waitFor(
    `${path} to answer ${status} (last ${last})`,
    async () => {
      last = await get(g, path, headers);
      return last === status;
    },
    20_000,
  );
}

const classic = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  api_definition: {
    api_id: name,
    name,
    use_keyless: true,
    proxy: { listen_path: `/${name}/`, target_url: w.upstream.url, strip_listen_path: true },
    ...extra,
  },
});

before(async () => {
  w = await startProWorld({ name: 'gw', nodeSecret: NODE_SECRET });
  a = await w.tenant('pro-a');
  b = await w.tenant('pro-b');
  await w.write(a, 'POST', '/api/apis', classic('classic'));
  await w.write(a, 'POST', '/api/apis', classic('keyed', { use_keyless: false }));
  await w.write(
    a,
    'POST',
    '/api/apis/oas',
    oasDocument({
      id: 'petstore',
      name: 'petstore',
      listenPath: '/oas/',
      target: w.upstream.url,
      strip: true,
    }),
  );
  await w.write(a, 'POST', '/api/portal/policies', {
    id: 'pol',
    name: 'pol',
    state: 'active',
    rate: 100,
    per: 60,
    quota_max: -1,
    access_rights: { keyed: { api_id: 'keyed', api_name: 'keyed', versions: ['Default'] } },
  });
  await w.write(b, 'POST', '/api/apis', classic('other'));
});

after(() => w.stop());

test('pro gateway: node secret checked, node registered', async () => {
  const bad = await httpRequest(`${w.dashboard.url}/system/config`, {
    headers: { 'x-svc-node-secret': 'nope' },
  });
  assert.equal(bad.status, 401);
  const g = await startProGateway('gw-1', join(w.dir, 'gw-1'));
  const nodes = await dashboardCall(w.dashboard.url, 'GET', '/admin/nodes', { admin: true });
  assert.equal(nodes.status, 200);
  const list = nodes.body.nodes as { orgs: string[] }[];
  assert.ok(
    list.some((n) => n.orgs.includes(a.org)),
    nodes.text,
  );
  assert.ok(g.pid > 0);
});

test("pro gateway: /api/nodes names the gateways connected for the caller's organisation; one that stops leaves the list", async () => {
  const g = w.gateways[0] ?? (await startProGateway('gw-1', join(w.dir, 'gw-1')));
  const serving = async (t: DashboardTenant): Promise<{ hostname: string }[]> => {
    const r = await dashboardCall(w.dashboard.url, 'GET', '/api/nodes', { auth: t.reader.key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.org, t.org);
    return r.body.nodes as { hostname: string }[];
  };
  await waitFor(`${g.name}'s notification stream`, async () => (await serving(a)).length === 1);
  assert.deepEqual(
    (await serving(a)).map((n) => n.hostname),
    [hostname()],
  );
  assert.deepEqual(await serving(b), [], 'no gateway loads the other organisation');
  const extra = await startProGateway('gw-extra', join(w.dir, 'gw-extra'));
  await waitFor('two gateways connected', async () => (await serving(a)).length === 2);
  await extra.stop();
  w.gateways.splice(w.gateways.indexOf(extra), 1);
  await waitFor('the stopped gateway gone from the list', async () => (await serving(a)).length === 1);
  const anonymous = await dashboardCall(w.dashboard.url, 'GET', '/api/nodes', {});
  assert.equal(anonymous.status, 401);
});

test('pro gateway: serves its organisation only, classic and OAS; policies apply to keys from the dashboard', async () => {
  const g = w.gateways[0] ?? (await startProGateway('gw-1', join(w.dir, 'gw-1')));
  assert.equal(await get(g, '/classic/x'), 200);
  assert.equal(await get(g, '/oas/x'), 200);
  assert.equal(await get(g, '/other/x'), 404, "another organisation's API is not served");
  assert.equal(await get(g, '/keyed/x'), 401);
  const key = await dashboardCall(w.dashboard.url, 'POST', '/api/keys', {
    auth: a.system.key,
    body: { apply_policies: ['pol'] },
  });
  assert.equal(key.status, 200, key.text);
  const raw = String(key.body.key_id);
  await waitStatus(g, '/keyed/x', 200, { authorization: raw });
  // Deleted in the dashboard: the notification makes the gateway forget it.
  const del = await dashboardCall(w.dashboard.url, 'DELETE', `/api/keys/${raw}`, { auth: a.system.key });
  assert.equal(del.status, 200, del.text);
  await waitFor('the deleted key to be refused', async () => {
    const s = await get(g, '/keyed/x', { authorization: raw });
    return s === 401 || s === 403;
  });
});

test('pro gateway: its own API writes are refused, naming mode pro', async () => {
  const g = w.gateways[0] ?? (await startProGateway('gw-1', join(w.dir, 'gw-1')));
  const r = await httpRequest(`${g.url}/svc/apis`, {
    method: 'POST',
    headers: { 'x-svc-authorization': GW_SECRET, 'content-type': 'application/json' },
    body: JSON.stringify(classic('local').api_definition),
  });
  assert.equal(r.status, 403, r.body);
  assert.match(r.body, /mode pro/);
});

test('pro gateway: a change in the dashboard is served without polling delay', async () => {
  const g = w.gateways[0] ?? (await startProGateway('gw-1', join(w.dir, 'gw-1')));
  const r = await dashboardCall(w.dashboard.url, 'POST', '/api/apis', {
    auth: a.system.key,
    body: classic('added'),
  });
  assert.equal(r.status, 200, r.text);
  await waitStatus(g, '/added/x', 200);
  assert.match(g.log(), /dashboard notifications open/);
  const d = await dashboardCall(w.dashboard.url, 'DELETE', '/api/apis/added', { auth: a.system.key });
  assert.equal(d.status, 200, d.text);
  await waitStatus(g, '/added/x', 404);
});

test('pro gateway: dashboard down, the gateway serves; restarted from its snapshot; picks up changes when back', async () => {
  const g = w.gateways[0] ?? (await startProGateway('gw-1', join(w.dir, 'gw-1')));
  await w.dashboard.stop();
  assert.equal(await get(g, '/classic/x'), 200);
  assert.equal(await get(g, '/oas/x'), 200);
  // A gateway restarted while the dashboard is unreachable serves its last snapshot.
  await g.stop();
  w.gateways.shift();
  const g2 = await startProGateway('gw-2', join(w.dir, 'gw-1'));
  assert.equal(await get(g2, '/oas/x'), 200);
  // The dashboard comes back (same port, same data): a change reaches the gateway.
  await w.startDashboard();
  const r = await dashboardCall(w.dashboard.url, 'POST', '/api/apis', {
    auth: a.system.key,
    body: classic('later'),
  });
  assert.equal(r.status, 200, r.text);
  await waitStatus(g2, '/later/x', 200);
});
