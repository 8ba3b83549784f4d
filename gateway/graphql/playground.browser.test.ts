/**
 * The GraphQL playground rendered in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core), served by a real gateway for a keyed proxyOnly API in front of a real
 * GraphQL upstream: the page loads nothing from any other host, a query without a key shows the
 * gateway's 401, and with the key typed into the headers box it shows the upstream's data.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { keyed, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { startGraphqlUpstream, UPSTREAM_SDL, type TestUpstream } from './testing.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];
const KEY = 'playground-key';

describe(
  'GraphQL playground in a browser',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} missing (apt-get install chromium)` },
  () => {
    let gql: TestUpstream;
    let gw: InProcessGateway;
    let browser: Browser;
    let page: Page;
    /** Requests the page made to any origin but the gateway's. */
    const outside: string[] = [];

    before(async () => {
      gql = await startGraphqlUpstream();
      gw = await startGateway();
      await gw.addApi(
        keyed('pg', '/pg/', gql.url, {
          graphql: {
            enabled: true,
            execution_mode: 'proxyOnly',
            schema: UPSTREAM_SDL,
            playground: { enabled: true, path: '/playground' },
          },
        }),
      );
      await gw.reload();
      const key = await gw.admin('POST', `/svc/keys/${KEY}`, {
        org_id: '',
        access_rights: { pg: { api_id: 'pg', versions: ['Default'] } },
      });
      assert.equal(key.status, 200, key.text);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
      page = await browser.newPage();
      const origin = `http://127.0.0.1:${String(gw.port)}`;
      page.on('request', (r) => {
        if (!r.url().startsWith(`${origin}/`)) outside.push(r.url());
      });
    });

    after(async () => {
      await browser.close();
      await gw.stop();
      await gql.close();
    });

    /** Types a query (and headers), runs it and waits for the result with its status. */
    async function run(query: string, headers: string): Promise<{ status: string; text: string }> {
      await page.fill('#headers', headers);
      await page.fill('#query', query);
      // A string: this project's types have no DOM.
      await page.evaluate("document.getElementById('result').removeAttribute('data-status')");
      await page.click('#run');
      await page.waitForSelector('#result[data-status]');
      const result = page.locator('#result');
      return {
        status: (await result.getAttribute('data-status')) ?? '',
        text: (await result.textContent()) ?? '',
      };
    }

    test('the page renders from the gateway alone', async () => {
      const res = await page.goto(`http://127.0.0.1:${String(gw.port)}/pg/playground`);
      assert.equal(res?.status(), 200);
      assert.match(await page.title(), /pg API · GraphQL playground/);
      assert.equal(await page.locator('#run').isVisible(), true);
      assert.equal(await page.locator('#query').inputValue(), '{ __typename }');
    });

    test('a query without a key: the gateway refuses it, as any request', async () => {
      const calls = gql.calls.length;
      const r = await run('{ hello }', '');
      assert.equal(r.status, '401');
      assert.equal(gql.calls.length, calls, 'the upstream was not called');
    });

    test('with the key in the headers: the result shows the upstream data', async () => {
      const r = await run('{ user(id: "1") { name } }', JSON.stringify({ Authorization: KEY }));
      assert.equal(r.status, '200');
      assert.deepEqual(JSON.parse(r.text), { data: { user: { name: 'Ada' } }, path: '/pg/' });
    });

    test('an invalid query: the GraphQL error is shown with its location', async () => {
      const r = await run('{ nope }', JSON.stringify({ Authorization: KEY }));
      assert.equal(r.status, '400');
      const body = JSON.parse(r.text) as { errors: { message: string; locations: unknown }[] };
      assert.deepEqual(body.errors, [
        { message: 'Cannot query field "nope" on type "Query".', locations: [{ line: 1, column: 3 }] },
      ]);
    });

    test('nothing was loaded from another host', () => {
      assert.deepEqual(outside, []);
    });
  },
);
