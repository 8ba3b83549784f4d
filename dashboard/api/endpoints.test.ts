/**
 * The dashboard's endpoints as a user sees them, on both storages: every route against every
 * permission level (read, write, deny) and the system-users-only setting, every route with an ID
 * across organisations (404), and the shapes the operator's client expects.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCa } from '../../lib/x509.ts';
import { oasDocument } from '../../schemas/testing.ts';
import { RESOURCES, type Resource } from '../rbac/rbac.ts';
import type { Store } from '../store/store.ts';
import {
  addUser,
  startFreshDashboard,
  startTestDashboard,
  type FreshDashboard,
  type Res,
  type TestDashboard,
} from '../testing/dashboard.ts';
import { storeFixtures } from '../testing/stores.ts';
import { SYSTEM_ONLY_MESSAGE } from '../server/dispatch.ts';

let seq = 0;
const uniq = (p: string): string => `${p}${++seq}`;
const classic = (name = uniq('api')): Record<string, unknown> => ({
  api_definition: { name, proxy: { listen_path: `/${name}/`, target_url: 'http://upstream.test' } },
});
const oas = (name = uniq('oas')): Record<string, unknown> => oasDocument({ name, listenPath: `/${name}/` });
const streams = (name = uniq('streams')): Record<string, unknown> => ({
  ...oas(name),
  'x-svc-streaming': {
    streams: { s1: { input: { http_server: { path: '/in' } }, output: { http_server: { path: '/out' } } } },
  },
});
const STREAMS = 'application/vnd.svc.streams.oas';
const policy = (): Record<string, unknown> => ({
  name: uniq('policy'),
  state: 'active',
  rate: 10,
  per: 60,
  quota_max: -1,
});
const session = (): Record<string, unknown> => ({
  alias: uniq('key'),
  rate: 10,
  per: 60,
  quota_max: 100,
  quota_renewal_rate: 3600,
});

/** One organisation with its admin and a user per resource and level. */
interface Tenant {
  org: string;
  admin: string;
  system: string;
  users: Record<Resource, Record<'read' | 'write' | 'deny', string>>;
}

async function tenant(d: TestDashboard, org: string): Promise<Tenant> {
  const created = await d.call('POST', '/admin/organisations', {
    auth: { admin: true },
    body: { id: org, owner_name: org, cname: `${org}.example.com` },
  });
  assert.equal(created.status, 200, created.text);
  const user = (perms: Record<string, string>, extra: Record<string, unknown> = {}): Promise<string> =>
    addUser(d, org, perms, extra);
  const users = {} as Tenant['users'];
  for (const res of RESOURCES) {
    users[res] = {
      read: await user({ [res]: 'read' }),
      write: await user({ [res]: 'write' }),
      deny: await user({ [res]: 'deny' }),
    };
  }
  const allWrite = Object.fromEntries(RESOURCES.map((r) => [r, 'write']));
  return {
    org,
    admin: await user({ IsAdmin: 'admin' }),
    system: await user(allWrite, { system_user: true }),
    users,
  };
}

/** Creates something with the org admin and returns its ID (for routes that name one). */
type Setup = (d: TestDashboard, t: Tenant) => Promise<string>;

const mk = {
  api: async (d: TestDashboard, t: Tenant) =>
    String((await d.call('POST', '/api/apis', { auth: t.admin, body: classic() })).body.Meta),
  oas: async (d: TestDashboard, t: Tenant) =>
    String((await d.call('POST', '/api/apis/oas', { auth: t.admin, body: oas() })).body.Meta),
  streams: async (d: TestDashboard, t: Tenant) =>
    String(
      (await d.call('POST', '/api/apis/streams', { auth: t.admin, body: streams(), contentType: STREAMS }))
        .body.ID,
    ),
  policy: async (d: TestDashboard, t: Tenant) =>
    String((await d.call('POST', '/api/portal/policies', { auth: t.admin, body: policy() })).body.Message),
  key: async (d: TestDashboard, t: Tenant) =>
    String((await d.call('POST', '/api/keys', { auth: t.admin, body: session() })).body.key_id),
  basic: async (d: TestDashboard, t: Tenant) => {
    const name = uniq('basic');
    await d.call('POST', `/api/apis/keys/basic/${name}`, {
      auth: t.admin,
      body: { ...session(), basic_auth_data: { password: 'pw-1' } },
    });
    return name;
  },
  cert: async (d: TestDashboard, t: Tenant) =>
    String(
      (
        await d.call('POST', '/api/certs', {
          auth: t.admin,
          body: (await createCa({ commonName: uniq('ca'), validityDays: 2 })).certPem,
          contentType: 'text/plain',
        })
      ).body.id,
    ),
  user: async (d: TestDashboard, t: Tenant) => {
    const r = await d.call('POST', '/api/users', {
      auth: t.admin,
      body: { email_address: `${uniq('x')}@x` },
    });
    return String((r.body.Meta as Record<string, unknown>).id);
  },
  group: async (d: TestDashboard, t: Tenant) =>
    String((await d.call('POST', '/api/usergroups', { auth: t.admin, body: { name: uniq('g') } })).body.Meta),
} satisfies Record<string, Setup>;

