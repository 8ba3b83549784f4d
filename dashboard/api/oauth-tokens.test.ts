/**
 * The access tokens gateways issue to the dashboard's OAuth clients, on both storages: reported by
 * a gateway (`POST /system/oauth-tokens`), listed to the client's organisation only
 * (`GET /api/apis/oauth/{apiId}/{clientId}/tokens`), revoked one by one or all at once at the
 * reference's paths and the client's `tokens` path, under the keys permission, audited, and
 * announced to the gateways (a `change` naming the token's hash); a revoked token reported again
 * is answered as revoked.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  addOauthApi,
  addUser,
  startFreshDashboard,
  type FreshDashboard,
  type TestDashboard,
} from '../testing/dashboard.ts';
import { storeFixtures } from '../testing/stores.ts';

const NODE_SECRET = 'test-node-secret-tokens-0123456789';
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

/** An organisation with an OAuth API, a policy, a client, and users of the keys permission. */
async function tenant(
  d: TestDashboard,
  org: string,
): Promise<{ admin: string; read: string; deny: string; client: string; secret: string }> {
  assert.equal(
    (
      await d.call('POST', '/admin/organisations', {
        auth: { admin: true },
        body: { id: org, owner_name: org },
      })
    ).status,
    200,
  );
  const user = (perms: Record<string, string>): Promise<string> => addUser(d, org, perms);
  const admin = await user({ IsAdmin: 'admin' });
  await addOauthApi(d, admin, 'stock');
  const client = await d.call('POST', '/api/apis/oauth/stock', {
    auth: admin,
    body: { policy_id: 'stock-clients', client_id: 'robot' },
  });
  assert.equal(client.status, 200, client.text);
  return {
    admin,
    read: await user({ keys: 'read' }),
    deny: await user({ keys: 'deny', apis: 'write' }),
    client: 'robot',
    secret: String(client.body.secret),
  };
}

