/**
 * OAuth 2.0 clients through the dashboard (`/api/apis/oauth/{apiId}[/{clientId}]`), on both
 * storages, as a user and a gateway in mode pro see them: the secret answered once and stored as
 * an scrypt hash, the keys permission (read, write, deny), another organisation's API and clients
 * not found, what is refused at write, the node channel (`/system/oauth-clients/{id}`), and the
 * clients of a deleted API deleted with it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { oauthClientDocId } from '../../schemas/rules/oauth2.ts';
import type { Store } from '../store/store.ts';
import {
  addOauthApi,
  addUser,
  startFreshDashboard,
  type FreshDashboard,
  type TestDashboard,
} from '../testing/dashboard.ts';
import { storeFixtures } from '../testing/stores.ts';

const NODE_SECRET = 'test-node-secret-oauth-0123456789';

/** One organisation: its admin and users with read, write and deny on keys, and one with apis write only. */
interface Tenant {
  org: string;
  admin: string;
  keys: Record<'read' | 'write' | 'deny', string>;
  apisOnly: string;
}

async function tenant(d: TestDashboard, org: string): Promise<Tenant> {
  const created = await d.call('POST', '/admin/organisations', {
    auth: { admin: true },
    body: { id: org, owner_name: org },
  });
  assert.equal(created.status, 200, created.text);
  const user = (perms: Record<string, string>): Promise<string> => addUser(d, org, perms);
  return {
    org,
    admin: await user({ IsAdmin: 'admin' }),
    keys: {
      read: await user({ keys: 'read' }),
      write: await user({ keys: 'write' }),
      deny: await user({ keys: 'deny', apis: 'write', policies: 'write' }),
    },
    apisOnly: await user({ apis: 'write', policies: 'write' }),
  };
}

/** An API of `t`'s organisation (OAuth unless `oauth` is false) and a policy granting it. */
const oauthApi = (
  d: TestDashboard,
  t: Tenant,
  id: string,
  oauth = true,
): Promise<{ apiId: string; policyId: string }> => addOauthApi(d, t.admin, id, { oauth });

