/**
 * The developer portal's web UI (dashboard/ui/portal.html, portal.ts) in headless Chromium
 * (Debian's /usr/bin/chromium, driven by playwright-core), as a developer uses it: signing up
 * (pending until the organisation approves, then signing in), the catalogue with a product's
 * OpenAPI document rendered, a key issued at once and shown once, a key approved by hand (in the
 * dashboard's Portal tab) and claimed, usage and revocation, a webhook subscription with its
 * secret shown once, and a key the organisation deleted shown revoked. Nothing is fetched from
 * another host.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, signIn, withoutChromium } from '../testing/browser.ts';
import {
  addUser,
  startFreshDashboard,
  type FreshDashboard,
  type TestDashboard,
} from '../testing/dashboard.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

describe('portal web UI', { skip: withoutChromium }, () => {
  let world: FreshDashboard;
  let d: TestDashboard;
  let browser: Browser;
  let page: Page;
  /** The dashboard's own UI, signed in as the organisation's admin. */
  let adminPage: Page;
  let admin: string;
  const outside: string[] = [];

  const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const r = await d.call(method, path, { auth: admin, ...(body === undefined ? {} : { body }) });
    assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
    return r.body;
  };

  before(async () => {
    world = await startFreshDashboard();
    ({ d } = world);
    const org = await d.call('POST', '/admin/organisations', {
      auth: { admin: true },
      body: { id: 'acme', owner_name: 'Acme' },
    });
    assert.equal(org.status, 200, org.text);
    admin = await addUser(d, 'acme', { IsAdmin: 'admin' });
    await call('POST', '/api/apis', {
      api_definition: {
        api_id: 'stock',
        name: 'stock',
        use_keyless: false,
        proxy: { listen_path: '/stock/', target_url: 'http://upstream.test' },
      },
    });
    await call('PUT', '/api/portal/products/stock', {
      name: 'Stock',
      description: 'What is in the warehouse',
      api_id: 'stock',
      key_approval: 'auto',
      subscribable_events: ['stock.low', 'stock.out'],
      docs: {
        doc_type: 'oas',
        documentation: {
          openapi: '3.0.3',
          info: { title: 'Stock API', version: '7' },
          paths: { '/items/{id}': { get: { summary: 'One item <b>not html</b>' } } },
        },
      },
    });
    await call('PUT', '/api/portal/products/orders', { name: 'Orders', api_id: 'stock' });
    await call('PUT', '/api/portal/catalogues/main', { apis: ['stock', 'orders'] });
    browser = await launchChromium();
    page = await browser.newPage();
    adminPage = await browser.newPage();
    const origin = new URL(d.url).origin;
    for (const p of [page, adminPage]) {
      p.on('request', (r) => {
        if (new URL(r.url()).origin !== origin) outside.push(r.url());
      });
    }
    await signIn(adminPage, `${d.url}/ui/`, admin);
    await adminPage.waitForSelector('#tabs:not([hidden])');
  });
  after(async () => {
    await stopAll(browser, world);
  });

  test('sign up, wait for approval, sign in', async () => {
    await page.goto(`${d.url}/portal/acme`);
    assert.equal(new URL(page.url()).pathname, '/portal/acme/');
    await page.waitForSelector('#sign-up:not([hidden])');
    assert.equal(await page.textContent('#portal-name'), 'Acme developer portal');
    await page.fill('#up-name', 'Ada');
    await page.fill('#up-email', 'ada@dev.test');
    await page.fill('#up-password', 'long enough');
    await page.click('#sign-up button[type=submit]');
    await page.waitForSelector('#notice:not([hidden])');
    assert.match((await page.textContent('#notice')) ?? '', /approve your account/);
    await page.fill('#in-email', 'ada@dev.test');
    await page.fill('#in-password', 'long enough');
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('#error:not([hidden])');
    assert.match((await page.textContent('#error')) ?? '', /pending/);
    // The organisation's admin approves the developer in the dashboard's Portal tab.
    await adminPage.click('a[href="#portal"]');
    await adminPage.waitForSelector('[data-testid="developer-status-ada@dev.test"]');
    assert.equal(await adminPage.textContent('[data-testid="developer-status-ada@dev.test"]'), 'pending');
    await adminPage.click(
      '[data-testid=portal-developers] tr:has-text("ada@dev.test") >> button:has-text("Approve")',
    );
    await adminPage.waitForSelector('[data-testid="developer-status-ada@dev.test"]:has-text("active")');
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('#tabs:not([hidden])');
    assert.equal(await page.textContent('#who'), 'ada@dev.test');
  });

  test('the catalogue and a rendered OpenAPI document; a key issued at once, shown once', async () => {
    await page.waitForSelector('text=What is in the warehouse');
    await page.click('a[href="#product/stock"]');
    await page.waitForSelector('[data-testid=oas]');
    const oas = (await page.textContent('[data-testid=oas]')) ?? '';
    assert.match(oas, /Stock API 7/);
    assert.match(oas, /GET\/items\/\{id\}One item <b>not html<\/b>/, 'data is text, never HTML');
    await page.click('[data-testid=product] button');
    await page.waitForSelector('[data-testid=new-key]');
    const key = (await page.textContent('[data-testid=new-key]')) ?? '';
    assert.match(key, /^acme[0-9a-f]{32}$/);
    await page.click('a[href="#keys"]');
    await page.waitForSelector('[data-testid=request-status-stock]');
    assert.equal(await page.textContent('[data-testid=request-status-stock]'), 'issued');
    await page.waitForSelector('#notice', { state: 'hidden' });
    assert.equal((await page.content()).includes(key), false, 'the key is not shown again');
  });

  test('a key approved by hand is claimed from My keys; usage and revocation', async () => {
    await page.click('a[href="#catalogue"]');
    await page.click('a[href="#product/orders"]');
    await page.click('[data-testid=product] button');
    await page.waitForSelector('text=the organisation will review it');
    await page.click('a[href="#keys"]');
    await page.waitForSelector('[data-testid=request-status-orders]');
    assert.equal(await page.textContent('[data-testid=request-status-orders]'), 'pending');
    const pending = (await call('GET', '/api/portal/key-requests?status=pending')).key_requests as {
      id: string;
    }[];
    // The organisation's admin approves it in the dashboard's Portal tab (drawn again on return).
    const requestStatus = `[data-testid="request-status-${pending[0]?.id ?? ''}"]`;
    await adminPage.click('a[href="#apis"]');
    await adminPage.click('a[href="#portal"]');
    await adminPage.waitForSelector(`${requestStatus}:has-text("pending")`);
    await adminPage.click(
      `[data-testid=portal-requests] tr:has(${requestStatus}) >> button:has-text("Approve")`,
    );
    await adminPage.waitForSelector(`${requestStatus}:has-text("approved")`);
    await page.reload();
    await page.waitForSelector('button:has-text("Get the key")');
    await page.click('button:has-text("Get the key")');
    await page.waitForSelector('[data-testid=new-key]');
    assert.match((await page.textContent('[data-testid=new-key]')) ?? '', /^acme[0-9a-f]{32}$/);
    assert.equal(((await call('GET', '/api/portal/keys')).keys as unknown[]).length, 2);
    await page.click('tr:has-text("orders") >> button:has-text("Usage")');
    await page.waitForSelector('text=0 requests, 0 errors (24 h)');
    await page.click('tr:has-text("orders") >> button:has-text("Revoke")');
    await page.waitForSelector('text=Key revoked.');
    assert.equal(((await call('GET', '/api/portal/keys')).keys as unknown[]).length, 1);
  });

  test('a webhook subscription with its secret shown once', async () => {
    await page.click('a[href="#webhooks"]');
    await page.waitForSelector('#subscribe');
    await page.selectOption('#hook-product', 'stock');
    await page.fill('#hook-url', 'https://hooks.dev.test/stock');
    await page.check('input[name=event][value="stock.low"]');
    await page.click('#subscribe button[type=submit]');
    await page.waitForSelector('[data-testid=hook-secret]');
    const secret = (await page.textContent('[data-testid=hook-secret]')) ?? '';
    assert.match(secret, /^[0-9a-f]{64}$/);
    assert.match((await page.textContent('table')) ?? '', /https:\/\/hooks\.dev\.test\/stock/);
    const subs = (await call('GET', '/api/portal/subscriptions')).subscriptions as { events: string[] }[];
    assert.deepEqual(
      subs.map((s) => s.events),
      [['stock.low']],
    );
    // An event the product does not list is refused with the portal's message.
    await page.$eval(
      'input[name=event][value="stock.out"]',
      (box: { setAttribute(n: string, v: string): void }) => {
        box.setAttribute('value', 'stock.gone');
      },
    );
    await page.fill('#hook-url', 'https://hooks.dev.test/gone');
    await page.check('input[name=event][value="stock.gone"]');
    await page.click('#subscribe button[type=submit]');
    await page.waitForSelector('#error:not([hidden])');
    assert.match((await page.textContent('#error')) ?? '', /events\[\d\]: Unsupported value/);
    await page.click('#sign-out');
    await page.waitForSelector('#signed-out:not([hidden])');
    assert.deepEqual(outside, [], 'nothing fetched from another host');
  });

  test("the dashboard's Portal tab saves a product into the catalogue and shows a feed secret once", async () => {
    await adminPage.reload();
    await adminPage.waitForSelector('#product-form');
    await adminPage.fill('#product-id', 'parcels');
    await adminPage.fill('#product-name', 'Parcels');
    await adminPage.selectOption('#product-grants', 'api_id');
    await adminPage.fill('#product-target', 'stock');
    await adminPage.selectOption('#product-approval', 'auto');
    await adminPage.fill('#product-events', 'parcel.sent, parcel.lost');
    await adminPage.click('#product-form button[type=submit]');
    await adminPage.waitForSelector('[data-testid=portal-products] tr:has-text("parcels")');
    const product = (await call('GET', '/api/portal/products/parcels')) as { subscribable_events: string[] };
    assert.deepEqual(product.subscribable_events, ['parcel.sent', 'parcel.lost']);
    await adminPage.check('input[name=catalogue-api][value=parcels]');
    await adminPage.click('#catalogue-form button[type=submit]');
    await adminPage.waitForSelector('input[name=catalogue-api][value=parcels]:checked');
    const catalogues = (await call('GET', '/api/portal/catalogues')).catalogues as { apis: string[] }[];
    assert.ok(
      catalogues.some((c) => c.apis.includes('parcels')),
      JSON.stringify(catalogues),
    );
    await adminPage.click(
      '[data-testid=portal-products] tr:has-text("parcels") >> button:has-text("New feed secret")',
    );
    await adminPage.waitForSelector('#secret-value');
    assert.match((await adminPage.textContent('#secret-value')) ?? '', /^[0-9a-f]{64}$/);
    await adminPage.reload();
    await adminPage.waitForSelector('#product-form');
    assert.equal(await adminPage.$('#secret-value'), null, 'shown once');
    await page.waitForSelector('#signed-out:not([hidden])');
    assert.deepEqual(outside, [], 'nothing fetched from another host');
  });

  test("a key the organisation deleted in the dashboard's keys shows revoked in My keys", async () => {
    await page.fill('#in-email', 'ada@dev.test');
    await page.fill('#in-password', 'long enough');
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('#tabs:not([hidden])');
    const keys = (await call('GET', '/api/portal/keys')).keys as { key_id: string; product_id: string }[];
    const stock = keys.find((k) => k.product_id === 'stock')?.key_id ?? '';
    await call('DELETE', `/api/keys/${stock}?hashed=true`);
    await page.click('a[href="#keys"]');
    await page.waitForSelector('[data-testid=request-status-stock]:has-text("revoked")');
    assert.equal(await page.$('[data-testid=keys] tr:has-text("stock")'), null, 'no longer listed as held');
  });
});