for (const fx of storeFixtures()) {
  describe(`dashboard OAuth tokens on ${fx.name}`, () => {
    let world: FreshDashboard;
    let d: TestDashboard;
    let a: Awaited<ReturnType<typeof tenant>>;
    let b: Awaited<ReturnType<typeof tenant>>;
    const inAnHour = (): number => Math.floor(Date.now() / 1000) + 3600;
    /** A gateway's report, for the organisations `orgs` (all when empty). */
    const report = async (
      tokens: unknown[],
      orgs = '',
      gone: string[] = [],
    ): Promise<{ status: number; body: unknown }> => {
      const r = await fetch(`${d.url}/system/oauth-tokens${orgs === '' ? '' : `?orgs=${orgs}`}`, {
        method: 'POST',
        headers: { 'x-svc-node-secret': NODE_SECRET, 'content-type': 'application/json' },
        body: JSON.stringify({ tokens, gone }),
      });
      return { status: r.status, body: await r.json() };
    };
    const token = (t: string, expires = inAnHour()): Record<string, unknown> => ({
      token_hash: sha(t),
      client_id: 'robot',
      api_id: 'stock',
      expires,
    });

    before(async () => {
      world = await startFreshDashboard(fx, { node_secret: NODE_SECRET });
      ({ d } = world);
      a = await tenant(d, 'org-a');
      b = await tenant(d, 'org-b');
    });
    after(() => world.close());

    test("a gateway's tokens are listed to the client's organisation only, never the token", async () => {
      const expiredAt = Math.floor(Date.now() / 1000) - 10;
      const r = await report(
        [
          token('tok-live-1'),
          token('tok-expired', expiredAt),
          { ...token('tok-other'), client_id: 'nobody' },
        ],
        'org-a',
      );
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { revoked: [], unknown: [sha('tok-other')] });
      const listed = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: a.read });
      assert.equal(listed.status, 200, listed.text);
      const rows = listed.body as unknown as Record<string, unknown>[];
      assert.deepEqual(
        rows.map((t) => [t.code, t.token_hash, typeof t.expires, typeof t.issued_at]),
        [[sha('tok-live-1'), sha('tok-live-1'), 'number', 'string']],
      );
      assert.ok(!listed.text.includes('tok-live-1'));
      // org-b has a client `robot` of an API `stock` too: its list is its own, empty.
      const other = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: b.admin });
      assert.equal(other.status, 200, other.text);
      assert.deepEqual(other.body, []);
      assert.equal(
        (await d.call('GET', '/api/apis/oauth/stock/nobody/tokens', { auth: a.admin })).status,
        404,
      );
      const denied = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: a.deny });
      assert.equal(denied.status, 403, denied.text);
      // A token the gateway deleted itself is listed no more.
      assert.equal((await report([token('tok-gone')], 'org-a')).status, 200);
      const before = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: a.read });
      assert.equal((before.body as unknown as unknown[]).length, 2);
      assert.equal((await report([], 'org-a', [sha('tok-gone')])).status, 200);
      const afterGone = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: a.read });
      assert.deepEqual(
        (afterGone.body as unknown as { code: string }[]).map((t) => t.code),
        [sha('tok-live-1')],
      );
      // A report is checked: a malformed token is refused naming it.
      const bad = await report([{ token_hash: 'x' }]);
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /tokens\[0\]: Invalid/);
    });

    test('a token revoked is announced to the gateways, audited, and answered as revoked after', async () => {
      assert.deepEqual((await report([token('tok-2'), token('tok-3')], 'org-a')).body, {
        revoked: [],
        unknown: [],
      });
      // Another organisation, and a reader, revoke nothing.
      const fromB = await d.call('POST', '/api/apis/oauth/robot/revoke', {
        auth: b.admin,
        body: { token: 'tok-2' },
      });
      assert.equal(fromB.status, 200, fromB.text);
      const fromBDelete = await d.call('DELETE', `/api/apis/oauth/stock/robot/tokens/${sha('tok-2')}`, {
        auth: b.admin,
      });
      assert.equal(fromBDelete.status, 404, fromBDelete.text);
      const reader = await d.call('POST', '/api/apis/oauth/robot/revoke', {
        auth: a.read,
        body: { token: 'tok-2' },
      });
      assert.equal(reader.status, 403, reader.text);
      const live = async (): Promise<string[]> => {
        const l = await d.call('GET', '/api/apis/oauth/stock/robot/tokens', { auth: a.admin });
        return (l.body as unknown as { code: string }[]).map((t) => t.code).sort();
      };
      assert.deepEqual(await live(), [sha('tok-live-1'), sha('tok-2'), sha('tok-3')].sort());

      const stream = await fetch(`${d.url}/system/notifications?orgs=org-a`, {
        headers: { 'x-svc-node-secret': NODE_SECRET },
      });
      assert.ok(stream.body !== null);
      const events = (stream.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      let seen = '';
      const announced = async (hash: string): Promise<void> => {
        while (!seen.includes(`"kind":"oauth-tokens","id":"${hash}"`)) {
          const chunk = await events.next();
          assert.ok(!chunk.done, seen);
          seen += Buffer.from(chunk.value).toString();
        }
      };
      const one = await d.call('POST', '/api/apis/oauth/robot/revoke', {
        auth: a.admin,
        body: { token: 'tok-2', token_type_hint: 'access_token' },
      });
      assert.deepEqual(one.body, { Status: 'OK', Message: 'token revoked successfully', Meta: null });
      await announced(sha('tok-2'));
      assert.deepEqual(await live(), [sha('tok-live-1'), sha('tok-3')].sort());
      assert.deepEqual((await report([token('tok-2'), token('tok-3')], 'org-a')).body, {
        revoked: [sha('tok-2')],
        unknown: [],
      });
      // One token by its listed hash, then all the client's.
      const byHash = await d.call('DELETE', `/api/apis/oauth/stock/robot/tokens/${sha('tok-3')}`, {
        auth: a.admin,
      });
      assert.equal(byHash.status, 200, byHash.text);
      await announced(sha('tok-3'));
      const again = await d.call('DELETE', `/api/apis/oauth/stock/robot/tokens/${sha('tok-3')}`, {
        auth: a.admin,
      });
      assert.equal(again.status, 404, again.text);
      // A client secret given must be the client's: a wrong one revokes nothing.
      const wrong = await d.call('POST', '/api/apis/oauth/robot/revoke_all', {
        auth: a.admin,
        body: { client_secret: 'not the secret' },
      });
      assert.equal(wrong.status, 403, wrong.text);
      assert.match(String(wrong.body.Message), /^client_secret: /);
      assert.deepEqual(await live(), [sha('tok-live-1')]);
      // The reference's form body, with the right secret.
      const all = await d.call('POST', '/api/apis/oauth/robot/revoke_all', {
        auth: a.admin,
        body: `client_secret=${encodeURIComponent(a.secret)}`,
        contentType: 'application/x-www-form-urlencoded',
      });
      assert.deepEqual(all.body, { Status: 'OK', Message: 'tokens revoked successfully', Meta: null });
      await announced(sha('tok-live-1'));
      assert.deepEqual(await live(), []);
      await events.return?.();
      // The refresh hint is refused by name; org-b's client kept its (empty) list throughout.
      const refresh = await d.call('POST', '/api/apis/oauth/robot/revoke', {
        auth: a.admin,
        body: { token: 'tok-2', token_type_hint: 'refresh_token' },
      });
      assert.equal(refresh.status, 400, refresh.text);
      assert.match(String(refresh.body.Message), /^token_type_hint: /);
      const audit = await d.call('GET', '/api/audit?p=-1', { auth: a.admin });
      const entries = (audit.body.entries as { kind: string; action: string; object_id: string }[]).filter(
        (e) => e.kind === 'oauth-tokens',
      );
      assert.deepEqual(
        entries.map((e) => [e.action, e.object_id]).sort(),
        [sha('tok-2'), sha('tok-3'), sha('tok-live-1')].sort().map((h) => ['delete', h]),
      );
      const auditB = await d.call('GET', '/api/audit?p=-1', { auth: b.admin });
      assert.ok(!auditB.text.includes('oauth-tokens'), auditB.text);
    });
  });
}