for (const fx of storeFixtures()) {
  describe(`dashboard OAuth clients on ${fx.name}`, () => {
    let world: FreshDashboard;
    let store: Store;
    let d: TestDashboard;
    let a: Tenant;
    let b: Tenant;
    before(async () => {
      world = await startFreshDashboard(fx, { node_secret: NODE_SECRET });
      ({ d, store } = world);
      a = await tenant(d, 'org-a');
      b = await tenant(d, 'org-b');
    });
    after(() => world.close());

    test('a client is registered with its secret answered once, and stored as a hash', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'stock');
      const created = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.keys.write,
        body: { policy_id: policyId, redirect_uri: 'https://app.example/cb', meta_data: { team: 'ops' } },
      });
      assert.equal(created.status, 200, created.text);
      const clientId = String(created.body.client_id);
      const secret = String(created.body.secret);
      assert.match(clientId, /^[0-9a-f]{32}$/);
      assert.ok(secret.length >= 40, secret);
      assert.deepEqual(
        { ...created.body, client_id: 'x', secret: 'y' },
        {
          client_id: 'x',
          secret: 'y',
          api_id: apiId,
          policy_id: policyId,
          redirect_uri: 'https://app.example/cb',
          description: '',
          meta_data: { team: 'ops' },
          org_id: 'org-a',
        },
      );
      // Never again: not in the list, not in the client's details.
      const listed = await d.call('GET', `/api/apis/oauth/${apiId}`, { auth: a.keys.read });
      assert.equal(listed.status, 200, listed.text);
      assert.equal(listed.body.pages, 1);
      const apps = listed.body.apps as Record<string, unknown>[];
      assert.deepEqual(
        apps.map((x) => x.client_id),
        [clientId],
      );
      const one = await d.call('GET', `/api/apis/oauth/${apiId}/${clientId}`, { auth: a.keys.read });
      assert.equal(one.status, 200, one.text);
      assert.equal(one.body.policy_id, policyId);
      for (const r of [listed, one]) {
        assert.ok(!r.text.includes(secret), r.text);
        assert.ok(!r.text.includes('secret'), r.text);
      }
      // At rest: the scrypt hash only; and no log line holds the secret.
      const stored = await store.get('org-a', 'oauth-clients', oauthClientDocId(apiId, clientId));
      assert.match(String(stored?.body.secret_hash), /^scrypt\$16384\$8\$1\$/);
      assert.ok(!JSON.stringify(stored).includes(secret));
      assert.ok(!JSON.stringify(d.lines).includes(secret));
      // A client ID and secret may be given; the same client ID twice is a conflict.
      const given = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: {
          policy_id: policyId,
          client_id: 'robot-1',
          secret: 'robot-1-secret-given',
          description: 'robot',
        },
      });
      assert.equal(given.status, 200, given.text);
      assert.equal(given.body.client_id, 'robot-1');
      assert.equal(given.body.secret, 'robot-1-secret-given');
      const again = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: { policy_id: policyId, client_id: 'robot-1' },
      });
      assert.equal(again.status, 409, again.text);
      assert.equal(again.body.Message, 'OAuth client already exists');
    });

    test('deleting a policy OAuth clients use is refused (409, naming them) until they are deleted', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'held');
      for (const clientId of ['held-1', 'held-2']) {
        const made = await d.call('POST', `/api/apis/oauth/${apiId}`, {
          auth: a.admin,
          body: { policy_id: policyId, client_id: clientId },
        });
        assert.equal(made.status, 200, made.text);
      }
      const refused = await d.call('DELETE', `/api/portal/policies/${policyId}`, { auth: a.admin });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(
        refused.body.Message,
        'policy "held-clients" is used by OAuth clients "held-1" of API "held", "held-2" of API "held": delete them (or register them with another policy) first',
      );
      assert.equal((await d.call('GET', `/api/portal/policies/${policyId}`, { auth: a.admin })).status, 200);
      for (const clientId of ['held-1', 'held-2']) {
        const del = await d.call('DELETE', `/api/apis/oauth/${apiId}/${clientId}`, { auth: a.admin });
        assert.equal(del.status, 200, del.text);
      }
      const deleted = await d.call('DELETE', `/api/portal/policies/${policyId}`, { auth: a.admin });
      assert.equal(deleted.status, 200, deleted.text);
      assert.equal((await d.call('GET', `/api/portal/policies/${policyId}`, { auth: a.admin })).status, 404);
    });

    test('the keys permission: read lists and reads, write creates and deletes, deny nothing', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'perm');
      const made = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: { policy_id: policyId },
      });
      const clientId = String(made.body.client_id);
      const cases: { who: string; auth: string; method: string; path: string; status: number }[] = [
        { who: 'keys read', auth: a.keys.read, method: 'GET', path: `/api/apis/oauth/${apiId}`, status: 200 },
        {
          who: 'keys read',
          auth: a.keys.read,
          method: 'GET',
          path: `/api/apis/oauth/${apiId}/${clientId}`,
          status: 200,
        },
        {
          who: 'keys read',
          auth: a.keys.read,
          method: 'POST',
          path: `/api/apis/oauth/${apiId}`,
          status: 403,
        },
        {
          who: 'keys read',
          auth: a.keys.read,
          method: 'DELETE',
          path: `/api/apis/oauth/${apiId}/${clientId}`,
          status: 403,
        },
        { who: 'keys deny', auth: a.keys.deny, method: 'GET', path: `/api/apis/oauth/${apiId}`, status: 403 },
        {
          who: 'keys deny',
          auth: a.keys.deny,
          method: 'POST',
          path: `/api/apis/oauth/${apiId}`,
          status: 403,
        },
        {
          who: 'apis and policies write, no keys',
          auth: a.apisOnly,
          method: 'POST',
          path: `/api/apis/oauth/${apiId}`,
          status: 403,
        },
        { who: 'no key', auth: '', method: 'GET', path: `/api/apis/oauth/${apiId}`, status: 401 },
        {
          who: 'keys write',
          auth: a.keys.write,
          method: 'DELETE',
          path: `/api/apis/oauth/${apiId}/${clientId}`,
          status: 200,
        },
      ];
      for (const c of cases) {
        const r = await d.call(c.method, c.path, {
          auth: c.auth,
          ...(c.method === 'POST' ? { body: { policy_id: policyId } } : {}),
        });
        assert.equal(r.status, c.status, `${c.who} ${c.method} ${c.path}: ${r.text}`);
        if (c.status === 403) {
          assert.match(
            String(r.body.Message),
            new RegExp(`needs ${c.method === 'GET' ? 'read' : 'write'} access to keys`),
          );
        }
      }
      const gone = await d.call('GET', `/api/apis/oauth/${apiId}/${clientId}`, { auth: a.admin });
      assert.equal(gone.status, 404, gone.text);
      assert.equal(gone.body.Message, 'OAuth Client ID not found');
    });

    test("another organisation's API and clients are not found, even for its admin", async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'tenant');
      const made = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: { policy_id: policyId },
      });
      const clientId = String(made.body.client_id);
      for (const [method, path, status] of [
        ['GET', `/api/apis/oauth/${apiId}`, 404],
        ['POST', `/api/apis/oauth/${apiId}`, 404],
        ['GET', `/api/apis/oauth/${apiId}/${clientId}`, 404],
        ['DELETE', `/api/apis/oauth/${apiId}/${clientId}`, 404],
      ] as const) {
        const r = await d.call(method, path, {
          auth: b.admin,
          ...(method === 'POST' ? { body: { policy_id: policyId } } : {}),
        });
        assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
      }
      // Still there for its own organisation.
      const mine = await d.call('GET', `/api/apis/oauth/${apiId}/${clientId}`, { auth: a.admin });
      assert.equal(mine.status, 200, mine.text);
      // org-b's own API can't take org-a's policy either.
      const own = await oauthApi(d, b, 'tenant-b');
      const foreign = await d.call('POST', `/api/apis/oauth/${own.apiId}`, {
        auth: b.admin,
        body: { policy_id: policyId },
      });
      assert.equal(foreign.status, 400, foreign.text);
      assert.match(
        String(foreign.body.Message),
        /policy_id: policy "tenant-clients" not found in your organisation/,
      );
    });

    test('refused at write, naming the field', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'refuse');
      const plain = await oauthApi(d, a, 'refuse-keyless', false);
      const other = await oauthApi(d, a, 'refuse-other');
      const cases: { name: string; api: string; body: unknown; status: number; message: RegExp }[] = [
        {
          name: 'no policy',
          api: apiId,
          body: {},
          status: 400,
          message: /^Validation of OAuth client failed\. Reason: policy_id: Required/,
        },
        {
          name: 'a secret of 15 characters',
          api: apiId,
          body: { policy_id: policyId, secret: 'fifteen-chars-x' },
          status: 400,
          message: /secret: Invalid value: a client secret needs at least 16 characters/,
        },
        {
          name: 'unknown policy',
          api: apiId,
          body: { policy_id: 'nope' },
          status: 400,
          message: /policy_id: policy "nope" not found in your organisation/,
        },
        {
          name: 'policy of another API',
          api: apiId,
          body: { policy_id: other.policyId },
          status: 400,
          message: /policy_id: policy "refuse-other-clients" grants no access to API "refuse"/,
        },
        {
          name: 'API without use_oauth2',
          api: plain.apiId,
          body: { policy_id: plain.policyId },
          status: 400,
          message:
            /api_id: Invalid: API "refuse-keyless" does not use OAuth 2\.0: set its use_oauth2 to true/,
        },
        {
          name: 'unknown API',
          api: 'nothing-here',
          body: { policy_id: policyId },
          status: 404,
          message: /^API not found$/,
        },
        {
          name: 'meta_data not an object',
          api: apiId,
          body: { policy_id: policyId, meta_data: ['x'] },
          status: 400,
          message: /meta_data: Invalid/,
        },
        {
          name: 'secret not a string',
          api: apiId,
          body: { policy_id: policyId, secret: 42 },
          status: 400,
          message: /secret: Invalid: must be a string/,
        },
        {
          name: 'not JSON',
          api: apiId,
          body: 'policy_id=x',
          status: 400,
          message: /Request malformed/,
        },
      ];
      for (const c of cases) {
        const r = await d.call('POST', `/api/apis/oauth/${c.api}`, { auth: a.admin, body: c.body });
        assert.equal(r.status, c.status, `${c.name}: ${r.text}`);
        assert.match(String(r.body.Message), c.message, c.name);
      }
      const listed = await d.call('GET', `/api/apis/oauth/${apiId}`, { auth: a.admin });
      assert.deepEqual(listed.body.apps, []);
    });

    test('gateways read a client through the node channel, by the stored ID, in their organisations', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'nodes');
      const made = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: { policy_id: policyId },
      });
      const clientId = String(made.body.client_id);
      const id = oauthClientDocId(apiId, clientId);
      const node = (path: string, secret = NODE_SECRET): Promise<Response> =>
        fetch(`${d.url}${path}`, { headers: { 'x-svc-node-secret': secret } });
      const r = await node(`/system/oauth-clients/${id}`);
      assert.equal(r.status, 200);
      const body = (await r.json()) as Record<string, unknown>;
      assert.equal(body.client_id, clientId);
      assert.equal(body.api_id, apiId);
      assert.equal(body.policy_id, policyId);
      assert.equal(body.org_id, 'org-a');
      assert.match(String(body.secret_hash), /^scrypt\$/);
      assert.equal(body.secret, undefined);
      assert.equal((await node(`/system/oauth-clients/${id}?orgs=org-a`)).status, 200);
      assert.equal((await node(`/system/oauth-clients/${id}?orgs=org-b`)).status, 404);
      assert.equal((await node(`/system/oauth-clients/${id}`, 'wrong')).status, 401);
      // A user key is not a node secret.
      const asUser = await d.call('GET', `/system/oauth-clients/${id}`, { auth: a.admin });
      assert.equal(asUser.status, 401, asUser.text);
      const deleted = await d.call('DELETE', `/api/apis/oauth/${apiId}/${clientId}`, { auth: a.admin });
      assert.deepEqual(deleted.body, {
        Status: 'OK',
        Message: 'OAuth Client deleted successfully',
        Meta: null,
      });
      assert.equal((await node(`/system/oauth-clients/${id}`)).status, 404);
    });

    test('deleting an API deletes its clients; the audit log records each write, never the secret', async () => {
      const { apiId, policyId } = await oauthApi(d, a, 'cascade');
      const kept = await oauthApi(d, a, 'cascade-kept');
      const made = await d.call('POST', `/api/apis/oauth/${apiId}`, {
        auth: a.admin,
        body: { policy_id: policyId },
      });
      const keptClient = await d.call('POST', `/api/apis/oauth/${kept.apiId}`, {
        auth: a.admin,
        body: { policy_id: kept.policyId },
      });
      const clientId = String(made.body.client_id);
      assert.equal((await d.call('DELETE', `/api/apis/${apiId}`, { auth: a.admin })).status, 200);
      assert.equal(await store.get('org-a', 'oauth-clients', oauthClientDocId(apiId, clientId)), undefined);
      const still = await d.call(
        'GET',
        `/api/apis/oauth/${kept.apiId}/${String(keptClient.body.client_id)}`,
        {
          auth: a.admin,
        },
      );
      assert.equal(still.status, 200, still.text);
      // Created again under the same ID, the API has no clients.
      const again = await d.call('POST', '/api/apis', {
        auth: a.admin,
        body: {
          api_definition: {
            api_id: apiId,
            name: apiId,
            use_oauth2: true,
            oauth_meta: { allowed_access_types: ['client_credentials'] },
            proxy: { listen_path: `/${apiId}/`, target_url: 'http://upstream.test' },
          },
        },
      });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual((await d.call('GET', `/api/apis/oauth/${apiId}`, { auth: a.admin })).body.apps, []);
      const audit = await d.call('GET', '/api/audit?p=-1', { auth: a.admin });
      const entries = audit.body.entries as {
        kind: string;
        action: string;
        object_id: string;
      }[];
      const mine = entries.filter(
        (e) => e.kind === 'oauth-clients' && e.object_id === oauthClientDocId(apiId, clientId),
      );
      assert.deepEqual(
        mine.map((e) => e.action),
        ['create', 'delete'],
      );
    });
  });
}
