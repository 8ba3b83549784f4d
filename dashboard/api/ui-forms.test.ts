/**
 * The web UI's forms in headless Chromium (Debian's /usr/bin/chromium, playwright-core): a policy
 * created and edited, a user created (its key shown once, and working) and a user's key reset
 * (the old key refused, the new one shown once and working), a reader's policy refused with the
 * dashboard's 403, and the command that edits an operator-managed API's cluster resource.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, signIn, withoutChromium } from '../testing/browser.ts';
import { startTenantDashboard, type TestDashboard } from '../testing/dashboard.ts';

/** The ID the operator derives for ApiDefinition payments/ledger. */
const OPERATOR_ID = Buffer.from('payments/ledger').toString('base64url');

describe('web UI forms', { skip: withoutChromium }, () => {
  let world: Awaited<ReturnType<typeof startTenantDashboard>>;
  let d: TestDashboard;
  let browser: Browser;
  let admin: string;
  let reader: string;

  before(async () => {
    world = await startTenantDashboard('acme', 'Acme');
    const { user } = world;
    ({ d } = world);
    admin = await user({ IsAdmin: 'admin' });
    reader = await user({ apis: 'read', policies: 'read', keys: 'read', users: 'read' });
    const operator = await user({ IsAdmin: 'admin' }, { system_user: true });
    for (const [auth, id, name] of [
      [admin, 'orders', 'orders'],
      [admin, 'billing', 'billing'],
      [operator, OPERATOR_ID, 'ledger'],
      [admin, 'archive', 'archive'],
    ] as const) {
      const r = await d.call('POST', '/api/apis', {
        auth,
        body: {
          api_definition: {
            api_id: id,
            name,
            active: id !== 'archive',
            proxy: { listen_path: `/${name}/`, target_url: 'http://up.test' },
          },
          ...(auth === operator ? { user_owners: ['operator-user'] } : {}),
        },
      });
      assert.equal(r.status, 200, r.text);
    }
    browser = await launchChromium();
  });

  after(async () => {
    // What started (a failed start leaves the rest undefined): the dashboard is closed whatever
    // happened to the browser, or its child keeps the test process alive.
    try {
      await (browser as Browser | undefined)?.close();
    } finally {
      await (world as typeof world | undefined)?.close();
    }
  });

  const signedIn = async (key: string, hash: string): Promise<Page> => {
    const context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: d.url });
    const p = await context.newPage();
    p.on('dialog', (dialog) => void dialog.accept());
    await signIn(p, `${d.url}/ui/#${hash}`, key);
    return p;
  };

  const policies = async (): Promise<Record<string, unknown>[]> =>
    (await d.call('GET', '/api/portal/policies?p=-1', { auth: admin })).body.Data as Record<
      string,
      unknown
    >[];

  test('an admin creates a policy, then edits it', async () => {
    const p = await signedIn(admin, 'policies');
    await p.locator('#policy-form').waitFor();
    await p.fill('#policy-name', 'silver');
    await p.fill('#policy-rate', '20');
    await p.fill('#policy-per', '30');
    await p.fill('#policy-quota', '500');
    await p.fill('#policy-renewal', '86400');
    await p.fill('#policy-apis', 'orders, billing');
    await p.click('#policy-form button[type=submit]');
    await p.locator('[data-testid=policies]').getByText('silver').waitFor();
    const created = (await policies()).find((x) => x.name === 'silver');
    assert.ok(created !== undefined);
    assert.equal(created.rate, 20);
    assert.equal(created.per, 30);
    assert.equal(created.quota_max, 500);
    assert.equal(created.quota_renewal_rate, 86400);
    assert.deepEqual(Object.keys(created.access_rights as object).sort(), ['billing', 'orders']);
    const id = String(created._id ?? created.id);

    await p.click(`[data-edit-policy="${id}"]`);
    await p.locator('#policy-form h3').getByText(`Edit policy ${id}`).waitFor();
    assert.equal(await p.inputValue('#policy-rate'), '20', 'the form holds the policy');
    await p.fill('#policy-rate', '25');
    await p.fill('#policy-apis', 'orders');
    await p.click('#policy-form button[type=submit]');
    await p.locator('#policy-form h3').getByText('Create a policy').waitFor();
    const edited = (await policies()).find((x) => String(x._id ?? x.id) === id);
    assert.ok(edited !== undefined);
    assert.equal(edited.rate, 25);
    assert.equal(edited.quota_max, 500, 'fields not changed are kept');
    assert.deepEqual(Object.keys(edited.access_rights as object), ['orders']);
    assert.equal((await policies()).length, 1, 'edited in place, not created again');
    await p.context().close();
  });

  test("a reader's policy is refused with the dashboard's 403", async () => {
    const p = await signedIn(reader, 'policies');
    await p.locator('#policy-form').waitFor();
    await p.fill('#policy-name', 'bronze');
    await p.fill('#policy-apis', 'orders');
    await p.click('#policy-form button[type=submit]');
    await p.locator('#error').getByText('403').waitFor();
    assert.equal(
      (await policies()).some((x) => x.name === 'bronze'),
      false,
    );
    await p.context().close();
  });

  test("an admin creates a user (its key shown once) and resets a user's key", async () => {
    const p = await signedIn(admin, 'users');
    await p.locator('#user-form').waitFor();
    await p.fill('#user-email', 'analyst@acme.test');
    await p.selectOption('#user-perm-analytics', 'read');
    await p.selectOption('#user-perm-apis', 'read');
    await p.click('#user-form button[type=submit]');
    const value = p.locator('#secret-value');
    await value.waitFor();
    const key = (await value.textContent()) ?? '';
    assert.ok(key.length >= 16, key);
    await p.click('#copy-secret');
    assert.equal(await p.evaluate('navigator.clipboard.readText()'), key);
    const me = await d.call('GET', '/api/me', { auth: key });
    assert.equal(me.status, 200, 'the new key signs in');
    assert.equal((me.body.permissions as Record<string, string>).analytics, 'read');
    assert.equal((me.body.permissions as Record<string, string>).keys, 'deny');
    await p.click('#tabs a[href="#apis"]');
    await p.click('#tabs a[href="#users"]');
    await p.locator('[data-testid=users]').getByText('analyst@acme.test').waitFor();
    assert.equal(await p.locator('#secret-value').count(), 0, 'shown once');

    const users = (await d.call('GET', '/api/users?p=-1', { auth: admin })).body.users as Record<
      string,
      unknown
    >[];
    const analyst = users.find((u) => u.email_address === 'analyst@acme.test');
    assert.ok(analyst !== undefined);
    await p.click(`[data-reset-user="${String(analyst.id)}"]`);
    await p.locator('#secret-shown').getByText('New key of analyst@acme.test').waitFor();
    const fresh = (await p.locator('#secret-value').textContent()) ?? '';
    assert.notEqual(fresh, key);
    assert.equal((await d.call('GET', '/api/me', { auth: key })).status, 401, 'the old key stops working');
    assert.equal((await d.call('GET', '/api/me', { auth: fresh })).status, 200, 'the new key works');
    await p.context().close();
  });

  test('an operator-managed API names the command that edits its cluster resource', async () => {
    const p = await signedIn(reader, 'apis');
    const row = p.locator('[data-testid=apis] tr', { hasText: 'ledger' });
    await row.waitFor();
    assert.equal(
      await row.locator('code.kubectl-hint').textContent(),
      'kubectl -n payments edit apidefinition/ledger',
    );
    assert.equal(
      await p.locator('[data-testid=apis] tr', { hasText: 'orders' }).locator('code.kubectl-hint').count(),
      0,
      "the dashboard's own APIs have none",
    );
    await p.click(`a[data-api-id="${OPERATOR_ID}"]`);
    assert.equal(
      await p.locator('#kubectl-hint').textContent(),
      'kubectl -n payments edit apidefinition/ledger',
    );
    await p.context().close();
  });

  test('a list is filtered by state, with its search', async () => {
    const p = await signedIn(reader, 'apis');
    const state = p.locator('#filter-apis-state');
    await state.waitFor();
    assert.deepEqual(await state.locator('option').allTextContents(), ['State: all', 'active', 'inactive']);
    await p.selectOption('#filter-apis-state', 'inactive');
    assert.equal(await p.locator('#search-apis-count').textContent(), '1 of 4 rows');
    assert.match(await p.locator('[data-testid=apis] tbody tr:visible').innerText(), /archive/);
    await p.selectOption('#filter-apis-state', 'active');
    await p.fill('#search-apis', 'ledger');
    assert.equal(await p.locator('#search-apis-count').textContent(), '1 of 4 rows');
    // Kept while the tab is open, as the search is.
    await p.click('#tabs a[href="#policies"]');
    await p.click('#tabs a[href="#apis"]');
    await p.locator('#filter-apis-state').waitFor();
    assert.equal(await p.inputValue('#filter-apis-state'), 'active');
    assert.equal(await p.locator('#search-apis-count').textContent(), '1 of 4 rows');
    await p.fill('#search-apis', '');
    await p.selectOption('#filter-apis-state', '');
    assert.equal(await p.locator('#search-apis-count').textContent(), '4 rows');
    await p.context().close();
  });
});