/** A route call: its resource, whether it writes an API definition, and how to make it. */
interface RouteCase {
  name: string;
  resource: Resource;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  apiWrite?: boolean;
  setup?: Setup;
  path: (id: string) => string;
  body?: () => unknown;
  contentType?: string;
}

const routeCases: RouteCase[] = [
  { name: 'list classic APIs', resource: 'apis', method: 'GET', path: () => '/api/apis' },
  {
    name: 'create classic API',
    resource: 'apis',
    method: 'POST',
    apiWrite: true,
    path: () => '/api/apis',
    body: () => classic(),
  },
  {
    name: 'get classic API',
    resource: 'apis',
    method: 'GET',
    setup: mk.api,
    path: (id) => `/api/apis/${id}`,
  },
  {
    name: 'update classic API',
    resource: 'apis',
    method: 'PUT',
    apiWrite: true,
    setup: mk.api,
    path: (id) => `/api/apis/${id}`,
    body: () => classic(),
  },
  {
    name: 'delete classic API',
    resource: 'apis',
    method: 'DELETE',
    apiWrite: true,
    setup: mk.api,
    path: (id) => `/api/apis/${id}`,
  },
  { name: 'list OAS APIs', resource: 'apis', method: 'GET', path: () => '/api/apis/oas' },
  {
    name: 'create OAS API',
    resource: 'apis',
    method: 'POST',
    apiWrite: true,
    path: () => '/api/apis/oas',
    body: () => oas(),
  },
  {
    name: 'get OAS API',
    resource: 'apis',
    method: 'GET',
    setup: mk.oas,
    path: (id) => `/api/apis/oas/${id}`,
  },
  {
    name: 'update OAS API',
    resource: 'apis',
    method: 'PUT',
    apiWrite: true,
    setup: mk.oas,
    path: (id) => `/api/apis/oas/${id}`,
    body: () => oas(),
  },
  {
    name: 'delete OAS API',
    resource: 'apis',
    method: 'DELETE',
    apiWrite: true,
    setup: mk.oas,
    path: (id) => `/api/apis/oas/${id}`,
  },
  { name: 'list streams APIs', resource: 'streams', method: 'GET', path: () => '/api/apis/streams' },
  {
    name: 'create streams API',
    resource: 'streams',
    method: 'POST',
    apiWrite: true,
    path: () => '/api/apis/streams',
    body: () => streams(),
    contentType: STREAMS,
  },
  {
    name: 'get streams API',
    resource: 'streams',
    method: 'GET',
    setup: mk.streams,
    path: (id) => `/api/apis/streams/${id}`,
  },
  {
    name: 'update streams API',
    resource: 'streams',
    method: 'PUT',
    apiWrite: true,
    setup: mk.streams,
    path: (id) => `/api/apis/streams/${id}`,
    body: () => streams(),
    contentType: STREAMS,
  },
  {
    name: 'delete streams API',
    resource: 'streams',
    method: 'DELETE',
    apiWrite: true,
    setup: mk.streams,
    path: (id) => `/api/apis/streams/${id}`,
  },
  { name: 'list policies', resource: 'policies', method: 'GET', path: () => '/api/portal/policies' },
  {
    name: 'create policy',
    resource: 'policies',
    method: 'POST',
    path: () => '/api/portal/policies',
    body: () => policy(),
  },
  {
    name: 'get policy',
    resource: 'policies',
    method: 'GET',
    setup: mk.policy,
    path: (id) => `/api/portal/policies/${id}`,
  },
  {
    name: 'update policy',
    resource: 'policies',
    method: 'PUT',
    setup: mk.policy,
    path: (id) => `/api/portal/policies/${id}`,
    body: () => policy(),
  },
  {
    name: 'delete policy',
    resource: 'policies',
    method: 'DELETE',
    setup: mk.policy,
    path: (id) => `/api/portal/policies/${id}`,
  },
  { name: 'list keys', resource: 'keys', method: 'GET', path: () => '/api/keys' },
  { name: 'create key', resource: 'keys', method: 'POST', path: () => '/api/keys', body: () => session() },
  {
    name: 'import key',
    resource: 'keys',
    method: 'POST',
    path: () => `/api/keys/${uniq('custom0key')}`,
    body: () => session(),
  },
  { name: 'get key', resource: 'keys', method: 'GET', setup: mk.key, path: (id) => `/api/keys/${id}` },
  {
    name: 'update key',
    resource: 'keys',
    method: 'PUT',
    setup: mk.key,
    path: (id) => `/api/keys/${id}`,
    body: () => session(),
  },
  { name: 'delete key', resource: 'keys', method: 'DELETE', setup: mk.key, path: (id) => `/api/keys/${id}` },
  {
    name: 'reset key quota',
    resource: 'keys',
    method: 'POST',
    setup: mk.key,
    path: (id) => `/api/keys/${id}/reset`,
  },
  {
    name: 'create basic-auth user',
    resource: 'keys',
    method: 'POST',
    path: () => `/api/apis/keys/basic/${uniq('b')}`,
    body: () => ({ ...session(), basic_auth_data: { password: 'p' } }),
  },
  {
    name: 'update basic-auth user',
    resource: 'keys',
    method: 'PUT',
    setup: mk.basic,
    path: (id) => `/api/apis/keys/basic/${id}`,
    body: () => session(),
  },
  { name: 'list certs', resource: 'certs', method: 'GET', path: () => '/api/certs' },
  {
    name: 'add cert',
    resource: 'certs',
    method: 'POST',
    path: () => '/api/certs',
    body: async () => (await createCa({ commonName: uniq('c'), validityDays: 2 })).certPem,
    contentType: 'text/plain',
  },
  { name: 'get cert', resource: 'certs', method: 'GET', setup: mk.cert, path: (id) => `/api/certs/${id}` },
  {
    name: 'delete cert',
    resource: 'certs',
    method: 'DELETE',
    setup: mk.cert,
    path: (id) => `/api/certs/${id}`,
  },
  { name: 'list users', resource: 'users', method: 'GET', path: () => '/api/users' },
  {
    name: 'create user',
    resource: 'users',
    method: 'POST',
    path: () => '/api/users',
    body: () => ({ email_address: `${uniq('n')}@x` }),
  },
  { name: 'get user', resource: 'users', method: 'GET', setup: mk.user, path: (id) => `/api/users/${id}` },
  {
    name: 'update user',
    resource: 'users',
    method: 'PUT',
    setup: mk.user,
    path: (id) => `/api/users/${id}`,
    body: () => ({ email_address: `${uniq('m')}@x`, first_name: 'M' }),
  },
  {
    name: 'delete user',
    resource: 'users',
    method: 'DELETE',
    setup: mk.user,
    path: (id) => `/api/users/${id}`,
  },
  {
    name: 'reset user key',
    resource: 'users',
    method: 'POST',
    setup: mk.user,
    path: (id) => `/api/users/${id}/actions/key/reset`,
  },
  { name: 'list user groups', resource: 'users', method: 'GET', path: () => '/api/usergroups' },
  {
    name: 'create user group',
    resource: 'users',
    method: 'POST',
    path: () => '/api/usergroups',
    body: () => ({ name: uniq('g') }),
  },
  {
    name: 'get user group',
    resource: 'users',
    method: 'GET',
    setup: mk.group,
    path: (id) => `/api/usergroups/${id}`,
  },
  {
    name: 'update user group',
    resource: 'users',
    method: 'PUT',
    setup: mk.group,
    path: (id) => `/api/usergroups/${id}`,
    body: () => ({ name: uniq('g') }),
  },
  {
    name: 'delete user group',
    resource: 'users',
    method: 'DELETE',
    setup: mk.group,
    path: (id) => `/api/usergroups/${id}`,
  },
];

