/**
 * The dashboard client against a real dashboard process on SQLite: every operation of the
 * management interface, owners set on what it creates, the error types the reconcilers rely on,
 * and two organisations that cannot see each other's objects.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError, SvcError, TransientError } from '../../lib/errors.ts';
import { createCa } from '../../lib/x509.ts';
import type { GatewayApiDefinition, GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import { oasDocument } from '../../schemas/testing.ts';
import {
  createTenant,
  dashboardCall,
  startDashboardProc,
  type DashboardProc,
  type DashboardTenant,
} from '../../e2e/harness/dashboard.ts';
import { certificateId } from '../certificates.ts';
import { DashboardClient } from './dashboard.ts';
import type { Connection } from './management.ts';

let dir: string;
let dash: DashboardProc;
let a: DashboardTenant;
let b: DashboardTenant;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

const conn = (t: DashboardTenant, extra: Partial<Connection> = {}): Connection => ({
  mode: 'pro',
  url: dash.url,
  auth: t.system.key,
  org: t.org,
  insecureSkipVerify: false,
  ...extra,
});

const classic = (id: string, org: string): GatewayApiDefinition => ({
  api_id: id,
  org_id: org,
  name: id,
  use_keyless: true,
  active: true,
  proxy: { listen_path: `/${id}/`, target_url: 'http://upstream.test', strip_listen_path: true },
});

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-dash-client-'));
  dash = await startDashboardProc({ name: 'dashboard', logDir: dir, dataDir: join(dir, 'data') });
  a = await createTenant(dash.url, 'org-a');
  b = await createTenant(dash.url, 'org-b');
});

after(async () => {
  await dash.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('DashboardClient', () => {
  test('classic APIs: create with owners, read, update, delete', async () => {
    const c = new DashboardClient(conn(a, { userOwners: [a.reader.id], userGroupOwners: ['g1'] }));
    try {
      assert.equal(await c.getApi('cls1'), undefined);
      await c.createApi(classic('cls1', a.org));
      const got = await c.getApi('cls1');
      assert.equal(got?.proxy.listen_path, '/cls1/');
      const rec = await dashboardCall(dash.url, 'GET', '/api/apis/cls1', { auth: a.system.key });
      assert.deepEqual(rec.body.user_owners, [a.reader.id]);
      assert.deepEqual(rec.body.user_group_owners, ['g1']);
      await c.updateApi('cls1', { ...classic('cls1', a.org), name: 'renamed' });
      assert.equal((await c.getApi('cls1'))?.name, 'renamed');
      await c.reload();
      assert.equal(await c.deleteApi('cls1'), true);
      assert.equal(await c.deleteApi('cls1'), false);
    } finally {
      await c.close();
    }
  });

  test('OAS and streams APIs: one ID space, owners by query, delete either kind', async () => {
    const c = new DashboardClient(conn(a, { userOwners: [a.reader.id] }));
    try {
      const doc = oasDocument({ id: 'oas1', listenPath: '/oas1/' });
      assert.equal(await c.getOasApi('oas1'), undefined);
      await c.createOasApi(doc);
      const got = await c.getOasApi('oas1');
      assert.equal((got?.info as { title: string }).title, 'Pets');
      const rec = await dashboardCall(dash.url, 'GET', '/api/apis/oas1', { auth: a.system.key });
      assert.deepEqual(rec.body.user_owners, [a.reader.id]);
      await c.updateOasApi('oas1', { ...doc, info: { title: 'Cats', version: '1' } });
      assert.equal(((await c.getOasApi('oas1'))?.info as { title: string }).title, 'Cats');

      const streams = {
        ...oasDocument({ id: 'str1', listenPath: '/str1/' }),
        'x-svc-streaming': {
          streams: {
            s1: { input: { http_server: { path: '/in' } }, output: { http_server: { path: '/out' } } },
          },
        },
      };
      await c.createOasApi(streams);
      const s = await c.getOasApi('str1');
      assert.ok(s?.['x-svc-streaming']);
      await c.updateOasApi('str1', { ...streams, info: { title: 'Streams', version: '2' } });
      assert.equal(((await c.getOasApi('str1'))?.info as { title: string }).title, 'Streams');
      const srec = await dashboardCall(dash.url, 'GET', '/api/apis/streams', { auth: a.system.key });
      assert.equal((srec.body.apis as unknown[]).length, 1);
      assert.equal(await c.deleteOasApi('str1'), true);
      assert.equal(await c.deleteOasApi('oas1'), true);
      assert.equal(await c.deleteOasApi('oas1'), false);
    } finally {
      await c.close();
    }
  });

  test('policies keep their explicit IDs', async () => {
    const c = new DashboardClient(conn(a));
    try {
      await c.createApi(classic('polapi', a.org));
      const p = {
        id: 'pol-1',
        name: 'gold',
        state: 'active',
        rate: 10,
        per: 60,
        quota_max: -1,
        access_rights: { polapi: { api_id: 'polapi', api_name: 'polapi', versions: ['Default'] } },
      } as unknown as GatewayPolicy;
      assert.equal(await c.getPolicy('pol-1'), undefined);
      await c.createPolicy(p);
      assert.equal((await c.getPolicy('pol-1'))?.name, 'gold');
      await c.updatePolicy('pol-1', { ...p, name: 'silver' });
      assert.equal((await c.getPolicy('pol-1'))?.name, 'silver');
      assert.equal(await c.deletePolicy('pol-1'), true);
      assert.equal(await c.deletePolicy('pol-1'), false);
      await c.deleteApi('polapi');
    } finally {
      await c.close();
    }
  });

  test('certificates: uploaded with their private key, never shown back; IDs match the gateway', async () => {
    const c = new DashboardClient(conn(a));
    try {
      const ca = await createCa({ commonName: 'client-test', validityDays: 2 });
      const id = certificateId(ca.certPem, a.org);
      assert.equal(await c.addCert(`${ca.certPem}${ca.keyPem}`, a.org), true);
      assert.equal(await c.addCert(`${ca.certPem}${ca.keyPem}`, a.org), false);
      const got = await dashboardCall(dash.url, 'GET', `/api/certs/${id}`, { auth: a.system.key });
      assert.equal(got.status, 200, got.text);
      assert.ok(!got.text.includes('PRIVATE KEY'));
      assert.ok(!got.text.includes(ca.keyPem.split('\n')[1] ?? 'no key line'), 'no key material');
      assert.equal(got.body.has_private_key, true, got.text);
      assert.equal(await c.deleteCert(id), true);
      assert.equal(await c.deleteCert(id), false);
    } finally {
      await c.close();
    }
  });

  test('basic-auth users are registered through the dashboard', async () => {
    const c = new DashboardClient(conn(a));
    try {
      await c.createApi({ ...classic('basicapi', a.org), use_keyless: false, use_basic_auth: true });
      const user = {
        org_id: a.org,
        rate: 10,
        per: 60,
        quota_max: -1,
        access_rights: { basicapi: { api_id: 'basicapi', api_name: 'basicapi', versions: ['Default'] } },
        basic_auth_data: { password: 's3cret-pw' },
      };
      assert.equal(await c.createBasicAuthUser('alice', user), true);
      assert.equal(await c.createBasicAuthUser('alice', user), false);
      assert.equal(await c.updateBasicAuthUser('alice', { ...user, rate: 20 }), true);
      assert.equal(await c.updateBasicAuthUser('nobody', user), false);
    } finally {
      await c.close();
    }
  });

  test('keys: imported by value, named by hash, two values on one counter, basic users, deleted', async () => {
    const c = new DashboardClient(conn(a));
    try {
      await c.createApi({ ...classic('keyapi', a.org), use_keyless: false, use_standard_auth: true });
      const session = {
        org_id: a.org,
        counter_id: 'apikey-uid-1',
        alias: 'k1',
        rate: 10,
        per: 60,
        quota_max: -1,
        access_rights: { keyapi: { api_id: 'keyapi', api_name: 'keyapi', versions: ['Default'] } },
      } as unknown as GatewaySession;
      const first = 'first0value0of0the0key';
      const second = 'second0value0of0the0key';
      const h1 = sha256(first);
      const h2 = sha256(second);
      assert.equal(await c.keys.get(h1), undefined);
      await c.keys.create(first, session);
      await c.keys.create(second, session);
      await assert.rejects(c.keys.create(first, session), TransientError, 'a taken value: 409');
      assert.equal((await c.keys.get(h1))?.alias, 'k1');
      assert.equal((await c.keys.get(h2))?.counter_id, 'apikey-uid-1');
      // The dashboard holds only hashes: the value is in no answer, and it reads the key by value.
      const listed = await dashboardCall(dash.url, 'GET', '/api/keys?p=-1', { auth: a.system.key });
      assert.ok(!listed.text.includes(first) && listed.text.includes(h1), listed.text);
      const byValue = await dashboardCall(dash.url, 'GET', `/api/keys/${first}`, { auth: a.system.key });
      assert.equal(byValue.body.key_hash, h1);
      await c.keys.update(h1, { ...session, alias: 'renamed' });
      assert.equal((await c.keys.get(h1))?.alias, 'renamed');
      assert.equal(await c.keys.delete(h1), true);
      assert.equal(await c.keys.delete(h1), false);
      assert.equal(await c.keys.get(h1), undefined);
      assert.equal((await c.keys.get(h2))?.alias, 'k1', 'the other value stays');

      const user = { ...session, basic_auth_data: { password: 'pw-one-1' } } as GatewaySession;
      await c.keys.create('bob', user);
      const hb = sha256('bob');
      const got = await c.keys.get(hb);
      assert.deepEqual(got?.basic_auth_data, { hash_type: 'scrypt' }, 'no password hash shown');
      await c.keys.update(hb, { ...user, basic_auth_data: { password: 'pw-two-2' } });
      assert.equal(await c.keys.delete(hb), true);
      await c.keys.delete(h2);
      await c.deleteApi('keyapi');
    } finally {
      await c.close();
    }
  });

  test('errors are typed: refused object, bad key, unreachable dashboard', async () => {
    const c = new DashboardClient(conn(a));
    const bad = new DashboardClient(conn(a, { auth: 'not-a-key' }));
    const gone = new DashboardClient(conn(a, { url: 'http://127.0.0.1:1' }), { timeoutMs: 2000 });
    try {
      await assert.rejects(
        c.createApi({ api_id: 'x1', name: 'x1', proxy: {} } as unknown as GatewayApiDefinition),
        (e: unknown) => e instanceof InputError && e.message.includes('Validation of API Definition failed'),
      );
      await assert.rejects(bad.getApi('x'), (e: unknown) => e instanceof SvcError && e.status === 401);
      await assert.rejects(gone.getApi('x'), (e: unknown) => e instanceof TransientError);
    } finally {
      await Promise.all([c.close(), bad.close(), gone.close()]);
    }
  });

  test("one organisation's client cannot read, change or delete the other's objects", async () => {
    const ca = new DashboardClient(conn(a));
    const cb = new DashboardClient(conn(b));
    try {
      await ca.createApi(classic('mine', a.org));
      assert.equal(await cb.getApi('mine'), undefined);
      assert.equal(await cb.deleteApi('mine'), false);
      await assert.rejects(cb.updateApi('mine', classic('mine', b.org)), InputError);
      assert.equal((await ca.getApi('mine'))?.org_id, a.org);
      // The same ID in the other organisation is another object.
      await cb.createApi(classic('mine', b.org));
      assert.equal((await cb.getApi('mine'))?.org_id, b.org);
      assert.equal((await ca.getApi('mine'))?.org_id, a.org);
    } finally {
      await Promise.all([ca.close(), cb.close()]);
    }
  });
});
