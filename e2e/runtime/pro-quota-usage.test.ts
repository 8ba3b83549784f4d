/**
 * Quota usage per key (the Analytics tab's chart) from real gateway traffic: a gateway in mode
 * pro serves a key made from a policy with a quota of 10 per hour; after 4 requests,
 * `GET /api/analytics/quotas` answers 4 of 10 for that key (and nothing for another
 * organisation), and the web UI draws it in headless Chromium.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];

let world: ProWorld;
let gateway: GatewayProc;
let a: DashboardTenant;
let b: DashboardTenant;
let keyHash: string;

interface QuotaRow {
  key: string;
  alias: string;
  quota_max: number;
  used: number;
}

before(async () => {
  world = await startProWorld({
    name: 'quota-usage',
    nodeSecret: 'e2e-node-secret-0123456789',
    dashboardName: 'dashboard-quota-usage',
  });
  a = await world.tenant('qu-a');
  b = await world.tenant('qu-b');
  const call = async (method: string, path: string, body: unknown): Promise<Record<string, unknown>> => {
    const r = await dashboardCall(world.dashboard.url, method, path, { auth: a.system.key, body });
    assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
    return r.body;
  };
  await call('POST', '/api/apis', {
    api_definition: {
      api_id: 'metered',
      name: 'metered',
      use_keyless: false,
      proxy: { listen_path: '/metered/', target_url: world.upstream.url, strip_listen_path: true },
    },
  });
  await call('POST', '/api/portal/policies', {
    id: 'ten',
    name: 'ten',
    state: 'active',
    rate: 1000,
    per: 60,
    quota_max: 10,
    quota_renewal_rate: 3600,
    access_rights: { metered: { api_id: 'metered', api_name: 'metered', versions: ['Default'] } },
  });
  const key = await call('POST', '/api/keys', { alias: 'metered-partner', apply_policies: ['ten'] });
  const raw = String(key.key_id);
  keyHash = typeof key.key_hash === 'string' ? key.key_hash : '';
  gateway = await world.startGateway({
    name: 'gw-quota-usage',
    secret: 'quota-usage-secret',
    dataDir: `${world.dir}/gw`,
    org: a.org,
    env: { SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200' },
  });
  await waitFor(
    'the metered API',
    async () => (await httpRequest(`${gateway.url}/metered/x`)).status === 401,
  );
  for (let i = 0; i < 4; i++) {
    const r = await httpRequest(`${gateway.url}/metered/x`, { headers: { authorization: raw } });
    assert.equal(r.status, 200, r.body);
  }
});

after(async () => {
  await world.stop();
});

test("a key's requests in its quota period are answered against its maximum", async () => {
  const rows = await waitFor(
    'the dashboard to count the key 4 requests',
    async () => {
      const r = await dashboardCall(world.dashboard.url, 'GET', '/api/analytics/quotas', {
        auth: a.system.key,
      });
      assert.equal(r.status, 200, r.text);
      const keys = r.body.keys as QuotaRow[];
      return keys.length === 1 && keys[0]?.used === 4 ? keys : undefined;
    },
    60_000,
  );
  const [row] = rows;
  assert.ok(row !== undefined);
  assert.equal(row.quota_max, 10, "the policy's quota");
  assert.equal(row.alias, 'metered-partner');
  if (keyHash !== '') assert.equal(row.key, keyHash);
  const other = await dashboardCall(world.dashboard.url, 'GET', '/api/analytics/quotas', {
    auth: b.system.key,
  });
  assert.deepEqual(other.body.keys, [], 'another organisation sees none of it');
  const reader = await dashboardCall(world.dashboard.url, 'GET', '/api/analytics/quotas', {
    auth: a.reader.key,
  });
  assert.equal(reader.status, 403);
});

test('the web UI draws quota usage per key', async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    await page.goto(`${world.dashboard.url}/ui/#analytics`);
    await page.fill('#key', a.system.key);
    await page.click('#sign-in button[type=submit]');
    const table = page.locator('[data-testid=chart-quotas-table]');
    await table.waitFor();
    // The organisation's own series (no API or key chosen), named.
    assert.match(
      await page.locator('[data-testid=chart-requests] h3').innerText(),
      /^Requests and errors of organisation /,
    );
    assert.match(await table.innerText(), /metered-partner\s+4 \/ 10\s+40 %/);
    assert.equal(await table.locator('meter').getAttribute('value'), '4');
  } finally {
    await browser.close();
  }
});

test('a custom time range shows the traffic in it only', async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    await page.goto(`${world.dashboard.url}/ui/#analytics?api=metered`);
    await page.fill('#key', a.system.key);
    await page.click('#sign-in button[type=submit]');
    const total = page.locator('[data-testid=total-requests] strong');
    await total.waitFor();
    const now = Date.now();
    // datetime-local takes the browser's local time, as a user types it.
    const local = (ms: number): Promise<string> =>
      page.evaluate(
        (t) => new Date(t - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16),
        ms,
      );
    await page.selectOption('#analytics-range', 'custom');
    await page.fill('#analytics-from', await local(now - 3 * 3_600_000));
    await page.fill('#analytics-to', await local(now - 2 * 3_600_000));
    await page.click('#analytics-apply');
    await page.waitForURL(/range=custom/);
    await page.locator('[data-testid=total-requests] strong').getByText('0', { exact: true }).waitFor();
    await page.fill('#analytics-from', await local(now - 3_600_000));
    await page.fill('#analytics-to', await local(now + 120_000));
    await page.click('#analytics-apply');
    // The 4 answered requests and the 401 the gateway answered before the key was used.
    await waitFor('the range holding the traffic', async () => {
      const n = Number(await page.locator('[data-testid=total-requests] strong').textContent());
      return n >= 5 ? n : undefined;
    });
    assert.match(page.url(), /range=custom&.*from=.*to=/);
  } finally {
    await browser.close();
  }
});
