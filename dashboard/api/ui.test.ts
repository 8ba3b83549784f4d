/**
 * The web UI end to end in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core): a wrong key refused, signing in, the lists, opening an API, a write, an
 * operator-managed API shown read-only, a read-only user's write refused with the dashboard's
 * 403, an OAuth API's clients (registered with the secret shown once, listed, deleted), and keys
 * (created from a policy with the value shown once and copied, quota reset, revoked), and the search of every list.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { oasDocument } from '../../schemas/testing.ts';
import { launchChromium, signIn as signInAt, withoutChromium } from '../testing/browser.ts';
import { addOauthApi, startTenantDashboard, type TestDashboard } from '../testing/dashboard.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
/** The ID the operator derives for ApiDefinition default/billing. */
const OPERATOR_ID = Buffer.from('default/billing').toString('base64url');

describe('web UI', { skip: withoutChromium }, () => {
  let world: Awaited<ReturnType<typeof startTenantDashboard>>;
  let d: TestDashboard;
  let browser: Browser;
  let admin: string;
  let reader: string;
  let keyId: string;
  let dashboardApi: string;
  const outside: string[] = [];

  before(async () => {
    world = await startTenantDashboard('acme', 'Acme');
    const { user } = world;
    ({ d } = world);
    admin = await user({ IsAdmin: 'admin' });
    reader = await user({ apis: 'read', policies: 'read', keys: 'read', streams: 'read', users: 'deny' });
    const operator = await user({ IsAdmin: 'admin' }, { system_user: true });
    const created = await d.call('POST', '/api/apis', {
      auth: admin,
      body: {
        api_definition: {
          name: 'catalogue',
          active: true,
          proxy: { listen_path: '/catalogue/', target_url: 'http://up.test' },
        },
      },
    });
    assert.equal(created.status, 200, created.text);
    dashboardApi = String(created.body.Meta);
    const managed = await d.call('POST', '/api/apis', {
      auth: operator,
      body: {
        api_definition: {
          api_id: OPERATOR_ID,
          name: 'billing',
          active: true,
          proxy: { listen_path: '/billing/', target_url: 'http://up.test' },
        },
        user_owners: ['operator-user'],
      },
    });
    assert.equal(managed.status, 200, managed.text);
    const streams = await d.call('POST', '/api/apis/streams', {
      auth: admin,
      contentType: 'application/vnd.svc.streams.oas',
      body: {
        ...oasDocument({ name: 'events', listenPath: '/events/' }),
        'x-svc-streaming': {
          streams: {
            ticker: { input: { http_server: { path: '/in' } }, output: { http_server: { path: '/out' } } },
          },
        },
      },
    });
    assert.equal(streams.status, 200, streams.text);
    const policy = await d.call('POST', '/api/portal/policies', {
      auth: admin,
      body: { name: 'gold', state: 'active', rate: 10, per: 60, quota_max: -1 },
    });
    assert.equal(policy.status, 200, policy.text);
    const key = await d.call('POST', '/api/keys', {
      auth: admin,
      body: { alias: 'partner-key', rate: 10, per: 60, quota_max: 100, quota_renewal_rate: 3600 },
    });
    assert.equal(key.status, 200, key.text);
    keyId = String(key.body.key_id);
    browser = await launchChromium();
  });

  after(async () => {
    await stopAll(browser, world);
  });

  /** A fresh page (its own sessionStorage) that records any request to another host. */
  const page = async (): Promise<Page> => {
    const context = await browser.newContext();
    const p = await context.newPage();
    p.on('request', (r) => {
      if (!r.url().startsWith(d.url)) outside.push(r.url());
    });
    return p;
  };

  /** Signs in from the root, which redirects to /ui/. */
  const signIn = async (p: Page, key: string): Promise<void> => {
    await signInAt(p, `${d.url}/`, key);
    assert.equal(new URL(p.url()).pathname, '/ui/', 'the root redirects to /ui/');
  };

  test('a wrong key is refused', async () => {
    const p = await page();
    await signIn(p, 'not-a-key');
    await p.locator('#error').getByText('Sign-in refused').waitFor();
    assert.equal(await p.locator('#sign-in').isVisible(), true);
    assert.equal(await p.locator('#tabs').isVisible(), false);
    assert.equal(await p.evaluate('sessionStorage.length'), 0);
    await p.context().close();
  });

  test('an admin signs in, lists, opens an API and writes', async () => {
    const p = await page();
    await signIn(p, admin);
    await p.locator('#who').getByText('organisation Acme (acme)').waitFor();
    assert.equal(await p.evaluate('sessionStorage.getItem("svc-dashboard-key")'), admin);
    const apis = p.locator('[data-testid=apis]');
    await apis.waitFor();
    const text = await apis.innerText();
    assert.match(text, /catalogue\s+\/catalogue\/\s+classic\s+active\s+dashboard/);
    assert.match(text, /billing\s+\/billing\/\s+classic\s+active\s+ApiDefinition default\/billing/);

    // The operator's API: read-only, naming the resource.
    await p.click(`a[data-api-id="${OPERATOR_ID}"]`);
    await p.locator('#read-only').getByText('ApiDefinition default/billing').waitFor();
    assert.equal(await p.locator('#toggle-active').isDisabled(), true);

    // The dashboard's own API: the admin deactivates it.
    await p.click('a[href="#apis"]');
    await p.click(`a[data-api-id="${dashboardApi}"]`);
    await p.locator('#api-state').getByText('active').waitFor();
    await p.click('#toggle-active');
    await p.locator('#api-state').getByText('inactive').waitFor();
    const stored = await d.call('GET', `/api/apis/${dashboardApi}`, { auth: admin });
    assert.equal((stored.body.api_definition as Record<string, unknown>).active, false);

    await p.click('#tabs a[href="#policies"]');
    assert.match(await p.locator('[data-testid=policies]').innerText(), /gold/);
    await p.click('#tabs a[href="#keys"]');
    const keys = await p.locator('[data-testid=keys]').innerText();
    assert.match(keys, /partner-key/);
    assert.match(keys, /\*\*\*\*/);
    assert.equal(keys.includes(keyId), false, 'keys are masked');
    const hashes = (await d.call('GET', '/api/keys', { auth: admin })).body.data as { keys: string[] };
    for (const h of hashes.keys) assert.equal(keys.includes(h), false, 'key hashes are masked');
    await p.click('#tabs a[href="#users"]');
    assert.match(await p.locator('[data-testid=users]').innerText(), /admin/);
    await p.click('#tabs a[href="#audit"]');
    const audit = await p.locator('[data-testid=audit]').innerText();
    assert.match(audit, /update/i);
    await p.click('#tabs a[href="#streams"]');
    const streams = await p.locator('.streams-api').innerText();
    assert.match(streams, /events/);
    assert.match(streams, /ticker\s+http_server\s+http_server/);
    await p.click('#sign-out');
    await p.locator('#sign-in').waitFor();
    assert.equal(await p.evaluate('sessionStorage.length'), 0);
    await p.context().close();
  });

  test("a read-only user's write is refused with the dashboard's 403", async () => {
    const p = await page();
    await signIn(p, reader);
    await p.locator('[data-testid=apis]').waitFor();
    await p.click(`a[data-api-id="${dashboardApi}"]`);
    await p.locator('#toggle-active').waitFor();
    const before = await p.locator('#api-state').innerText();
    await p.click('#toggle-active');
    await p
      .locator('#error')
      .getByText('403: Access to this resource has been disallowed: it needs write access to apis')
      .waitFor();
    assert.equal(await p.locator('#api-state').innerText(), before, 'the state is unchanged');
    // A resource the user may not read at all.
    await p.click('#tabs a[href="#users"]');
    await p
      .locator('#error')
      .getByText('403: Access to this resource has been disallowed: it needs read access to users')
      .waitFor();
    await p.context().close();
  });

  test("an OAuth API's clients: registered with the secret shown once, listed, deleted; a reader may not register", async () => {
    await addOauthApi(d, admin, 'stock', { policy: { rate: 10 } });
    const p = await page();
    await signIn(p, admin);
    await p.locator('[data-testid=apis]').waitFor();
    await p.click('a[data-api-id="stock"]');
    await p.locator('#oauth-clients').getByText('No OAuth clients.').waitFor();
    // A policy that does not exist: the dashboard's 400, nothing registered.
    await p.fill('#oauth-policy', 'nope');
    await p.click('#oauth-register button[type=submit]');
    await p.locator('#error').getByText('policy_id: policy "nope" not found in your organisation').waitFor();
    await p.fill('#oauth-policy', 'stock-clients');
    await p.fill('#oauth-description', 'the stock robot');
    await p.click('#oauth-register button[type=submit]');
    const shown = await p.locator('#oauth-secret code').innerText();
    const listed = await d.call('GET', '/api/apis/oauth/stock', { auth: admin });
    const apps = listed.body.apps as { client_id: string; description: string }[];
    assert.equal(apps.length, 1);
    const clientId = apps[0]?.client_id ?? '';
    assert.match(await p.locator('#oauth-secret').innerText(), new RegExp(`Client ${clientId} registered`));
    assert.ok(shown.length >= 40, shown);
    const rows = await p.locator('[data-testid=oauth-clients]').innerText();
    assert.match(rows, new RegExp(`${clientId}\\s+the stock robot\\s+stock-clients`));
    // Shown once: not after the page is drawn again.
    await p.click('a[href="#apis"]');
    await p.click('a[data-api-id="stock"]');
    await p.locator('[data-testid=oauth-clients]').waitFor();
    assert.equal(await p.locator('#oauth-secret').count(), 0);
    assert.equal((await p.content()).includes(shown), false, 'the secret is not on the page again');
    await p.context().close();

    // A reader (keys read) sees the list; registering is refused with the dashboard's 403.
    const r = await page();
    await signIn(r, reader);
    await r.locator('[data-testid=apis]').waitFor();
    await r.click('a[data-api-id="stock"]');
    assert.match(await r.locator('[data-testid=oauth-clients]').innerText(), new RegExp(clientId));
    await r.fill('#oauth-policy', 'stock-clients');
    await r.click('#oauth-register button[type=submit]');
    await r
      .locator('#error')
      .getByText('403: Access to this resource has been disallowed: it needs write access to keys')
      .waitFor();
    await r.context().close();

    // The admin deletes it.
    const q = await page();
    await signIn(q, admin);
    await q.locator('[data-testid=apis]').waitFor();
    await q.click('a[data-api-id="stock"]');
    await q.click(`button[data-delete-client="${clientId}"]`);
    await q.locator('#oauth-clients').getByText('No OAuth clients.').waitFor();
    assert.deepEqual((await d.call('GET', '/api/apis/oauth/stock', { auth: admin })).body.apps, []);
    await q.context().close();
  });

  test("keys: created from a policy (the value shown once, copied), quota reset, revoked; a reader's reset refused", async () => {
    const policy = await d.call('POST', '/api/portal/policies', {
      auth: admin,
      body: { id: 'silver', name: 'silver', state: 'active', rate: 5, per: 60, quota_max: -1 },
    });
    assert.equal(policy.status, 200, policy.text);
    const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
    const p = await context.newPage();
    p.on('request', (r) => {
      if (!r.url().startsWith(d.url)) outside.push(r.url());
    });
    await signIn(p, admin);
    await p.locator('[data-testid=apis]').waitFor();
    await p.click('#tabs a[href="#keys"]');
    await p.locator('#key-create').waitFor();
    await p.selectOption('#key-policy', 'silver');
    await p.fill('#key-alias', 'made-in-ui');
    await p.click('#key-create button[type=submit]');
    const value = await p.locator('#key-value').innerText();
    assert.match(await p.locator('#key-created').innerText(), /created from policy silver/);
    // The key the user sees is a key of the dashboard, from that policy.
    const made = await d.call('GET', `/api/keys/${value}`, { auth: admin });
    assert.equal(made.status, 200, made.text);
    assert.deepEqual((made.body.data as Record<string, unknown>).apply_policies, ['silver']);
    assert.equal((made.body.data as Record<string, unknown>).alias, 'made-in-ui');
    const hash = String(made.body.key_hash);
    assert.match(
      await p.locator('[data-testid=keys]').innerText(),
      /made-in-ui\s+silver\s+unlimited\s+active/,
    );
    await p.click('#copy-key');
    await p.locator('#copy-key').getByText('Copied').waitFor();
    assert.equal(await p.evaluate('navigator.clipboard.readText()'), value);
    // Shown once: not after the page is drawn again.
    await p.click('#tabs a[href="#policies"]');
    await p.click('#tabs a[href="#keys"]');
    await p.locator('#key-create').waitFor();
    assert.equal(await p.locator('#key-created').count(), 0);
    assert.equal((await p.content()).includes(value), false, 'the value is not on the page again');

    // Quota reset: partner-key (quota_max 100) has used 93 of its quota.
    const partnerHash = String((await d.call('GET', `/api/keys/${keyId}`, { auth: admin })).body.key_hash);
    const stored = (await d.call('GET', `/api/keys/${keyId}`, { auth: admin })).body.data as Record<
      string,
      unknown
    >;
    const used = await d.call('PUT', `/api/keys/${keyId}`, {
      auth: admin,
      body: { ...stored, quota_remaining: 7 },
    });
    assert.equal(used.status, 200, used.text);
    await p.click('#tabs a[href="#policies"]');
    await p.click('#tabs a[href="#keys"]');
    const partnerRow = p.locator('[data-testid=keys] tr', { hasText: 'partner-key' });
    await partnerRow.getByText('7 / 100').waitFor();
    await p.click(`button[data-reset-key="${partnerHash}"]`);
    await partnerRow.getByText('100 / 100').waitFor();
    const reset = (await d.call('GET', `/api/keys/${keyId}`, { auth: admin })).body.data as Record<
      string,
      unknown
    >;
    assert.equal(reset.quota_remaining, 100);

    // Revoke: a dismissed confirmation keeps the key; an accepted one deletes it.
    p.once('dialog', (dialog) => void dialog.dismiss());
    await p.click(`button[data-revoke-key="${hash}"]`);
    await p.locator(`button[data-revoke-key="${hash}"]:not([disabled])`).waitFor();
    assert.equal((await d.call('GET', `/api/keys/${value}`, { auth: admin })).status, 200);
    p.once('dialog', (dialog) => {
      assert.match(dialog.message(), /made-in-ui/);
      void dialog.accept();
    });
    await p.click(`button[data-revoke-key="${hash}"]`);
    await p.locator(`button[data-revoke-key="${hash}"]`).waitFor({ state: 'detached' });
    assert.doesNotMatch(await p.locator('[data-testid=keys]').innerText(), /made-in-ui/);
    assert.equal(
      (await d.call('GET', `/api/keys/${value}`, { auth: admin })).status,
      404,
      'the key no longer works',
    );
    await context.close();

    // A reader sees the keys; resetting a quota is refused with the dashboard's 403.
    const r = await page();
    await signIn(r, reader);
    await r.locator('[data-testid=apis]').waitFor();
    await r.click('#tabs a[href="#keys"]');
    await r.click(`button[data-reset-key="${partnerHash}"]`);
    await r
      .locator('#error')
      .getByText('403: Access to this resource has been disallowed: it needs write access to keys')
      .waitFor();
    await r.context().close();
  });

  test('every list has a search that hides the rows without every word typed, kept across tabs', async () => {
    const p = await page();
    await signIn(p, admin);
    const apis = p.locator('[data-testid=apis]');
    await apis.waitFor();
    const rows = apis.locator('tbody tr');
    const all = await rows.count();
    assert.ok(all >= 2, String(all));
    assert.equal(await p.locator('#search-apis-count').innerText(), `${String(all)} rows`);
    await p.fill('#search-apis', 'BILLING active');
    assert.equal(await p.locator('#search-apis-count').innerText(), `1 of ${String(all)} rows`);
    assert.equal(await apis.locator('tbody tr:visible').count(), 1);
    assert.match(await apis.locator('tbody tr:visible').innerText(), /billing/);
    assert.equal(await p.locator(`a[data-api-id="${dashboardApi}"]`).isVisible(), false);
    await p.fill('#search-apis', 'billing nothing-like-this');
    assert.equal(await apis.locator('tbody tr:visible').count(), 0);
    assert.equal(await p.locator('#search-apis-count').innerText(), `0 of ${String(all)} rows`);

    await p.click('#tabs a[href="#keys"]');
    const keys = p.locator('[data-testid=keys]');
    await keys.waitFor();
    await p.fill('#search-keys', 'partner');
    assert.equal(await keys.locator('tbody tr:visible').count(), 1);
    assert.match(await keys.locator('tbody tr:visible').innerText(), /partner-key/);
    await p.click('#tabs a[href="#users"]');
    await p.locator('[data-testid=users]').waitFor();
    await p.fill('#search-users', 'yes');
    assert.equal(await p.locator('[data-testid=users] tbody tr:visible').count(), 1, 'the one system user');
    await p.click('#tabs a[href="#policies"]');
    await p.fill('#search-policies', 'gold');
    assert.match(await p.locator('[data-testid=policies] tbody tr:visible').innerText(), /gold/);
    assert.equal(await p.locator('[data-testid=policies] tbody tr:visible').count(), 1);
    await p.click('#tabs a[href="#audit"]');
    await p.fill('#search-audit', 'keys');
    assert.ok((await p.locator('[data-testid=audit] tbody tr:visible').count()) >= 1);

    // The search is kept when the list is drawn again; emptied, every row shows.
    await p.click('#tabs a[href="#keys"]');
    await keys.waitFor();
    assert.equal(await p.inputValue('#search-keys'), 'partner');
    assert.equal(await keys.locator('tbody tr:visible').count(), 1);
    await p.fill('#search-keys', '');
    assert.equal(await keys.locator('tbody tr:visible').count(), await keys.locator('tbody tr').count());
    await p.context().close();
  });

  test('the UI calls no other host and is served with a strict CSP', async () => {
    assert.deepEqual(outside, []);
    const r = await fetch(`${d.url}/ui/app.js`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /javascript/);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const js = await r.text();
    assert.doesNotMatch(js, /interface Me/, 'types are stripped');
    assert.equal((await fetch(`${d.url}/ui/nothing.js`)).status, 404);
    assert.equal((await fetch(`${d.url}/`, { redirect: 'manual' })).headers.get('location'), '/ui/');
  });
});
