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
    /** A developer API POST of acme from the client address `from` (a loopback address of 127/8). */
    const postFrom = (
      from: string,
      path: string,
      body: unknown,
    ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> =>
      new Promise((resolve, reject) => {
        const req = request(
          `${d.url}/portal/acme/api${path}`,
          { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => {
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                body: JSON.parse(text) as Record<string, unknown>,
              });
            });
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
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
      await world.close();
      docs.close();
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

    test('sign-up off is refused; deleting a product takes it out of its catalogue', async () => {
      assert.equal((await call('PUT', '/api/portal/config', { signup_enabled: false })).status, 200);
      const r = await dev('acme', 'POST', '/register', {
        body: { email: 'late@dev.test', password: 'long enough' },
      });
      assert.equal(r.status, 403);
      assert.equal((await dev('acme', 'GET', '/portal')).body.signup_enabled, false);
      assert.equal((await call('PUT', '/api/portal/config', { developer_approval: 'auto' })).status, 200);
      assert.equal(
        (await call('PUT', '/api/portal/products/gone', { name: 'Gone', api_id: 'stock' })).status,
        200,
      );
      assert.equal(
        (await call('PUT', '/api/portal/catalogues/two', { apis: ['gone', 'stock'] })).status,
        200,
      );
      assert.equal((await call('DELETE', '/api/portal/products/gone')).status, 200);
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
  });
}
