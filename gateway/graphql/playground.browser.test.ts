/**
 * The GraphQL playground (GraphiQL) rendered in headless Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core), served by a real gateway for a keyed proxyOnly API in front of a
 * real GraphQL upstream: the page loads nothing from any other host and breaks none of its
 * Content-Security-Policy; a query typed into GraphiQL's editor and run without a key shows the
 * gateway's 401, and with the key typed into GraphiQL's headers editor shows the upstream's data.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { InProcessGateway } from '../testing/harness.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { startPlayground, type TestUpstream } from './testing.ts';

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

/** GraphiQL's editors (CodeMirror 5 instances) by the section that holds them. */
const EDITORS = {
  query: '.graphiql-query-editor .CodeMirror',
  /** The variables and headers editors share a section; the tab shown is the one not hidden. */
  headers: 'section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .CodeMirror',
  result: '.graphiql-response .CodeMirror',
} as const;

/** An expression for an editor's CodeMirror object (a string: this project's types have no DOM). */
const editor = (selector: string): string => `document.querySelector(${JSON.stringify(selector)}).CodeMirror`;

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
    /** Every request the page made, and the console's reports of the page's policy. */
    const requested: string[] = [];
    const violations: string[] = [];

    before(async () => {
      ({ gql, gw } = await startPlayground());
      const key = await gw.admin('POST', `/svc/keys/${KEY}`, {
        org_id: '',
        access_rights: { pg: { api_id: 'pg', versions: ['Default'] } },
      });
      assert.equal(key.status, 200, key.text);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
      page = await browser.newPage();
      const origin = `http://127.0.0.1:${String(gw.port)}`;
      page.on('request', (r) => {
        requested.push(r.url());
        if (!r.url().startsWith(`${origin}/`)) outside.push(r.url());
      });
      page.on('console', (m) => {
        if (/Content.Security.Policy/i.test(m.text())) violations.push(m.text());
      });
    });

    after(async () => {
      await browser.close();
      await gw.stop();
      await gql.close();
    });

    /** Replaces an editor's text by typing it, as a user would. */
    async function typeInto(selector: string, text: string): Promise<void> {
      await page.click(selector);
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Delete');
      await page.keyboard.type(text);
      // CodeMirror closes brackets and quotes as they are typed; check it came out as meant.
      assert.equal(await page.evaluate(`${editor(selector)}.getValue()`), text);
    }

    /**
     * Types a query and headers into GraphiQL, runs it, and returns the status of the POST it made
     * and the result pane read as JSON.
     */
    async function run(
      query: string,
      headers: Record<string, string>,
    ): Promise<{ status: number; sent: Record<string, string>; shown: unknown }> {
      await page.click('.graphiql-editor-tools button[data-name="headers"]');
      await typeInto(EDITORS.headers, JSON.stringify(headers));
      await typeInto(EDITORS.query, query);
      // GraphiQL shows the schema fetch's outcome on load: empty the pane so no old result passes.
      await page.evaluate(`${editor(EDITORS.result)}.setValue('')`);
      const endpoint = `http://127.0.0.1:${String(gw.port)}/pg/`;
      const posted = page.waitForResponse((r) => r.url() === endpoint && r.request().method() === 'POST');
      await page.click('.graphiql-execute-button');
      const response = await posted;
      assert.deepEqual(response.request().postDataJSON(), { query }, 'the typed query was sent');
      // Polled from here: the page's policy forbids the eval that page.waitForFunction relies on.
      const text = await waitFor('the result pane', async () => {
        const v = await page.evaluate(`${editor(EDITORS.result)}.getValue()`);
        return typeof v === 'string' && v !== '' ? v : undefined;
      });
      return {
        status: response.status(),
        sent: await response.request().allHeaders(),
        shown: JSON.parse(text),
      };
    }

    test('GraphiQL renders from the gateway alone', async () => {
      const res = await page.goto(`http://127.0.0.1:${String(gw.port)}/pg/playground`);
      assert.equal(res?.status(), 200);
      assert.match(res.headers()['content-security-policy'] ?? '', /default-src 'none'; script-src 'self'/);
      assert.match(await page.title(), /pg API · GraphQL playground/);
      await page.waitForSelector('.graphiql-execute-button');
      assert.equal(await page.evaluate(`${editor(EDITORS.query)}.getValue()`), '{ __typename }\n');
      assert.ok(
        requested.some((u) => /\/pg\/playground\/assets\/graphiql\.[0-9a-f]+\.js$/.test(u)),
        'GraphiQL came from the playground path',
      );
    });

    test('a query without a key: the gateway refuses it, as any request', async () => {
      const calls = gql.calls.length;
      const r = await run('{ hello }', {});
      assert.equal(r.status, 401);
      assert.deepEqual(r.shown, {
        errors: [
          {
            message: 'HTTP 401 Unauthorized: Authorization field missing',
            extensions: { status: 401, body: { error: 'Authorization field missing' } },
          },
        ],
      });
      assert.equal(gql.calls.length, calls, 'the upstream was not called');
    });

    test('with the key in the headers editor: the result shows the upstream data', async () => {
      const r = await run('{ user(id: "1") { name } }', { Authorization: KEY });
      assert.equal(r.status, 200);
      assert.equal(r.sent.authorization, KEY, 'the headers editor set the header');
      assert.deepEqual(r.shown, { data: { user: { name: 'Ada' } }, path: '/pg/' });
    });

    test('an invalid query: the GraphQL error is shown with its location', async () => {
      const r = await run('{ nope }', { Authorization: KEY });
      assert.equal(r.status, 400);
      assert.deepEqual(r.shown, {
        errors: [
          { message: 'Cannot query field "nope" on type "Query".', locations: [{ line: 1, column: 3 }] },
        ],
      });
    });

    test('nothing was loaded from another host, and the page kept to its policy', () => {
      assert.deepEqual(outside, []);
      assert.deepEqual(violations, []);
    });
  },
);
