/**
 * The screenshots of docs/dashboard.md (docs/images/dashboard-*.png), taken from real processes:
 * a dashboard (SQLite) and a gateway in mode pro serving an organisation's APIs (one with
 * `enable_detailed_recording`), a policy with a quota, keys made from it, users, and real traffic
 * through the gateway (answered, refused for the key, its rate and its quota), then the web UI in
 * headless Chromium (Debian's /usr/bin/chromium) at 1000 x 720 pixels.
 *
 *   node e2e/runtime/dashboard-screenshots.ts [output directory, default docs/images]
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Locator } from 'playwright-core';
import { createTenant, dashboardCall, startDashboardProc } from '../harness/dashboard.ts';
import { httpRequest, startEchoUpstream, startGateway, waitFor } from '../harness/processes.ts';

const NODE_SECRET = 'screenshots-node-secret-0123';
const out = process.argv[2] ?? join(import.meta.dirname, '..', '..', 'docs', 'images');
const dir = mkdtempSync(join(tmpdir(), 'svc-screenshots-'));
mkdirSync(out, { recursive: true });

const upstream = await startEchoUpstream();
const dashboard = await startDashboardProc({
  name: 'dashboard-screenshots',
  logDir: dir,
  dataDir: join(dir, 'dashboard'),
  args: ['--node-secret', NODE_SECRET],
});
const stops: (() => Promise<void>)[] = [() => dashboard.stop(), () => upstream.close()];
try {
  const t = await createTenant(dashboard.url, 'acme');
  const call = async (method: string, path: string, body: unknown): Promise<Record<string, unknown>> => {
    const r = await dashboardCall(dashboard.url, method, path, { auth: t.system.key, body });
    assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
    return r.body;
  };
  for (const [id, keyless, detailed] of [
    ['orders', false, true],
    ['catalogue', true, false],
    ['billing', false, false],
  ] as const) {
    await call('POST', '/api/apis', {
      api_definition: {
        api_id: id,
        name: id,
        use_keyless: keyless,
        enable_detailed_recording: detailed,
        proxy: { listen_path: `/${id}/`, target_url: upstream.url, strip_listen_path: true },
      },
    });
  }
  await call('POST', '/api/portal/policies', {
    id: 'partner',
    name: 'partner',
    state: 'active',
    rate: 20,
    per: 1,
    quota_max: 200,
    quota_renewal_rate: 3600,
    access_rights: {
      orders: { api_id: 'orders', api_name: 'orders', versions: ['Default'] },
      billing: { api_id: 'billing', api_name: 'billing', versions: ['Default'] },
    },
  });
  const keys: string[] = [];
  for (const alias of ['web-shop', 'mobile-app', 'reporting']) {
    keys.push(String((await call('POST', '/api/keys', { alias, apply_policies: ['partner'] })).key_id));
  }
  for (const [email, perms] of [
    ['analyst@acme.example.com', { analytics: 'read', apis: 'read' }],
    ['ops@acme.example.com', { apis: 'write', keys: 'write', policies: 'write', analytics: 'read' }],
  ] as const) {
    await dashboardCall(dashboard.url, 'POST', '/admin/users', {
      admin: true,
      body: { org_id: t.org, email_address: email, user_permissions: perms },
    });
  }
  const gw = await startGateway({
    name: 'gw-screenshots',
    secret: 'screenshots-secret',
    dataDir: join(dir, 'gw'),
    logDir: dir,
    env: {
      SVC_GW_DASHBOARD_URL: dashboard.url,
      SVC_GW_NODE_SECRET: NODE_SECRET,
      SVC_GW_DASHBOARD_ORGS: t.org,
      SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200',
    },
  });
  stops.unshift(() => gw.stop());
  await waitFor('the catalogue API', async () => (await httpRequest(`${gw.url}/catalogue/x`)).status === 200);
  // Traffic: keyless reads, keyed orders (some over the key's rate), unauthenticated calls.
  for (let i = 0; i < 60; i++) await httpRequest(`${gw.url}/catalogue/items/${String(1000 + i)}`);
  for (const [n, key] of keys.entries()) {
    for (let i = 0; i < 15 + 10 * n; i++) {
      await httpRequest(`${gw.url}/orders/orders/${String(i + 1)}?expand=lines`, {
        method: i % 3 === 0 ? 'POST' : 'GET',
        headers: { authorization: key, 'content-type': 'application/json' },
        ...(i % 3 === 0 ? { body: JSON.stringify({ item: `sku-${String(i)}`, quantity: 1 + (i % 4) }) } : {}),
      });
    }
    for (let i = 0; i < 5; i++)
      await httpRequest(`${gw.url}/billing/invoices`, { headers: { authorization: key } });
  }
  for (let i = 0; i < 8; i++) await httpRequest(`${gw.url}/billing/invoices`);
  await waitFor('the records in the dashboard', async () => {
    const r = await dashboardCall(dashboard.url, 'GET', '/api/analytics/traffic', { auth: t.system.key });
    return ((r.body.totals as { requests: number } | undefined)?.requests ?? 0) >= 150;
  });

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
    /** The top `height` pixels at most of an element, from the whole page. */
    const clipped = async (el: Locator, path: string, height: number): Promise<void> => {
      // The view may be drawn again (its live refresh) between finding the element and measuring it.
      const box = await waitFor('the element drawn', async () => (await el.boundingBox()) ?? undefined);
      const scroll = await page.evaluate<number>('window.scrollY');
      await page.screenshot({
        path,
        fullPage: true,
        clip: { x: box.x, y: box.y + scroll, width: box.width, height: Math.min(box.height, height) },
      });
    };
    await page.goto(`${dashboard.url}/ui/#apis`);
    await page.fill('#key', t.system.key);
    await page.click('#sign-in button[type=submit]');
    const shots: [string, string, string][] = [
      ['analytics', '#analytics?range=1h', '[data-testid=chart-requests] canvas'],
      ['request-log', '#analytics?range=1h&api=orders', '[data-testid=request-log] tbody tr'],
      ['quotas', '#analytics?range=1h', '[data-testid=chart-quotas-table]'],
      ['apis', '#apis', '[data-testid=apis]'],
      ['keys', '#keys', '[data-testid=keys]'],
      ['policies', '#policies', '#policy-form'],
      ['users', '#users', '#user-form'],
    ];
    for (const [name, hash, ready] of shots) {
      await page.goto(`${dashboard.url}/ui/${hash}`);
      await page.locator(ready).first().waitFor();
      const file = join(out, `dashboard-${name}.png`);
      if (name === 'request-log') {
        // The log itself, the bodies of its newest request that sent one unfolded.
        const log = page.locator('[data-testid=request-log]');
        const row = log
          .locator('tbody tr', { has: page.locator('[data-testid=request-body] summary') })
          .first();
        await row.locator('[data-testid=request-body] summary').click();
        await row.locator('[data-testid=response-body] summary').click();
        // Its first rows only (the log holds 50).
        await clipped(log, file, 640);
      } else if (name === 'quotas') {
        await clipped(page.locator('[data-testid=chart-quotas]'), file, 640);
      } else await page.screenshot({ path: file });
      console.log(file);
    }
  } finally {
    await browser.close();
  }
} finally {
  for (const stop of stops) await stop();
}
