/**
 * The developer portal's admin and developer APIs (docs/portal.md) on both storages: what the
 * admin API refuses (by field), RBAC on the `portal` resource, audit entries, a developer's
 * deletion revoking its keys, a disabled developer's sessions and subscriptions ending, a product's
 * deletion leaving its catalogue, sign-up off, and documentation read from a URL.
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  addUser,
  startFreshDashboard,
  type FreshDashboard,
  type TestDashboard,
} from '../testing/dashboard.ts';
import { storeFixtures } from '../testing/stores.ts';
import { SIGN_IN_LIMITS } from './sign-in-limit.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const FEED_SECRET_RE = /^[0-9a-f]{64}$/;

for (const fx of storeFixtures()) {
  describe(`portal (${fx.name})`, () => {
    let world: FreshDashboard;
    let d: TestDashboard;
    let admin: string;
    let docs: Server;
    let docsUrl = '';

    /** A developer API call of `org`. */
    const dev = async (
      org: string,
      method: string,
      path: string,
      opts: { token?: string; body?: unknown } = {},
    ): Promise<{ status: number; body: Record<string, unknown>; text: string }> => {
      const headers: Record<string, string> = {};
      if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const r = await fetch(`${d.url}/portal/${org}/api${path}`, {
        method,
        headers,
        ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      });
      const text = await r.text();
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON
      }
      return { status: r.status, body, text };
    };
    /** A request of the dashboard from the client address `from` (of 127/8), with `host` as Host. */
    const raw = (
      method: string,
      path: string,
      opts: { from?: string; host?: string; body?: unknown } = {},
    ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (opts.host !== undefined) headers.host = opts.host;
        const req = request(
          `${d.url}${path}`,
          { method, headers, ...(opts.from === undefined ? {} : { localAddress: opts.from }) },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => {
              let body: Record<string, unknown>;
              try {
                body = JSON.parse(text) as Record<string, unknown>;
              } catch {
                body = { text };
              }
              resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
            });
          },
        );
        req.on('error', reject);
        req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
      });
    /** A developer API POST of acme from the client address `from`. */
    const postFrom = (from: string, path: string, body: unknown) =>
      raw('POST', `/portal/acme/api${path}`, { from, body });
    const call = async (method: string, path: string, body?: unknown, auth = admin) =>
      d.call(method, path, { auth, ...(body === undefined ? {} : { body }) });
    const signedIn = async (email: string): Promise<{ id: string; token: string }> => {
      const reg = await dev('acme', 'POST', '/register', { body: { email, password: 'long enough' } });
      assert.equal(reg.status, 200, reg.text);
      const login = await dev('acme', 'POST', '/login', { body: { email, password: 'long enough' } });
      assert.equal(login.status, 200, login.text);
      return { id: String(reg.body.id), token: String(login.body.token) };
    };

    before(async () => {
      docs = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/yaml' });
        res.end('openapi: 3.0.3\ninfo: { title: From a URL, version: "2" }\npaths: {}\n');
      });
      await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
      docsUrl = `http://127.0.0.1:${(docs.address() as AddressInfo).port}/oas.yaml`;
      world = await startFreshDashboard(fx);
      ({ d } = world);
      const org = await d.call('POST', '/admin/organisations', {
        auth: { admin: true },
        body: { id: 'acme', owner_name: 'Acme' },
      });
      assert.equal(org.status, 200, org.text);
      admin = await addUser(d, 'acme', { IsAdmin: 'admin' });
      const api = await call('POST', '/api/apis', {
        api_definition: {
          api_id: 'stock',
          name: 'stock',
          use_keyless: false,
          proxy: { listen_path: '/stock/', target_url: 'http://upstream.test' },
        },
      });
      assert.equal(api.status, 200, api.text);
      const pol = await call('POST', '/api/portal/policies', {
        id: 'stock-pol',
        name: 'stock',
        state: 'active',
        access_rights: { stock: { api_id: 'stock', api_name: 'stock', versions: ['Default'] } },
      });
      assert.equal(pol.status, 200, pol.text);
      await call('PUT', '/api/portal/config', { developer_approval: 'auto' });
    });
    after(async () => {
      try {
        await stopAll(world);
      } finally {
        docs.close();
      }
    });

    const refusals: { name: string; path: string; body: unknown; message: RegExp }[] = [
      {
        name: 'unknown setting',
        path: '/api/portal/config',
        body: { signup: true },
        message: /signup: Unsupported field/,
      },
      {
        name: 'dcr on',
        path: '/api/portal/config',
        body: { enable_dcr: true },
        message: /enable_dcr: Unsupported value/,
      },
      {
        name: 'dcr options',
        path: '/api/portal/config',
        body: { dcr_options: { provider: 'x' } },
        message: /dcr_options: Unsupported field/,
      },
      {
        name: 'short session',
        path: '/api/portal/config',
        body: { session_lifetime_s: 5 },
        message: /session_lifetime_s: Invalid value/,
      },
      {
        name: 'no name',
        path: '/api/portal/products/p',
        body: { policy_id: 'stock-pol' },
        message: /name: Required/,
      },
      {
        name: 'missing policy',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'nope' },
        message: /policy_id: Not found/,
      },
      {
        name: 'no policy',
        path: '/api/portal/products/p',
        body: { name: 'p' },
        message: /policy_id: Required/,
      },
      {
        name: 'policy and API',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', api_id: 'stock' },
        message: /policy_id: Invalid value: give policy_id or api_id/,
      },
      {
        name: 'auth type',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', auth_type: 'jwt' },
        message: /auth_type: Unsupported value/,
      },
      {
        name: 'docs not OAS',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', docs: { documentation: 'just words' } },
        message: /docs.documentation: Invalid value/,
      },
      {
        name: 'docs both',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', docs: { documentation: '{}', url: docsUrl } },
        message: /docs: Invalid value: give exactly one/,
      },
      {
        name: 'bad event',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', subscribable_events: ['ok', 'not ok'] },
        message: /subscribable_events\[1\]: Invalid value/,
      },
      {
        name: 'unknown product field',
        path: '/api/portal/products/p',
        body: { name: 'p', policy_id: 'stock-pol', hidden: true },
        message: /hidden: Unsupported field/,
      },
      {
        name: 'catalogue of a missing product',
        path: '/api/portal/catalogues/c',
        body: { apis: ['nope'] },
        message: /apis\[0\]: Not found/,
      },
    ];
    for (const r of refusals) {
      test(`admin API refuses by field: ${r.name}`, async () => {
        const res = await call('PUT', r.path, r.body);
        assert.equal(res.status, 400, res.text);
        assert.match(String(res.body.Message), r.message);
      });
    }

    test('the portal resource: read may list, not write; deny may not read; writes are audited', async () => {
      const reader = await addUser(d, 'acme', { portal: 'read' });
      const denied = await addUser(d, 'acme', { apis: 'write' });
      assert.equal((await call('GET', '/api/portal/products', undefined, reader)).status, 200);
      assert.equal(
        (await call('PUT', '/api/portal/products/x', { name: 'x', api_id: 'stock' }, reader)).status,
        403,
      );
      assert.equal((await call('GET', '/api/portal/developers', undefined, denied)).status, 403);
      const put = await call('PUT', '/api/portal/products/audited', {
        name: 'Audited',
        api_id: 'stock',
        docs: { doc_type: 'oas', documentation: 'openapi: 3.0.3\ninfo: {title: T, version: "1"}\npaths: {}' },
      });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.feed_url, '/portal/acme/webhooks/audited');
      const audit = await call('GET', '/api/audit?p=-1');
      const entries = audit.body.entries;
      assert.match(JSON.stringify(entries), /"kind":"portal-products","object_id":"audited"/);
      // The reference's form: the document's text in base64.
      const b64 = Buffer.from('{"swagger": "2.0", "info": {"title": "B64", "version": "1"}}').toString(
        'base64',
      );
      const encoded = await call('PUT', '/api/portal/products/b64', {
        name: 'B64',
        api_id: 'stock',
        docs: { doc_type: 'oas', documentation: b64 },
      });
      assert.equal(encoded.status, 200, encoded.text);
      assert.deepEqual((encoded.body.docs as { documentation: unknown }).documentation, {
        swagger: '2.0',
        info: { title: 'B64', version: '1' },
      });
      const secret = await call('POST', '/api/portal/products/audited/actions/feed-secret');
      assert.match(String(secret.body.feed_secret), FEED_SECRET_RE);
      const got = await call('GET', '/api/portal/products/audited');
      assert.equal(got.body.has_feed_secret, true);
      assert.equal(JSON.stringify(got.body).includes(String(secret.body.feed_secret)), false);
      assert.equal(JSON.stringify(got.body).includes('feed_secret_hash'), false);
    });

    test("deleting a developer revokes its keys and ends its sessions; disabling one leaves the product's feed", async () => {
      assert.equal(
        (
          await call('PUT', '/api/portal/products/stock', {
            name: 'Stock',
            policy_id: 'stock-pol',
            key_approval: 'auto',
            subscribable_events: ['stock.low'],
            docs: { doc_type: 'oas', url: docsUrl },
          })
        ).status,
        200,
      );
      assert.equal((await call('PUT', '/api/portal/catalogues/main', { apis: ['stock'] })).status, 200);
      const feedSecret = String(
        (await call('POST', '/api/portal/products/stock/actions/feed-secret')).body.feed_secret,
      );
      const feed = async (): Promise<unknown[]> => {
        const r = await fetch(`${d.url}/portal/acme/webhooks/stock`, {
          headers: { authorization: `Bearer ${feedSecret}` },
        });
        assert.equal(r.status, 200);
        return ((await r.json()) as { subscriptions: unknown[] }).subscriptions;
      };

      const one = await signedIn('one@dev.test');
      const two = await signedIn('two@dev.test');
      const docsAnswer = await dev('acme', 'GET', '/catalogue/stock/docs', { token: one.token });
      assert.equal(docsAnswer.status, 200, docsAnswer.text);
      assert.equal((docsAnswer.body.info as { title: string }).title, 'From a URL');
      const key = await dev('acme', 'POST', '/key-requests', {
        token: one.token,
        body: { product_id: 'stock' },
      });
      assert.equal(key.status, 200, key.text);
      const keyId = String(key.body.key_id);
      assert.equal(
        (await call('GET', `/api/keys/${keyId}?hashed=true`)).status,
        200,
        'the key is a dashboard key',
      );
      const stored = (await call('GET', `/api/keys/${keyId}?hashed=true`)).body.data as Record<
        string,
        unknown
      >;
      assert.deepEqual(stored.apply_policies, ['stock-pol'], "made from the product's policy");
      for (const t of [one, two]) {
        if (t === two) {
          const k = await dev('acme', 'POST', '/key-requests', {
            token: t.token,
            body: { product_id: 'stock' },
          });
          assert.equal(k.status, 200, k.text);
        }
        const s = await dev('acme', 'POST', '/subscriptions', {
          token: t.token,
          body: { product_id: 'stock', url: 'http://hooks.test/x', events: ['stock.low'] },
        });
        assert.equal(s.status, 200, s.text);
        // Kept sealed under the admin secret, never in clear.
        const stored = await world.store.get('acme', 'portal-subscriptions', String(s.body.id));
        assert.match(String(stored?.body.secret), /^sealed:v1:/);
        assert.equal(JSON.stringify(stored?.body).includes(String(s.body.secret)), false);
      }
      const listed = (await feed()) as { secret: string }[];
      assert.equal(listed.length, 2);
      for (const sub of listed)
        assert.match(sub.secret, /^[0-9a-f]{64}$/, 'the feed answers the secret to sign with');

      // Disabled: its sessions end and its subscriptions leave the feed.
      assert.equal(
        (await call('PUT', `/api/portal/developers/${two.id}`, { status: 'disabled' })).status,
        200,
      );
      assert.equal((await dev('acme', 'GET', '/me', { token: two.token })).status, 401);
      assert.equal((await feed()).length, 1);

      // Deleted: its key is revoked, its session and subscriptions gone.
      assert.equal((await call('DELETE', `/api/portal/developers/${one.id}`)).status, 200);
      assert.equal((await call('GET', `/api/keys/${keyId}?hashed=true`)).status, 404, 'the key was revoked');
      assert.equal((await dev('acme', 'GET', '/me', { token: one.token })).status, 401);
      assert.equal((await feed()).length, 0);
    });

    test('sign-up off is refused; deleting a product takes it out of its catalogue and leaves its issued keys listed', async () => {
      assert.equal((await call('PUT', '/api/portal/config', { signup_enabled: false })).status, 200);
      const r = await dev('acme', 'POST', '/register', {
        body: { email: 'late@dev.test', password: 'long enough' },
      });
      assert.equal(r.status, 403);
      assert.equal((await dev('acme', 'GET', '/portal')).body.signup_enabled, false);
      assert.equal((await call('PUT', '/api/portal/config', { developer_approval: 'auto' })).status, 200);
      assert.equal(
        (
          await call('PUT', '/api/portal/products/gone', {
            name: 'Gone',
            api_id: 'stock',
            key_approval: 'auto',
          })
        ).status,
        200,
      );
      assert.equal(
        (await call('PUT', '/api/portal/catalogues/two', { apis: ['gone', 'stock'] })).status,
        200,
      );
      const one = await signedIn('product-gone@dev.test');
      const key = await dev('acme', 'POST', '/key-requests', {
        token: one.token,
        body: { product_id: 'gone' },
      });
      assert.equal(key.status, 200, key.text);
      assert.equal((await call('DELETE', '/api/portal/products/gone')).status, 200);
      // Its issued key still works, so it is still shown (to the developer and the admin) and revocable.
      const keyId = String(key.body.key_id);
      assert.equal((await call('GET', `/api/keys/${keyId}?hashed=true`)).status, 200);
      const held = (await dev('acme', 'GET', '/keys', { token: one.token })).body.keys as {
        key_id: string;
      }[];
      assert.deepEqual(
        held.map((k) => k.key_id),
        [keyId],
      );
      const listed = (await call('GET', '/api/portal/keys?p=-1')).body.keys as { key_id: string }[];
      assert.ok(listed.some((k) => k.key_id === keyId));
      assert.equal((await dev('acme', 'DELETE', `/keys/${keyId}`, { token: one.token })).status, 200);
      assert.equal((await call('GET', `/api/keys/${keyId}?hashed=true`)).status, 404);
      assert.deepEqual((await call('GET', '/api/portal/catalogues/two')).body.apis, ['stock']);
      assert.equal((await call('GET', '/api/portal/products/gone')).status, 404);
    });

    test("a key the organisation deleted through the dashboard's keys API is revoked in the portal", async () => {
      assert.equal(
        (
          await call('PUT', '/api/portal/products/deleted-keys', {
            name: 'Deleted keys',
            api_id: 'stock',
            key_approval: 'auto',
          })
        ).status,
        200,
      );
      assert.equal((await call('PUT', '/api/portal/catalogues/dk', { apis: ['deleted-keys'] })).status, 200);
      const one = await signedIn('deleted-key@dev.test');
      const key = await dev('acme', 'POST', '/key-requests', {
        token: one.token,
        body: { product_id: 'deleted-keys' },
      });
      assert.equal(key.status, 200, key.text);
      const keyId = String(key.body.key_id);
      assert.equal((await call('DELETE', `/api/keys/${keyId}?hashed=true`)).status, 200);

      const keys = await dev('acme', 'GET', '/keys', { token: one.token });
      assert.deepEqual(keys.body.keys, [], 'the deleted key is not listed as held');
      const requests = await dev('acme', 'GET', '/key-requests', { token: one.token });
      assert.deepEqual(
        (requests.body.key_requests as { key_id: string; status: string }[]).map((r) => [r.key_id, r.status]),
        [[keyId, 'revoked']],
      );
      const admins = (await call('GET', '/api/portal/keys?p=-1')).body.keys as { key_id: string }[];
      assert.equal(
        admins.some((k) => k.key_id === keyId),
        false,
      );
      const revoked = await call('GET', '/api/portal/key-requests?status=revoked&p=-1');
      assert.equal(
        (revoked.body.key_requests as { key_id: string }[]).some((r) => r.key_id === keyId),
        true,
      );

      const again = await dev('acme', 'DELETE', `/keys/${keyId}`, { token: one.token });
      assert.equal(again.status, 410, again.text);
      assert.deepEqual(Object.keys(again.body).sort(), ['Message', 'Meta', 'Status']);
      assert.match(String(again.body.Message), /already revoked/);
      assert.equal((await dev('acme', 'DELETE', `/keys/${keyId}`, { token: one.token })).status, 410);
      // Now recorded: the stored request says revoked too.
      const stored = await world.store.get(
        'acme',
        'portal-key-requests',
        String((requests.body.key_requests as { id: string }[])[0]?.id),
      );
      assert.equal(stored?.body.status, 'revoked');
    });

    test('sign-in and sign-up are limited per e-mail and per client address: 429 with Retry-After', async () => {
      const email = 'limited@dev.test';
      const reg = await postFrom('127.0.0.2', '/register', { email, password: 'long enough' });
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      // An attacker at 127.0.0.3 guesses: after the limit even the right password waits there.
      for (let i = 0; i < SIGN_IN_LIMITS.email_and_address; i++) {
        const r = await postFrom('127.0.0.3', '/login', { email, password: `guess ${String(i)}` });
        assert.equal(r.status, 401);
      }
      const locked = await postFrom('127.0.0.3', '/login', { email, password: 'long enough' });
      assert.equal(locked.status, 429);
      assert.deepEqual(Object.keys(locked.body).sort(), ['Message', 'Meta', 'Status']);
      assert.equal(locked.body.Status, 'Error');
      assert.match(String(locked.body.Message), /Too many attempts: try again in \d+ seconds/);
      const retry = Number(locked.headers['retry-after']);
      assert.ok(retry > 0 && retry <= SIGN_IN_LIMITS.window_ms / 1000, String(retry));
      // The developer, elsewhere, is not locked out by the attacker.
      const mine = await postFrom('127.0.0.2', '/login', { email, password: 'long enough' });
      assert.equal(mine.status, 200, JSON.stringify(mine.body));

      // One address trying many e-mails (failed sign-ins and sign-ups count) is stopped too.
      for (let i = 0; i < SIGN_IN_LIMITS.address; i++) {
        const r =
          i % 2 === 0
            ? await postFrom('127.0.0.4', '/login', { email: `spray${String(i)}@dev.test`, password: 'x' })
            : await postFrom('127.0.0.4', '/register', {
                email: `spray${String(i)}@dev.test`,
                password: 'long enough',
              });
        assert.notEqual(r.status, 429, `attempt ${String(i)}`);
      }
      for (const path of ['/login', '/register']) {
        const r = await postFrom('127.0.0.4', path, { email: 'fresh@dev.test', password: 'long enough' });
        assert.equal(r.status, 429, path);
        assert.ok(Number(r.headers['retry-after']) > 0);
      }
      const other = await postFrom('127.0.0.5', '/register', {
        email: 'fresh@dev.test',
        password: 'long enough',
      });
      assert.equal(other.status, 200, JSON.stringify(other.body));
    });

    const signUps: { name: string; body: Record<string, unknown>; message: RegExp }[] = [
      { name: 'no e-mail', body: { password: 'long enough' }, message: /email: Required value/ },
      { name: 'no @', body: { email: 'nobody', password: 'long enough' }, message: /email: Invalid value/ },
      { name: 'two @', body: { email: 'a@b@c.test', password: 'long enough' }, message: /email: Invalid/ },
      { name: 'a space', body: { email: 'a b@c.test', password: 'long enough' }, message: /email: Invalid/ },
      {
        name: 'a control character',
        body: { email: 'a\u0000b@c.test', password: 'long enough' },
        message: /email: Invalid value/,
      },
      {
        name: 'a long e-mail',
        body: { email: `${'a'.repeat(250)}@c.test`, password: 'long enough' },
        message: /email: Invalid value: at most 254 characters/,
      },
      { name: 'e-mail not a string', body: { email: 7, password: 'long enough' }, message: /email: Invalid/ },
      {
        name: 'short password',
        body: { email: 'p@dev.test', password: 'short' },
        message: /password: Required/,
      },
      {
        name: 'long password',
        body: { email: 'p@dev.test', password: 'x'.repeat(1025) },
        message: /password: Invalid value: at most 1024 characters/,
      },
    ];
    signUps.push(
      {
        name: 'name not a string',
        body: { email: 'n@dev.test', password: 'long enough', name: 7 },
        message: /name: Invalid value: a string/,
      },
      {
        name: 'a long name',
        body: { email: 'n@dev.test', password: 'long enough', name: 'n'.repeat(257) },
        message: /name: Invalid value: at most 256 characters/,
      },
    );
    for (const c of signUps) {
      test(`sign-up refuses by field: ${c.name}`, async () => {
        const r = await dev('acme', 'POST', '/register', { body: c.body });
        assert.equal(r.status, 400, r.text);
        assert.match(String(r.body.Message), c.message);
      });
    }

    test("an outsider's key requests and subscriptions: unknown product, a second request, events and URLs the product does not take", async () => {
      for (const [id, approval] of [
        ['outsider-auto', 'auto'],
        ['outsider-manual', 'manual'],
      ] as const) {
        const put = await call('PUT', `/api/portal/products/${id}`, {
          name: id,
          api_id: 'stock',
          key_approval: approval,
          subscribable_events: ['stock.low'],
        });
        assert.equal(put.status, 200, put.text);
      }
      assert.equal(
        (await call('PUT', '/api/portal/catalogues/outsider', { apis: ['outsider-auto', 'outsider-manual'] }))
          .status,
        200,
      );
      const one = await signedIn('outsider@dev.test');
      const ask = (product_id: unknown) =>
        dev('acme', 'POST', '/key-requests', { token: one.token, body: { product_id } });

      assert.equal((await ask('no-such-product')).status, 404);
      const notString = await ask(7);
      assert.equal(notString.status, 400);
      assert.match(String(notString.body.Message), /product_id: Required value/);

      const first = await ask('outsider-auto');
      assert.equal(first.status, 200, first.text);
      const second = await ask('outsider-auto');
      assert.equal(second.status, 409, second.text);
      assert.match(String(second.body.Message), new RegExp(`you hold its key ${String(first.body.key_id)}`));
      const pending = await ask('outsider-manual');
      assert.equal(pending.status, 200, pending.text);
      const again = await ask('outsider-manual');
      assert.equal(again.status, 409);
      assert.match(String(again.body.Message), /is pending/);
      const mine = await dev('acme', 'GET', '/key-requests', { token: one.token });
      assert.equal((mine.body.key_requests as unknown[]).length, 2, 'no request was made by the refusals');
      // Once revoked, a new key may be asked for.
      assert.equal(
        (await dev('acme', 'DELETE', `/keys/${String(first.body.key_id)}`, { token: one.token })).status,
        200,
      );
      assert.equal((await ask('outsider-auto')).status, 200);

      const subscribe = (body: Record<string, unknown>) =>
        dev('acme', 'POST', '/subscriptions', { token: one.token, body });
      const refusals: [Record<string, unknown>, number, RegExp][] = [
        [{ product_id: 'nope', url: 'http://hooks.test/', events: ['stock.low'] }, 404, /Product not found/],
        [
          { product_id: 'outsider-auto', url: 'http://hooks.test/', events: ['stock.high'] },
          400,
          /events\[0\]: Unsupported value: "stock.high" is not an event of the product \(stock.low\)/,
        ],
        [
          { product_id: 'outsider-auto', url: 'http://hooks.test/', events: [] },
          400,
          /events: Required value/,
        ],
        [
          { product_id: 'outsider-auto', url: 'ftp://hooks.test/', events: ['stock.low'] },
          400,
          /url: Required/,
        ],
        [
          { product_id: 'outsider-auto', url: 'javascript:alert(1)', events: ['stock.low'] },
          400,
          /url: Required/,
        ],
        [{ product_id: 'outsider-auto', url: 'http://', events: ['stock.low'] }, 400, /url: Required/],
        [{ product_id: 'outsider-auto', url: '/relative', events: ['stock.low'] }, 400, /url: Required/],
        [
          {
            product_id: 'outsider-auto',
            url: `http://hooks.test/${'x'.repeat(2048)}`,
            events: ['stock.low'],
          },
          400,
          /url: Invalid value: at most 2048 characters/,
        ],
        [
          { product_id: 'outsider-manual', url: 'http://hooks.test/', events: ['stock.low'] },
          403,
          /needs a key of the product/,
        ],
      ];
      for (const [body, status, message] of refusals) {
        const r = await subscribe(body);
        assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 100)}: ${r.text}`);
        assert.match(String(r.body.Message), message);
      }
      assert.deepEqual(
        (await dev('acme', 'GET', '/subscriptions', { token: one.token })).body.subscriptions,
        [],
      );
      const ok = await subscribe({
        product_id: 'outsider-auto',
        url: 'https://hooks.test/in',
        events: ['stock.low'],
      });
      assert.equal(ok.status, 200, ok.text);
    });

    test('a path segment with broken percent-encoding is not found (404), never an internal error', async () => {
      const one = await signedIn('percent@dev.test');
      for (const [method, path] of [
        ['GET', '/portal/acme/api/catalogue/%ZZ'],
        ['GET', '/portal/acme/api/catalogue/%E0%A4%A/docs'],
        ['POST', '/portal/acme/api/key-requests/%ZZ/key'],
        ['DELETE', '/portal/acme/api/subscriptions/%ZZ'],
        ['GET', '/portal/acme/webhooks/%ZZ'],
        ['GET', '/portal/%ZZ/api/portal'],
      ] as const) {
        const r = await fetch(`${d.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${one.token}` },
        });
        assert.ok(r.status === 404 || r.status === 401, `${method} ${path}: ${String(r.status)}`);
        assert.equal(((await r.json()) as { Status: string }).Status, 'Error');
      }
      const admins = await call('GET', '/api/portal/products/%ZZ');
      assert.ok(admins.status < 500, String(admins.status));
      const longName = await call('PUT', `/api/portal/developers/${one.id}`, { name: 'n'.repeat(257) });
      assert.equal(longName.status, 400);
      assert.match(String(longName.body.Message), /name: Invalid value: at most 256 characters/);
    });

    test("a disabled developer's session and sign-in; a deleted developer's keys and e-mail", async () => {
      const one = await signedIn('disabled@dev.test');
      const key = await dev('acme', 'POST', '/key-requests', {
        token: one.token,
        body: { product_id: 'outsider-auto' },
      });
      assert.equal(key.status, 200, key.text);
      assert.equal(
        (await call('PUT', `/api/portal/developers/${one.id}`, { status: 'disabled' })).status,
        200,
      );
      for (const [method, path] of [
        ['GET', '/keys'],
        ['POST', '/key-requests'],
        ['DELETE', `/keys/${String(key.body.key_id)}`],
        ['GET', '/subscriptions'],
      ] as const) {
        const r = await dev('acme', method, path, {
          token: one.token,
          ...(method === 'POST' ? { body: { product_id: 'outsider-auto' } } : {}),
        });
        assert.equal(r.status, 401, `${method} ${path}`);
      }
      const login = await dev('acme', 'POST', '/login', {
        body: { email: 'disabled@dev.test', password: 'long enough' },
      });
      assert.equal(login.status, 403);
      assert.match(String(login.body.Message), /disabled/);
      // Its key stays until revoked (docs/portal.md), then goes with the developer.
      assert.equal((await call('GET', `/api/keys/${String(key.body.key_id)}?hashed=true`)).status, 200);
      assert.equal((await call('DELETE', `/api/portal/developers/${one.id}`)).status, 200);
      assert.equal((await call('GET', `/api/keys/${String(key.body.key_id)}?hashed=true`)).status, 404);
      const keys = (await call('GET', '/api/portal/keys?p=-1')).body.keys as { developer_id: string }[];
      assert.equal(
        keys.some((k) => k.developer_id === one.id),
        false,
      );
      // The e-mail may sign up again: a new account, without the old keys.
      const back = await signedIn('disabled@dev.test');
      assert.notEqual(back.id, one.id);
      assert.deepEqual((await dev('acme', 'GET', '/keys', { token: back.token })).body.keys, []);
      assert.deepEqual(
        (await dev('acme', 'GET', '/key-requests', { token: back.token })).body.key_requests,
        [],
      );
    });

    test('the portal domain: cname in any case, with a port or a trailing dot; one organisation per domain', async () => {
      const org = async (id: string, cname: unknown) =>
        d.call('POST', '/admin/organisations', {
          auth: { admin: true },
          body: { id, owner_name: id, cname },
        });
      for (const bad of [
        ':80',
        'a..example.com',
        '-a.example.com',
        'a_b.example.com',
        'a.example.com:99999',
        'a.example.com:0',
        'a.example.com:80:80',
        7,
      ]) {
        const r = await org('bad-cname', bad);
        assert.equal(r.status, 400, `${String(bad)}: ${r.text}`);
        assert.match(String(r.body.Message), /cname: Invalid value/);
      }
      assert.equal((await org('shop', 'Shop.Example.COM')).status, 200);
      assert.equal((await org('ported', 'ported.example.com:8443')).status, 200);
      const name = async (host: string): Promise<unknown> =>
        (await raw('GET', '/api/portal', { host })).body.org_id;
      assert.equal(await name('shop.example.com'), 'shop');
      assert.equal(await name('SHOP.example.com:3000'), 'shop');
      assert.equal(await name('shop.example.com.'), 'shop');
      assert.equal(await name('shop.example.com.:3000'), 'shop');
      assert.equal(await name('ported.example.com:8443'), 'ported');
      assert.equal(await name('PORTED.EXAMPLE.COM:8443'), 'ported');
      assert.equal(await name('ported.example.com:9443'), undefined, 'another port is not the portal');
      // On a portal domain, /portal/{org}/ is a path of that portal, not another organisation's.
      const across = await raw('GET', '/portal/acme/api/portal', { host: 'shop.example.com' });
      assert.equal(across.status, 404);
      assert.equal((await raw('GET', '/portal/acme/api/portal', { host: '127.0.0.1' })).body.org_id, 'acme');
      // One domain, one organisation: whatever its case, port or trailing dot.
      for (const taken of ['shop.example.com', 'SHOP.example.com.:8080']) {
        const r = await org('copycat', taken);
        assert.equal(r.status, 409, r.text);
        assert.match(String(r.body.Message), /cname: .* is the portal domain of organisation shop already/);
      }
      const put = await d.call('PUT', '/admin/organisations/ported', {
        auth: { admin: true },
        body: { owner_name: 'ported', cname: 'shop.example.com' },
      });
      assert.equal(put.status, 409);
      // Its own domain again is no clash.
      const same = await d.call('PUT', '/admin/organisations/shop', {
        auth: { admin: true },
        body: { owner_name: 'Shop', cname: 'shop.example.com' },
      });
      assert.equal(same.status, 200, same.text);
    });
  });
}