async function run(d: TestDashboard, t: Tenant, c: RouteCase, auth: string): Promise<Res> {
  const id = c.setup === undefined ? '' : await c.setup(d, t);
  const body = await c.body?.();
  return d.call(c.method, c.path(encodeURIComponent(id)), {
    auth,
    ...(body === undefined ? {} : { body }),
    ...(c.contentType === undefined ? {} : { contentType: c.contentType }),
  });
}

for (const fx of storeFixtures()) {
  describe(`dashboard endpoints on ${fx.name}`, () => {
    let world: FreshDashboard;
    let store: Store;
    let d: TestDashboard;
    let a: Tenant;
    let b: Tenant;
    before(async () => {
      world = await startFreshDashboard(fx);
      ({ d, store } = world);
      a = await tenant(d, 'org-a');
      b = await tenant(d, 'org-b');
    });
    after(() => world.close());

    test('every route against read, write and deny', async () => {
      for (const c of routeCases) {
        for (const level of ['read', 'write', 'deny'] as const) {
          const r = await run(d, a, c, a.users[c.resource][level]);
          const allowed = level === 'write' || (level === 'read' && c.method === 'GET');
          if (allowed) assert.equal(r.status, 200, `${c.name} as ${level}: ${r.text}`);
          else {
            assert.equal(r.status, 403, `${c.name} as ${level}: ${r.text}`);
            assert.match(
              String(r.body.Message),
              new RegExp(`needs ${c.method === 'GET' ? 'read' : 'write'} access to ${c.resource}`),
            );
          }
        }
        const admin = await run(d, a, c, a.admin);
        assert.equal(admin.status, 200, `${c.name} as admin: ${admin.text}`);
      }
    });

    test('every route answers 401 without a key, or with an unknown one', async () => {
      for (const c of routeCases) {
        for (const auth of ['', 'not-a-key']) {
          const r = await d.call(c.method, c.path('x'), { auth });
          assert.equal(r.status, 401, `${c.name} with ${JSON.stringify(auth)}`);
          assert.deepEqual(r.body.Status, 'Error');
        }
      }
    });

    test("every route with an ID: another organisation's object is not found (404), even for its admin", async () => {
      for (const c of routeCases.filter((x) => x.setup !== undefined)) {
        const setup = c.setup;
        if (setup === undefined) continue;
        const id = await setup(d, a);
        const body = await c.body?.();
        const r = await d.call(c.method, c.path(encodeURIComponent(id)), {
          auth: b.admin,
          ...(body === undefined ? {} : { body }),
          ...(c.contentType === undefined ? {} : { contentType: c.contentType }),
        });
        assert.equal(r.status, 404, `${c.name}: ${r.text}`);
        // and it is still there for its own organisation
        if (c.method !== 'POST' && !c.name.startsWith('update basic')) {
          const mine = await d.call(
            'GET',
            c.path(encodeURIComponent(id)).replace(/\/reset$|\/actions\/key\/reset$/, ''),
            { auth: a.admin },
          );
          assert.equal(mine.status, 200, `${c.name} (owner): ${mine.text}`);
        }
      }
      // Lists show only the caller's organisation.
      const listed = await d.call('GET', '/api/apis?p=-1', { auth: b.admin });
      for (const api of listed.body.apis as { api_definition: { org_id: string } }[])
        assert.equal(api.api_definition.org_id, 'org-b');
      const users = await d.call('GET', '/api/users?p=-1', { auth: b.admin });
      for (const u of users.body.users as { org_id: string }[]) assert.equal(u.org_id, 'org-b');
    });

    test("a key may grant only its organisation's APIs; its org_id is theirs", async () => {
      const apiA = await mk.api(d, a);
      const refused = await d.call('POST', '/api/keys', {
        auth: b.admin,
        body: { ...session(), access_rights: { [apiA]: { api_id: apiA, versions: ['Default'] } } },
      });
      assert.equal(refused.status, 400);
      assert.match(
        String(refused.body.Message),
        new RegExp(
          `^Validation of Key failed\\. Reason: access_rights\\.${apiA}: API "${apiA}" not found in your organisation`,
        ),
      );
      const wrongOrg = await d.call('POST', `/api/apis/keys/basic/${uniq('u')}`, {
        auth: a.admin,
        body: { ...session(), org_id: 'org-b', basic_auth_data: { password: 'x' } },
      });
      assert.equal(wrongOrg.status, 400);
      assert.match(
        String(wrongOrg.body.Message),
        /org_id: must be the organisation of the key's APIs, yours \(org-a\)/,
      );
      const name = uniq('alice');
      const okBody = {
        ...session(),
        org_id: 'org-a',
        access_rights: { [apiA]: { api_id: apiA, versions: ['Default'] } },
        basic_auth_data: { password: 'secret-pw' },
      };
      const created = await d.call('POST', `/api/apis/keys/basic/${name}`, { auth: a.admin, body: okBody });
      assert.equal(created.status, 200, created.text);
      assert.doesNotMatch(created.text, /secret-pw/);
      assert.deepEqual((created.body.data as Record<string, unknown>).basic_auth_data, {
        hash_type: 'scrypt',
      });
      assert.equal(
        (await d.call('POST', `/api/apis/keys/basic/${name}`, { auth: a.admin, body: okBody })).status,
        409,
      );
      assert.equal(
        (await d.call('PUT', `/api/apis/keys/basic/${uniq('nobody')}`, { auth: a.admin, body: session() }))
          .status,
        404,
      );
    });

    test('keys: generated once, read by value or hash, quota reset', async () => {
      const created = await d.call('POST', '/api/keys', { auth: a.admin, body: session() });
      const key = String(created.body.key_id);
      const hash = String(created.body.key_hash);
      assert.match(key, /^org-a[0-9a-f]{32}$/);
      assert.equal((await d.call('GET', `/api/keys/${key}`, { auth: a.admin })).body.key_hash, hash);
      assert.equal((await d.call('GET', `/api/keys/${hash}?hashed=true`, { auth: a.admin })).status, 200);
      assert.ok(
        (
          (await d.call('GET', '/api/keys?p=-1', { auth: a.admin })).body.data as { keys: string[] }
        ).keys.includes(hash),
      );
      assert.deepEqual((await d.call('POST', `/api/keys/${key}/reset`, { auth: a.admin })).body, {
        Status: 'OK',
        Message: 'Quota reset',
        Meta: null,
      });
      const after = (await d.call('GET', `/api/keys/${key}`, { auth: a.admin })).body.data as Record<
        string,
        number
      >;
      assert.equal(after.quota_remaining, 100);
      assert.ok((after.quota_renews ?? 0) > Date.now() / 1000 + 3500);
    });

    test('keys: imported by value, stored by hash, a taken value 409, basic_auth_data and hashes refused', async () => {
      const value = uniq('imported0value0');
      const created = await d.call('POST', `/api/keys/${value}`, { auth: a.admin, body: session() });
      assert.equal(created.status, 200, created.text);
      const hash = String(created.body.key_hash);
      assert.equal(created.body.key_id, value);
      assert.match(hash, /^[0-9a-f]{64}$/);
      const byHash = await d.call('GET', `/api/keys/${hash}?hashed=true`, { auth: a.admin });
      assert.equal(byHash.status, 200);
      assert.ok(!byHash.text.includes(value), 'the value is not stored');
      assert.equal((await d.call('GET', `/api/keys/${value}`, { auth: a.admin })).body.key_hash, hash);
      const again = await d.call('POST', `/api/keys/${value}`, { auth: a.admin, body: session() });
      assert.equal(again.status, 409);
      assert.equal(again.body.Message, 'Key already exists');
      const basic = await d.call('POST', `/api/keys/${uniq('v')}`, {
        auth: a.admin,
        body: { ...session(), basic_auth_data: { password: 'p' } },
      });
      assert.equal(basic.status, 400);
      assert.match(String(basic.body.Message), /basic_auth_data: register basic-auth users/);
      const hashed = await d.call('POST', `/api/keys/${'a'.repeat(64)}?hashed=true`, {
        auth: a.admin,
        body: session(),
      });
      assert.equal(hashed.status, 400);
      assert.equal(hashed.body.Message, 'A key is imported by its value, not its hash');
      const badValue = await d.call('POST', `/api/keys/${encodeURIComponent(' padded')}`, {
        auth: a.admin,
        body: session(),
      });
      assert.equal(badValue.status, 400);
      assert.match(String(badValue.body.Message), /^Validation of Key failed\. Reason: key: .*spaces/);
    });

    test('streams: the seed shape, the content type, and streaming.enabled', async () => {
      const r = await d.call('POST', '/api/apis/streams', {
        auth: a.admin,
        body: streams(),
        contentType: STREAMS,
      });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body).sort(), ['ID', 'Message', 'Meta', 'Status']);
      assert.equal(r.body.Status, 'OK');
      assert.equal(typeof r.body.ID, 'string');
      assert.equal(typeof r.body.Meta, 'string');
      const wrongType = await d.call('POST', '/api/apis/streams', { auth: a.admin, body: streams() });
      assert.equal(wrongType.status, 415);
      assert.match(String(wrongType.body.Message), /application\/vnd\.svc\.streams\.oas/);
      const noStreams = await d.call('POST', '/api/apis/streams', {
        auth: a.admin,
        body: oas(),
        contentType: STREAMS,
      });
      assert.equal(noStreams.status, 400);
      assert.match(String(noStreams.body.Message), /x-svc-streaming/);
      const off = await startTestDashboard(store, { streaming_enabled: false });
      try {
        const refused = await off.call('POST', '/api/apis/streams', {
          auth: a.admin,
          body: streams(),
          contentType: STREAMS,
        });
        assert.equal(refused.status, 400);
        assert.match(String(refused.body.Message), /streaming\.enabled .*SVC_DB_STREAMING_ENABLED/);
      } finally {
        await off.close();
      }
    });

    test('validation: what the gateway refuses is refused with its field-pathed message', async () => {
      const cases: { path: string; body: unknown; message: RegExp; contentType?: string }[] = [
        {
          path: '/api/apis',
          body: { api_definition: { name: 'x', proxy: { listen_path: '/x/', target_url: 'ftp://nope' } } },
          message: /^Validation of API Definition failed\. Reason: proxy\.target_url: /,
        },
        {
          path: '/api/apis',
          body: { api_definition: { name: 'x' } },
          message: /^Validation of API Definition failed\. Reason: .*proxy/,
        },
        {
          path: '/api/apis',
          body: {
            api_definition: { name: 'x', proxy: { listen_path: '/x/', target_url: 'http://u' }, bogus: 1 },
          },
          message: /bogus/,
        },
        { path: '/api/apis', body: { name: 'bare' }, message: /^api_definition: Required value/ },
        {
          path: '/api/apis/oas',
          body: {
            ...oas(),
            'x-svc-api-gateway': {
              info: { name: 'x', state: { active: true } },
              upstream: { url: 'http://u' },
              server: { listenPath: { value: 'no-slash' } },
            },
          },
          message:
            /^Validation of API Definition failed\. Reason: x-svc-api-gateway\.server\.listenPath\.value/,
        },
        {
          path: '/api/portal/policies',
          body: { name: 'p', rate: 'fast' },
          message: /^Validation of Policy failed\. Reason: rate: /,
        },
        { path: '/api/keys', body: { rate: 'fast' }, message: /^Validation of Key failed\. Reason: rate: / },
      ];
      for (const c of cases) {
        const r = await d.call('POST', c.path, { auth: a.admin, body: c.body });
        assert.equal(r.status, 400, `${c.path}: ${r.text}`);
        assert.match(String(r.body.Message), c.message);
      }
    });

    test("policies: the seed shapes, and access only to the organisation's APIs", async () => {
      const id = uniq('pol');
      const created = await d.call('POST', '/api/portal/policies', {
        auth: a.admin,
        body: { ...policy(), id },
      });
      assert.deepEqual(created.body, { Status: 'OK', Message: id, Meta: null });
      const got = await d.call('GET', `/api/portal/policies/${id}`, { auth: a.admin });
      assert.equal(got.body.id, id);
      assert.equal(got.body.org_id, 'org-a');
      const full = { ...got.body, rate: 99 };
      assert.deepEqual(
        (await d.call('PUT', `/api/portal/policies/${id}`, { auth: a.admin, body: full })).body,
        { Status: 'OK', Message: 'Data updated', Meta: null },
      );
      assert.equal((await d.call('GET', `/api/portal/policies/${id}`, { auth: a.admin })).body.rate, 99);
      const apiB = await mk.api(d, b);
      const foreign = await d.call('POST', '/api/portal/policies', {
        auth: a.admin,
        body: { ...policy(), access_rights: { [apiB]: { api_id: apiB, versions: ['Default'] } } },
      });
      assert.equal(foreign.status, 400);
      assert.match(String(foreign.body.Message), /not found in your organisation/);
      assert.equal(
        (await d.call('PUT', `/api/portal/policies/${id}`, { auth: a.admin, body: { ...full, id: 'other' } }))
          .status,
        400,
      );
    });

    test('settings: allow_explicit_policy_id, enable_duplicate_slugs, api_writes_system_users_only', async () => {
      const strict = await startTestDashboard(store, {
        allow_explicit_policy_id: false,
        api_writes_system_users_only: true,
      });
      try {
        const explicit = await strict.call('POST', '/api/portal/policies', {
          auth: a.admin,
          body: { ...policy(), id: uniq('p') },
        });
        assert.equal(explicit.status, 400);
        assert.match(
          String(explicit.body.Message),
          /id: explicit policy IDs are refused: .*allow_explicit_policy_id/,
        );
        assert.equal(
          (await strict.call('POST', '/api/portal/policies', { auth: a.admin, body: policy() })).status,
          200,
        );
        // Objects to update or delete are made by the system user: the admin may not, here.
        const bySystem = { ...a, admin: a.system };
        const listApis = routeCases.find((x) => x.name === 'list classic APIs');
        assert.ok(listApis !== undefined);
        for (const c of routeCases.filter((x) => x.apiWrite === true)) {
          const human = await run(strict, bySystem, c, a.admin);
          assert.equal(human.status, 403, `${c.name} by an admin`);
          assert.equal(human.body.Message, SYSTEM_ONLY_MESSAGE);
          assert.equal(
            (await run(strict, bySystem, c, a.system)).status,
            200,
            `${c.name} by the system user`,
          );
        }
        assert.equal((await run(strict, a, listApis, a.users.apis.read)).status, 200, 'reads stay open');
      } finally {
        await strict.close();
      }
      const name = uniq('same');
      assert.equal(
        (
          await d.call('POST', '/api/apis', {
            auth: a.admin,
            body: {
              api_definition: {
                name,
                slug: name,
                proxy: { listen_path: `/${name}1/`, target_url: 'http://u' },
              },
            },
          })
        ).status,
        200,
      );
      const dup = await d.call('POST', '/api/apis', {
        auth: a.admin,
        body: {
          api_definition: {
            name: `${name}-2`,
            slug: name,
            proxy: { listen_path: `/${name}2/`, target_url: 'http://u' },
          },
        },
      });
      assert.equal(dup.status, 409);
      assert.match(String(dup.body.Message), /^slug: .*enable_duplicate_slugs/);
      assert.equal(
        (
          await d.call('POST', '/api/apis', {
            auth: b.admin,
            body: {
              api_definition: {
                name,
                slug: name,
                proxy: { listen_path: `/${name}1/`, target_url: 'http://u' },
              },
            },
          })
        ).status,
        200,
        'slugs are per organisation',
      );
      const loose = await startTestDashboard(store, { enable_duplicate_slugs: true });
      try {
        assert.equal(
          (
            await loose.call('POST', '/api/apis', {
              auth: a.admin,
              body: {
                api_definition: {
                  name: `${name}-3`,
                  slug: name,
                  proxy: { listen_path: `/${name}3/`, target_url: 'http://u' },
                },
              },
            })
          ).status,
          200,
        );
      } finally {
        await loose.close();
      }
    });

    test('users: keys, groups, no escalation, reset, organisation deletion', async () => {
      const g = await d.call('POST', '/api/usergroups', {
        auth: a.admin,
        body: { name: uniq('readers'), user_permissions: { policies: 'read' } },
      });
      const member = await d.call('POST', '/api/users', {
        auth: a.admin,
        body: { email_address: `${uniq('m')}@a`, group_id: g.body.Meta },
      });
      const meta = member.body.Meta as Record<string, string>;
      const key = meta.access_key ?? '';
      assert.equal(
        (await d.call('GET', '/api/portal/policies', { auth: key })).status,
        200,
        'the group grants read',
      );
      assert.equal((await d.call('POST', '/api/portal/policies', { auth: key, body: policy() })).status, 403);
      assert.equal(
        (await d.call('GET', `/api/users/${meta.id}`, { auth: a.admin })).body.access_key,
        undefined,
        'the key is shown once',
      );
      const escalate = await d.call('POST', '/api/users', {
        auth: a.users.users.write,
        body: {
          email_address: `${uniq('e')}@a`,
          user_permissions: { IsAdmin: 'admin', apis: 'write' },
          system_user: true,
        },
      });
      assert.equal(escalate.status, 400);
      assert.match(String(escalate.body.Message), /user_permissions\.IsAdmin: only an organisation admin/);
      assert.match(
        String(escalate.body.Message),
        /user_permissions\.apis: cannot grant write: you have deny on apis/,
      );
      assert.match(String(escalate.body.Message), /system_user: only an organisation admin/);
      const reset = await d.call('POST', `/api/users/${meta.id}/actions/key/reset`, { auth: a.admin });
      const newKey = String((reset.body.Meta as Record<string, string>).access_key);
      assert.equal(
        (await d.call('GET', '/api/portal/policies', { auth: key })).status,
        401,
        'the old key stops working',
      );
      assert.equal((await d.call('GET', '/api/portal/policies', { auth: newKey })).status, 200);
      assert.equal(
        (await d.call('DELETE', `/api/usergroups/${String(g.body.Meta)}`, { auth: a.admin })).status,
        409,
      );
      await d.call('PUT', `/api/users/${meta.id}`, {
        auth: a.admin,
        body: { email_address: meta.email_address, active: false },
      });
      assert.equal(
        (await d.call('GET', '/api/portal/policies', { auth: newKey })).status,
        401,
        'an inactive user is refused',
      );

      const c = await tenant(d, uniq('org-c'));
      assert.equal((await d.call('GET', '/api/apis', { auth: c.admin })).status, 200);
      assert.equal(
        (await d.call('DELETE', `/admin/organisations/${c.org}`, { auth: { admin: true } })).status,
        200,
      );
      assert.equal(
        (await d.call('GET', '/api/apis', { auth: c.admin })).status,
        401,
        "a deleted organisation's users are gone",
      );
      assert.equal(
        (await d.call('GET', `/admin/organisations/${c.org}`, { auth: { admin: true } })).status,
        404,
      );
    });

    test('admin API: the admin secret, organisations CRUD and pages', async () => {
      assert.equal((await d.call('GET', '/admin/organisations')).status, 401);
      assert.equal(
        (await d.call('GET', '/admin/organisations', { auth: a.admin })).status,
        401,
        'a user key is not the admin secret',
      );
      const org = uniq('org-d');
      assert.equal(
        (await d.call('POST', '/admin/organisations', { auth: { admin: true }, body: { id: org } })).status,
        400,
      );
      assert.equal(
        (
          await d.call('POST', '/admin/organisations', {
            auth: { admin: true },
            body: { id: org, owner_name: 'D' },
          })
        ).status,
        200,
      );
      assert.equal(
        (
          await d.call('POST', '/admin/organisations', {
            auth: { admin: true },
            body: { id: org, owner_name: 'D' },
          })
        ).status,
        409,
      );
      assert.deepEqual(
        (
          await d.call('PUT', `/admin/organisations/${org}`, {
            auth: { admin: true },
            body: { owner_name: 'D2', cname: 'd.example.com' },
          })
        ).body,
        { Status: 'OK', Message: 'Org updated', Meta: null },
      );
      assert.deepEqual((await d.call('GET', `/admin/organisations/${org}`, { auth: { admin: true } })).body, {
        id: org,
        owner_name: 'D2',
        cname: 'd.example.com',
      });
      const all = await d.call('GET', '/admin/organisations?p=-1', { auth: { admin: true } });
      assert.ok((all.body.organisations as { id: string }[]).some((o) => o.id === org));
      const small = await startTestDashboard(store, { page_size: 1 });
      try {
        const p1 = await small.call('GET', '/admin/organisations?p=1', { auth: { admin: true } });
        assert.equal((p1.body.organisations as unknown[]).length, 1);
        assert.equal(p1.body.pages, (all.body.organisations as unknown[]).length);
        const bad = await small.call('GET', '/api/apis?p=0', { auth: a.admin });
        assert.equal(bad.status, 400);
        assert.match(String(bad.body.Message), /^p: /);
      } finally {
        await small.close();
      }
    });

    test('audit log: every write with who, what, when and hashes; per organisation; admins only', async () => {
      const org = uniq('org-e');
      const e = await tenant(d, org);
      const id = await mk.policy(d, e);
      const got = (await d.call('GET', `/api/portal/policies/${id}`, { auth: e.admin })).body;
      await d.call('PUT', `/api/portal/policies/${id}`, { auth: e.admin, body: { ...got, rate: 5 } });
      await d.call('DELETE', `/api/portal/policies/${id}`, { auth: e.admin });
      const log = await d.call('GET', '/api/audit?p=-1', { auth: e.admin });
      assert.equal(log.status, 200);
      const entries = (log.body.entries as Record<string, unknown>[]).filter((x) => x.object_id === id);
      assert.deepEqual(
        entries.map((x) => x.action),
        ['create', 'update', 'delete'],
      );
      const [c, u, del] = entries as [
        Record<string, unknown>,
        Record<string, unknown>,
        Record<string, unknown>,
      ];
      assert.equal(c.before_hash, null);
      assert.match(String(c.after_hash), /^[0-9a-f]{64}$/);
      assert.equal(u.before_hash, c.after_hash);
      assert.notEqual(u.after_hash, u.before_hash);
      assert.equal(del.before_hash, u.after_hash);
      assert.equal(del.after_hash, null);
      assert.match(String(c.actor), /^user:[0-9a-f]{32}$/);
      assert.equal(c.kind, 'policies');
      assert.ok(!Number.isNaN(Date.parse(String(c.at))));
      const whole = log.body.entries as Record<string, unknown>[];
      assert.ok(
        whole.every((x) => x.org_id === org),
        "only the organisation's own entries",
      );
      const first = whole[0];
      assert.ok(first !== undefined);
      assert.equal(first.kind, 'organisations');
      assert.equal(first.actor, 'admin');
      assert.equal((await d.call('GET', '/api/audit', { auth: e.users.users.write })).status, 403);
    });

    test('/hello, /ready, /metrics; logs are JSON fields without secrets', async () => {
      const hello = await d.call('GET', '/hello');
      assert.equal(hello.status, 200);
      assert.deepEqual(hello.body.details, { store: { kind: fx.name, status: 'pass' } });
      assert.equal((await d.call('GET', '/ready')).status, 200);
      const metrics = await d.call('GET', '/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(
        metrics.text,
        /svc_dashboard_requests_total\{route="policies",method="GET",status="200"\} \d+/,
      );
      assert.equal((await d.call('GET', '/nowhere')).status, 404);
      assert.equal((await d.call('PATCH', '/api/apis', { auth: a.admin })).status, 405);
      const text = JSON.stringify(d.lines);
      assert.ok(d.lines.some((l) => l.message === 'request' && l.fields.route === 'apis'));
      for (const secret of [a.admin, a.system, 'test-admin-secret-0123456789', 'secret-pw'])
        assert.ok(!text.includes(secret), 'no secret in logs');
    });
  });
}
