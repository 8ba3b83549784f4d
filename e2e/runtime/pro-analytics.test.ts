/**
 * Traffic analytics with real processes, on each storage of the dashboard (SQLite, then
 * PostgreSQL): two gateways in mode pro serve an organisation's APIs and send their request
 * records to the dashboard; `GET /api/analytics/traffic` answers the counts of the traffic sent
 * (per API, errors, refusals by reason, top keys with their alias, endpoints as path templates),
 * to the organisation's users with the analytics permission only, and the web UI draws it in
 * headless Chromium (uPlot charts, the tables behind them). A gateway whose buffer is full
 * keeps answering and counts the records it dropped on `/metrics`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';
import { launchChromium, withoutChromium } from '../../dashboard/testing/browser.ts';
import { freePort, httpRequest, startGateway, waitFor, type GatewayProc } from '../harness/processes.ts';

const NODE_SECRET = 'e2e-node-secret-0123456789';
const GW_SECRET = 'pro-analytics-secret';

interface Traffic {
  totals: { requests: number; errors: number; latency_p50_ms: number; latency_p99_ms: number };
  apis: { api_id: string; requests: number; errors: number }[];
  refusals: { reason: string; requests: number }[];
  top_keys: { key: string; alias: string; requests: number; errors: number }[];
  top_endpoints: { api_id: string; endpoint: string; requests: number }[];
  series: { at: number; requests: number }[];
}

for (const storage of ['sqlite', 'postgres'] as const) {
  describe(`analytics from pro gateways (${storage})`, () => {
    let w: ProWorld;
    let a: DashboardTenant;
    let b: DashboardTenant;
    let keyAnalyst: string;

    const startProGateway = async (name: string, env: Record<string, string> = {}): Promise<GatewayProc> => {
      const g = await w.startGateway({
        name,
        secret: GW_SECRET,
        org: a.org,
        env: { SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200', ...env },
      });
      await waitFor(`${name} /ready`, async () => (await httpRequest(`${g.url}/ready`)).status === 200);
      return g;
    };

    const traffic = async (key: string, query = ''): Promise<{ status: number; body: Traffic }> => {
      const r = await dashboardCall(w.dashboard.url, 'GET', `/api/analytics/traffic${query}`, { auth: key });
      return { status: r.status, body: r.body as unknown as Traffic };
    };

    before(async () => {
      w = await startProWorld({
        name: `analytics-${storage}`,
        nodeSecret: NODE_SECRET,
        storage,
        dashboardName: `dashboard-${storage}`,
        database: 'analytics',
      });
      a = await w.tenant('an-a');
      b = await w.tenant('an-b');
      const api = (name: string, keyless: boolean): Record<string, unknown> => ({
        api_definition: {
          api_id: name,
          name,
          use_keyless: keyless,
          proxy: { listen_path: `/${name}/`, target_url: w.upstream.url, strip_listen_path: true },
        },
      });
      await w.write(a, 'POST', '/api/apis', api('open', true));
      await w.write(a, 'POST', '/api/apis', api('keyed', false));
      await w.write(a, 'POST', '/api/portal/policies', {
        id: 'three',
        name: 'three',
        state: 'active',
        rate: 3,
        per: 60,
        quota_max: -1,
        access_rights: { keyed: { api_id: 'keyed', api_name: 'keyed', versions: ['Default'] } },
      });
      const analyst = await dashboardCall(w.dashboard.url, 'POST', '/admin/users', {
        admin: true,
        body: {
          org_id: a.org,
          email_address: `analyst@${a.org}.example.com`,
          user_permissions: { analytics: 'read' },
        },
      });
      assert.equal(analyst.status, 200, analyst.text);
      keyAnalyst = String((analyst.body.Meta as Record<string, unknown>).access_key);
    });

    after(() => w.stop());

    test('records from two gateways are aggregated and answered per API, key, endpoint and reason', async () => {
      const g1 = await startProGateway(`gw-1-${storage}`);
      const g2 = await startProGateway(`gw-2-${storage}`);
      const key = await dashboardCall(w.dashboard.url, 'POST', '/api/keys', {
        auth: a.system.key,
        body: { alias: 'partner', apply_policies: ['three'] },
      });
      assert.equal(key.status, 200, key.text);
      const raw = String(key.body.key_id);
      const send = async (
        g: GatewayProc,
        path: string,
        headers: Record<string, string> = {},
      ): Promise<number> => (await httpRequest(g.url + path, { headers })).status;

      // gateway 1: 5 keyless requests on IDs that differ (one endpoint template)
      for (const id of ['123', '456', '789', '1011', '1213'])
        assert.equal(await send(g1, `/open/users/${id}`), 200);
      // gateway 2: 2 requests without a key (401), 3 with it (200), a 4th over its rate (429)
      assert.equal(await send(g2, '/keyed/items'), 401);
      assert.equal(await send(g2, '/keyed/items'), 401);
      for (let i = 0; i < 3; i++) assert.equal(await send(g2, '/keyed/items', { authorization: raw }), 200);
      assert.equal(await send(g2, '/keyed/items', { authorization: raw }), 429);

      const t = await waitFor(
        'the dashboard to count the 11 requests',
        async () => {
          const r = await traffic(keyAnalyst);
          assert.equal(r.status, 200, JSON.stringify(r.body));
          return r.body.totals.requests === 11 ? r.body : undefined;
        },
        20_000,
      );
      assert.equal(t.totals.errors, 3);
      assert.ok(t.totals.latency_p50_ms > 0 && t.totals.latency_p99_ms >= t.totals.latency_p50_ms);
      const byApi = Object.fromEntries(t.apis.map((x) => [x.api_id, [x.requests, x.errors]]));
      assert.deepEqual(byApi, { open: [5, 0], keyed: [6, 3] });
      const reasons = Object.fromEntries(t.refusals.map((x) => [x.reason, x.requests]));
      assert.deepEqual(reasons, { auth: 2, rate_limit: 1 });
      assert.equal(t.top_keys.length, 1);
      const top = t.top_keys.at(0);
      assert.ok(top !== undefined);
      assert.equal(top.alias, 'partner');
      assert.equal(top.requests, 4);
      assert.equal(top.errors, 1);
      assert.match(top.key, /^[0-9a-f]{64}$/, 'the key is named by its hash, never its value');
      assert.notEqual(top.key, raw);
      const endpoints = Object.fromEntries(t.top_endpoints.map((x) => [x.endpoint, x.requests]));
      assert.deepEqual(endpoints, { 'GET /open/users/{id}': 5, 'GET /keyed/items': 6 });
      assert.equal(
        t.series.reduce((s, x) => s + x.requests, 0),
        11,
      );

      // One key: its own totals.
      const ofKey = await traffic(keyAnalyst, `?key=${top.key}`);
      assert.equal(ofKey.status, 200);
      assert.equal(ofKey.body.totals.requests, 4);
      assert.equal(ofKey.body.totals.errors, 1);
      assert.equal(
        ofKey.body.series.reduce((s, x) => s + x.requests, 0),
        4,
      );

      // One API, and by the hour.
      const one = await traffic(keyAnalyst, '?api_id=open&resolution=hour');
      assert.equal(one.status, 200);
      assert.equal(one.body.totals.requests, 5);

      // What each gateway says it sent.
      for (const [g, n] of [
        [g1, 5],
        [g2, 6],
      ] as const) {
        const m = await httpRequest(`${g.url}/metrics`);
        assert.match(m.body, new RegExp(`svc_gateway_analytics_records_total\\{outcome="sent"\\} ${n}\\b`));
      }
    });

    test(
      'the web UI charts that traffic (uPlot, served by the dashboard) with a table behind each chart',
      { skip: withoutChromium },
      async () => {
        const browser = await launchChromium();
        try {
          const page = await browser.newPage();
          const outside: string[] = [];
          const problems: string[] = [];
          page.on('request', (r) => {
            if (!r.url().startsWith(w.dashboard.url)) outside.push(r.url());
          });
          page.on('console', (m) => {
            // A refused resource is named by the response handler below.
            if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
              problems.push(m.text());
          });
          page.on('response', (r) => {
            // The browser asks for /favicon.ico on its own; the dashboard has none.
            if (r.status() >= 400 && !r.url().endsWith('/favicon.ico'))
              problems.push(`${r.status()} ${r.url()}`);
          });
          await page.goto(`${w.dashboard.url}/ui/#analytics`);
          await page.fill('#key', keyAnalyst);
          await page.click('#sign-in button[type=submit]');
          // The requests chart is drawn (a canvas of uPlot) and its table holds the 11 requests.
          await page.locator('[data-testid=chart-requests] canvas').first().waitFor();
          await page.locator('[data-testid=total-requests]').getByText('11').waitFor();
          const counts = await page
            .locator('[data-testid=chart-requests-table] tbody td:nth-child(2)')
            .allTextContents();
          assert.equal(
            counts.reduce((n, c) => n + Number(c), 0),
            11,
            counts.join(','),
          );
          await page.locator('[data-testid=chart-latency] canvas').first().waitFor();
          const refusals = await page.locator('[data-testid=chart-refusals-table]').innerText();
          assert.match(refusals, /auth\s+2/);
          assert.match(refusals, /rate_limit\s+1/);
          assert.match(await page.locator('[data-testid=chart-keys-table]').innerText(), /partner\s+4\s+1/);
          assert.match(
            await page.locator('[data-testid=chart-endpoints-table]').innerText(),
            /open\s+GET \/open\/users\/\{id\}\s+5/,
          );
          // One key (from the top keys), then all keys again.
          await page.click('[data-testid=chart-keys-table] a[data-key]');
          await page.locator('[data-testid=total-requests]').getByText('4').waitFor();
          assert.match(await page.locator('[data-testid=chart-requests] h3').innerText(), /of key partner/);
          await page.click('#analytics-all-keys');
          await page.locator('[data-testid=total-requests]').getByText('11').waitFor();
          // One API chosen: the view follows.
          await page.selectOption('#analytics-api', 'open');
          await page.locator('[data-testid=total-requests]').getByText('5').waitFor();
          assert.match(await page.locator('[data-testid=chart-requests] h3').innerText(), /of open/);
          // A week: per hour, the same count.
          await page.selectOption('#analytics-range', '7d');
          await page.locator('main').getByText('per hour').waitFor();
          await page.locator('[data-testid=total-requests]').getByText('5').waitFor();
          assert.deepEqual(outside, [], 'nothing is fetched from another host');
          assert.deepEqual(problems, [], 'no errors in the console (CSP included)');
        } finally {
          await browser.close();
        }
      },
    );

    test('a gateway in mode ce with analytics_dashboard_url sends its records too', async () => {
      const g = await startGateway({
        name: `gw-ce-${storage}`,
        secret: GW_SECRET,
        dataDir: join(w.dir, `gw-ce-${storage}`),
        logDir: w.dir,
        env: {
          SVC_GW_ANALYTICS_DASHBOARD_URL: w.dashboard.url,
          SVC_GW_NODE_SECRET: NODE_SECRET,
          SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200',
        },
      });
      w.gateways.push(g);
      const put = await httpRequest(`${g.url}/svc/apis`, {
        method: 'POST',
        headers: { 'x-svc-authorization': GW_SECRET, 'content-type': 'application/json' },
        body: JSON.stringify({
          api_id: 'local',
          name: 'local',
          org_id: a.org,
          use_keyless: true,
          proxy: { listen_path: '/local/', target_url: w.upstream.url, strip_listen_path: true },
        }),
      });
      assert.equal(put.status, 200, put.body);
      assert.equal(
        (await httpRequest(`${g.url}/svc/reload`, { headers: { 'x-svc-authorization': GW_SECRET } })).status,
        200,
      );
      await waitFor('the local API', async () => (await httpRequest(`${g.url}/local/x`)).status === 200);
      const served = (await httpRequest(`${g.url}/metrics`)).body;
      const seen = Number(
        /svc_gateway_requests_total\{api_id="local"[^}]*status_class="2xx"\} (\d+)/.exec(served)?.[1] ?? 0,
      );
      assert.ok(seen > 0, served);
      await waitFor(
        `the dashboard to count the ${String(seen)} requests of the mode ce gateway`,
        async () => {
          const r = await traffic(keyAnalyst, '?api_id=local');
          return r.body.totals.requests === seen;
        },
      );
    });

    test("analytics are the caller's organisation's, and need the analytics permission", async () => {
      const other = await traffic(b.system.key);
      assert.equal(other.status, 200);
      assert.equal(other.body.totals.requests, 0, 'another organisation sees none of it');
      const reader = await traffic(a.reader.key);
      assert.equal(reader.status, 403, 'read on every other resource is not enough');
      const anonymous = await dashboardCall(w.dashboard.url, 'GET', '/api/analytics/traffic');
      assert.equal(anonymous.status, 401);
      const bad = await dashboardCall(w.dashboard.url, 'GET', '/api/analytics/traffic?resolution=day', {
        auth: keyAnalyst,
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /resolution/);
      const noSecret = await httpRequest(`${w.dashboard.url}/system/analytics`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ records: [] }),
      });
      assert.equal(noSecret.status, 401);
    });

    test('a dashboard that does not answer holds no request up: the batches lost are counted on /metrics', async () => {
      const g = await startGateway({
        name: `gw-lost-${storage}`,
        secret: GW_SECRET,
        dataDir: join(w.dir, `gw-lost-${storage}`),
        logDir: w.dir,
        env: {
          // Nothing listens there.
          SVC_GW_ANALYTICS_DASHBOARD_URL: `http://127.0.0.1:${String(await freePort())}`,
          SVC_GW_NODE_SECRET: NODE_SECRET,
          SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '100',
        },
      });
      w.gateways.push(g);
      const put = await httpRequest(`${g.url}/svc/apis`, {
        method: 'POST',
        headers: { 'x-svc-authorization': GW_SECRET, 'content-type': 'application/json' },
        body: JSON.stringify({
          api_id: 'lost',
          name: 'lost',
          org_id: a.org,
          use_keyless: true,
          proxy: { listen_path: '/lost/', target_url: w.upstream.url, strip_listen_path: true },
        }),
      });
      assert.equal(put.status, 200, put.body);
      await httpRequest(`${g.url}/svc/reload`, { headers: { 'x-svc-authorization': GW_SECRET } });
      await waitFor('the lost API', async () => (await httpRequest(`${g.url}/lost/x`)).status === 200);
      for (let i = 0; i < 3; i++) assert.equal((await httpRequest(`${g.url}/lost/x`)).status, 200);
      const scrape = async (): Promise<{ ok: number; lost: number }> => {
        const m = (await httpRequest(`${g.url}/metrics`)).body;
        const n = (re: RegExp): number => Number(re.exec(m)?.[1] ?? -1);
        return {
          ok: n(/svc_gateway_requests_total\{api_id="lost"[^}]*status_class="2xx"\} (\d+)/),
          lost: n(/svc_gateway_analytics_records_total\{outcome="dropped_send_failed"\} (\d+)/),
        };
      };
      await waitFor('every record counted lost', async () => {
        const { ok, lost } = await scrape();
        return ok >= 4 && lost === ok;
      });
    });

    test('a full buffer never holds a request up: the records dropped are counted on /metrics', async () => {
      // One record fits, and nothing is sent for 10 minutes: the other four are dropped.
      const g = await startProGateway(`gw-full-${storage}`, {
        SVC_GW_ANALYTICS_BUFFER_SIZE: '1',
        SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '600000',
      });
      for (let i = 0; i < 5; i++) assert.equal((await httpRequest(`${g.url}/open/x`)).status, 200);
      const m = await httpRequest(`${g.url}/metrics`);
      assert.match(m.body, /svc_gateway_analytics_records_total\{outcome="dropped_buffer_full"\} 4\b/);
    });
  });
}
