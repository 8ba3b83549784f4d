/**
 * A key's quota reset in the dashboard reaches the gateways' counters, with real processes: a
 * dashboard (SQLite) and a gateway in mode pro on a Redis store (where the gateway counts). A
 * key with a quota of 2 is refused at its third request (403 Quota exceeded); reset in the
 * dashboard (`POST /api/keys/{key}/reset`, the web UI's "reset quota"), its next requests pass
 * again, 2 of them, then it is refused again. Another organisation can't reset it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { startProWorld, writeApi, type ProWorld } from '../harness/pro.ts';

let world: ProWorld;
let gateway: GatewayProc;
let a: DashboardTenant;
let b: DashboardTenant;
let raw: string;

/** One request with the key: its status and body. */
const send = (): Promise<{ status: number; body: string }> =>
  httpRequest(`${gateway.url}/metered/get`, { headers: { authorization: raw } });

before(async () => {
  world = await startProWorld({
    name: 'quota-reset',
    nodeSecret: 'e2e-node-secret-quota-reset-0123',
    dashboardName: 'dashboard-quota-reset',
    upstream: 'metered',
    redis: true,
  });
  a = await world.tenant('reset-a');
  b = await world.tenant('reset-b');
  await writeApi(world, a, 'metered', { use_keyless: false });
  const key = await dashboardCall(world.dashboard.url, 'POST', '/api/keys', {
    auth: a.system.key,
    body: {
      alias: 'two-a-day',
      rate: 1000,
      per: 60,
      quota_max: 2,
      quota_renewal_rate: 86_400,
      access_rights: { metered: { api_id: 'metered', api_name: 'metered', versions: ['Default'] } },
    },
  });
  assert.equal(key.status, 200, key.text);
  raw = String(key.body.key_id);
  gateway = await world.startGateway({
    name: 'gw-quota-reset',
    secret: 'pro-gateway-quota-reset-secret',
    dataDir: `${world.dir}/gw`,
    org: a.org,
  });
  await waitFor('/metered/ loaded', async () => (await send()).status !== 404, 60_000);
});

after(() => world.stop());

test("a quota reset in the dashboard lets the key's requests through the gateway again", async () => {
  const statuses = async (n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await send()).status);
    return out;
  };
  // The wait above may have spent one request of the quota: at most 2 pass, then 403.
  const first = await statuses(3);
  assert.equal(first.at(-1), 403, JSON.stringify(first));
  const refused = await send();
  assert.equal(refused.status, 403);
  assert.match(refused.body, /Quota exceeded/);

  const other = await dashboardCall(world.dashboard.url, 'POST', `/api/keys/${raw}/reset`, {
    auth: b.system.key,
  });
  assert.equal(other.status, 404, `another organisation: ${other.text}`);
  assert.equal((await send()).status, 403, "another organisation's attempt reset nothing");

  const reset = await dashboardCall(world.dashboard.url, 'POST', `/api/keys/${raw}/reset`, {
    auth: a.system.key,
  });
  assert.equal(reset.status, 200, reset.text);
  await waitFor('the key to pass again', async () => (await send()).status === 200, 10_000);
  // The new period holds the key's full quota of 2: one more passes, then it is refused again.
  assert.deepEqual(await statuses(2), [200, 403]);
});
