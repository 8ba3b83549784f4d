/**
 * Detailed records (`enable_detailed_recording`) with real processes: two gateways in mode pro,
 * one with the fast path on (the default) and one with it off, serve an API that records bodies
 * and one that does not; the dashboard (SQLite, then PostgreSQL) keeps the first API's records
 * with their query and bodies (cut at 16 KiB, marked) and answers them on
 * `GET /api/analytics/requests`, to the organisation's analytics users only; the second API's
 * requests are counted but carry no bodies. The web UI shows the request log in headless
 * Chromium.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';

const GW_SECRET = 'pro-detailed-secret';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];

interface Body {
  body: string;
  encoding: string;
  size: number;
  truncated: boolean;
}
interface DetailedRecord {
  id: number;
  api_id: string;
  method: string;
  path: string;
  status: number;
  detail: { query: string; request: Body; response: Body };
}

for (const storage of ['sqlite', 'postgres'] as const) {
  describe(`detailed records (${storage})`, () => {
    let world: ProWorld;
    let a: DashboardTenant;
    let b: DashboardTenant;
    let analyst: string;
    let rawKey: string;

    const records = async (
      auth: string,
      query: string,
    ): Promise<{ status: number; body: Record<string, unknown> }> => {
      const r = await dashboardCall(world.dashboard.url, 'GET', `/api/analytics/requests${query}`, { auth });
      return { status: r.status, body: r.body };
    };

    before(async () => {
      world = await startProWorld({
        name: `detailed-${storage}`,
        nodeSecret: 'e2e-node-secret-0123456789',
        storage,
        dashboardName: `dashboard-detailed-${storage}`,
        database: 'detailed',
      });
      a = await world.tenant('dr-a');
      b = await world.tenant('dr-b');
      for (const [name, detailed] of [
        ['recorded', true],
        ['plain', false],
      ] as const) {
        const r = await dashboardCall(world.dashboard.url, 'POST', '/api/apis', {
          auth: a.system.key,
          body: {
            api_definition: {
              api_id: name,
              name,
              use_keyless: true,
              enable_detailed_recording: detailed,
              proxy: { listen_path: `/${name}/`, target_url: world.upstream.url, strip_listen_path: true },
            },
          },
        });
        assert.equal(r.status, 200, r.text);
      }
      // A keyed API whose key comes in a query parameter: the parameter is never recorded.
      const keyed = await dashboardCall(world.dashboard.url, 'POST', '/api/apis', {
        auth: a.system.key,
        body: {
          api_definition: {
            api_id: 'recorded-keyed',
            name: 'recorded-keyed',
            use_keyless: false,
            auth: { auth_header_name: 'Authorization', use_param: true, param_name: 'k' },
            enable_detailed_recording: true,
            proxy: {
              listen_path: '/recorded-keyed/',
              target_url: world.upstream.url,
              strip_listen_path: true,
            },
          },
        },
      });
      assert.equal(keyed.status, 200, keyed.text);
      const policy = await dashboardCall(world.dashboard.url, 'POST', '/api/portal/policies', {
        auth: a.system.key,
        body: {
          id: 'rk',
          name: 'rk',
          state: 'active',
          rate: 1000,
          per: 60,
          quota_max: -1,
          access_rights: {
            'recorded-keyed': { api_id: 'recorded-keyed', api_name: 'recorded-keyed', versions: ['Default'] },
          },
        },
      });
      assert.equal(policy.status, 200, policy.text);
      const key = await dashboardCall(world.dashboard.url, 'POST', '/api/keys', {
        auth: a.system.key,
        body: { alias: 'in-query', apply_policies: ['rk'] },
      });
      assert.equal(key.status, 200, key.text);
      rawKey = String(key.body.key_id);
      const user = await dashboardCall(world.dashboard.url, 'POST', '/admin/users', {
        admin: true,
        body: {
          org_id: a.org,
          email_address: `analyst@${a.org}.example.com`,
          user_permissions: { analytics: 'read' },
        },
      });
      assert.equal(user.status, 200, user.text);
      analyst = String((user.body.Meta as Record<string, unknown>).access_key);
      for (const fastPath of ['true', 'false']) {
        const name = `gw-fast-${fastPath}-${storage}`;
        const g = await world.startGateway({
          name,
          secret: GW_SECRET,
          org: a.org,
          env: { SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200', SVC_GW_FAST_PATH: fastPath },
        });
        await waitFor(`${name} serves`, async () => (await httpRequest(`${g.url}/plain/x`)).status === 200);
      }
    });

    after(async () => {
      await world.stop();
    });

    test('an API with enable_detailed_recording has its bodies kept, on both entrances', async () => {
      const big = 'x'.repeat(40 * 1024);
      for (const [i, g] of world.gateways.entries()) {
        const small = await httpRequest(`${g.url}/recorded/orders/${String(1000 + i)}?gw=${String(i)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ item: 'book', gateway: i }),
        });
        assert.equal(small.status, 200, small.body);
        assert.equal(
          (JSON.parse(small.body) as { body: string }).body,
          JSON.stringify({ item: 'book', gateway: i }),
          'sent upstream whole',
        );
        const large = await httpRequest(`${g.url}/recorded/upload`, { method: 'PUT', body: big });
        assert.equal(large.status, 200);
        assert.equal(
          (JSON.parse(large.body) as { body: string }).body.length,
          big.length,
          'sent upstream whole',
        );
        assert.equal((await httpRequest(`${g.url}/plain/y`, { method: 'POST', body: 'secret' })).status, 200);
      }
      const got = await waitFor(
        'the dashboard to keep the 4 detailed records',
        async () => {
          const r = await records(analyst, '?api_id=recorded');
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const list = r.body.records as DetailedRecord[];
          return list.length === 4 ? list : undefined;
        },
        20_000,
      );
      for (const i of [0, 1]) {
        const small = got.find((r) => r.method === 'POST' && r.detail.query === `?gw=${String(i)}`);
        assert.ok(small !== undefined, JSON.stringify(got));
        assert.equal(small.path, '/recorded/orders/{id}');
        assert.equal(small.status, 200);
        assert.deepEqual(small.detail.request, {
          body: JSON.stringify({ item: 'book', gateway: i }),
          encoding: 'utf8',
          size: JSON.stringify({ item: 'book', gateway: i }).length,
          truncated: false,
        });
        const echoed = JSON.parse(small.detail.response.body) as { body: string; method: string };
        assert.equal(echoed.method, 'POST', "the upstream's response as the client got it");
        assert.equal(small.detail.response.truncated, false);
      }
      const large = got.filter((r) => r.method === 'PUT');
      assert.equal(large.length, 2);
      for (const r of large) {
        assert.equal(r.detail.request.size, 40 * 1024);
        assert.equal(r.detail.request.body, 'x'.repeat(16 * 1024), 'cut at 16 KiB');
        assert.equal(r.detail.request.truncated, true);
        assert.equal(r.detail.response.truncated, true);
        assert.equal(r.detail.response.body.length, 16 * 1024);
      }
      // The API without the setting: counted in the rollups, no bodies kept.
      const plain = await records(analyst, '?api_id=plain');
      assert.deepEqual(plain.body.records, []);
      const traffic = await dashboardCall(world.dashboard.url, 'GET', '/api/analytics/traffic?api_id=plain', {
        auth: analyst,
      });
      assert.equal((traffic.body.totals as { requests: number }).requests >= 2, true, traffic.text);
      // Paging: newest first, next_before pages on.
      const page = await records(analyst, '?api_id=recorded&limit=3');
      assert.equal((page.body.records as unknown[]).length, 3);
      const rest = await records(analyst, `?api_id=recorded&limit=3&before=${String(page.body.next_before)}`);
      assert.equal((rest.body.records as unknown[]).length, 1);
      assert.equal(rest.body.next_before, null);
    });

    test('the query parameter a key came in is never recorded', async () => {
      const g = world.gateways[0];
      assert.ok(g !== undefined);
      const r = await httpRequest(`${g.url}/recorded-keyed/items?page=2&k=${rawKey}&sort=asc`);
      assert.equal(r.status, 200, r.body);
      const got = await waitFor(
        'the keyed API detailed record',
        async () => {
          const list = (await records(analyst, '?api_id=recorded-keyed')).body.records as DetailedRecord[];
          return list.length === 1 ? list[0] : undefined;
        },
        20_000,
      );
      assert.equal(got.detail.query, '?page=2&sort=asc');
      const { response: _echoed, ...rest } = got.detail;
      // The echo upstream answers with the query it got (the key too: no strip_auth_data): the
      // response is recorded as the client got it; the rest of the record never holds the key.
      assert.equal(JSON.stringify({ ...got, detail: rest }).includes(rawKey), false);
    });

    test("detailed records are the caller's organisation's, and need the analytics permission", async () => {
      const other = await records(b.system.key, '?api_id=recorded');
      assert.equal(other.status, 200);
      assert.deepEqual(other.body.records, [], 'another organisation sees none of them');
      assert.equal((await records(a.reader.key, '')).status, 403);
      const bad = await records(analyst, '?limit=0');
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /limit/);
    });

    test('the web UI shows the request log of the API', async () => {
      const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
      try {
        const page = await browser.newPage();
        await page.goto(`${world.dashboard.url}/ui/#analytics?range=1h&api=recorded`);
        await page.fill('#key', analyst);
        await page.click('#sign-in button[type=submit]');
        const log = page.locator('[data-testid=request-log]');
        await log.waitFor();
        assert.equal(await log.locator('tbody tr').count(), 4);
        const row = log.locator('tbody tr', { hasText: '?gw=1' });
        assert.equal(await row.count(), 1);
        await row.locator('[data-testid=request-body] summary').click();
        assert.equal(
          await row.locator('[data-testid=request-body] pre').textContent(),
          JSON.stringify({ item: 'book', gateway: 1 }),
        );
        const cut = log.locator('tbody tr', { hasText: 'PUT' }).first();
        assert.match(
          (await cut.locator('[data-testid=request-body] summary').textContent()) ?? '',
          /40960 bytes, cut at 16384/,
        );
      } finally {
        await browser.close();
      }
    });
  });
}
