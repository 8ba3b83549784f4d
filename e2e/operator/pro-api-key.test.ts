/**
 * ApiKey in mode pro end to end: a real control plane, a real dashboard (SQLite), a gateway in
 * mode pro loading from it, and the operator (mode pro) writing keys to the dashboard's
 * `/api/keys` and `/api/apis/keys/basic/{username}`. Clients call the gateway with the value the
 * Secret holds and see it accepted, rotated with an overlap (one quota for both values),
 * reverted after drift, expired and deleted; the dashboard holds only hashes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { kstatusOf, type KstatusObject } from '../../lib/testing/kstatus.ts';
import {
  dashboardCall,
  startDashboardProc,
  type DashboardProc,
  type DashboardTenant,
} from '../harness/dashboard.ts';
import { tryRequest, waitFor, type GatewayProc, type OperatorProc } from '../harness/processes.ts';
import { makeCert } from '../../gateway/testing/client-certs.ts';
import {
  applyManifest,
  isReady,
  readyOf,
  startWorld,
  stopWorld,
  tlsSecretManifest,
  waitForStatus,
  waitReady,
  type OperatorWorld,
} from './helpers.ts';
import { startProGatewayAndOperator } from './pro-world.ts';
import {
  assertOneRateForBoth,
  basicAuth,
  changePassword,
  basicUserReady,
  keyApisManifest,
  keyBeforeItsPolicy,
  keyManifest,
  keyRef,
  pacedKeyFromSecret,
  pantryAfterItsKey,
  patchKey,
  rotateBySecret,
  secretValue as secretValueOf,
  sha256,
  METERED_POLICY,
} from './api-key-fixtures.ts';

const NODE_SECRET = 'e2e-pro-key-node-secret-01';

let w: OperatorWorld;
let dashboard: DashboardProc;
let tenant: DashboardTenant;
let gw: GatewayProc;
let operator: OperatorProc;

before(async () => {
  w = await startWorld({ name: 'pro-key', namespaces: ['shop'] });
  dashboard = await startDashboardProc({
    name: 'pro-key-dashboard',
    logDir: w.dir,
    dataDir: join(w.dir, 'dashboard'),
    args: ['--node-secret', NODE_SECRET],
  });
  ({ tenant, gw, operator } = await startProGatewayAndOperator(w, {
    name: 'pro-key',
    dashboard,
    nodeSecret: NODE_SECRET,
    resync: '2s',
  }));
  await applyManifest(
    w.cp,
    `${keyApisManifest(w.upstream.url)}---
${METERED_POLICY}`,
  );
  await waitReady(w.cp, { kind: 'securitypolicy', ns: 'shop', name: 'vault-plan' });
  await waitReady(w.cp, { kind: 'securitypolicy', ns: 'shop', name: 'metered' });
});

after(() => stopWorld(w, operator, gw, dashboard));

const secretValue = async (name: string, dataKey?: string): Promise<string> =>
  (await secretValueOf(w.cp, 'shop', name, dataKey)) ?? '';

const call = (path: string, authorization: string): Promise<{ status: number; body: string }> =>
  tryRequest(`${gw.url}${path}`, { headers: { authorization } });

const answers = async (path: string, auth: string, status: number): Promise<void> => {
  await waitFor(
    `${path} answers ${String(status)}`,
    async () => (await call(path, auth)).status === status,
    30_000,
  );
};

/** The key as the dashboard holds it, by hash: status and body. */
const held = (hash: string) =>
  dashboardCall(dashboard.url, 'GET', `/api/keys/${hash}?hashed=true`, { auth: tenant.system.key });

test('pro: a key without a Secret is generated, held by the dashboard by its hash only, and authenticates at the gateway', async () => {
  await applyManifest(w.cp, keyManifest('alice', '  policies: [vault-plan]\n  alias: alice\n'));
  const st = await waitReady(w.cp, keyRef('alice'));
  const value = await secretValue('alice');
  assert.ok(value.length >= 32);
  assert.equal(st.keyHash, sha256(value));
  assert.match(readyOf(st)?.message ?? '', new RegExp(`key ${sha256(value)} is held by ${dashboard.url}`));
  const h = await held(sha256(value));
  assert.equal(h.status, 200, h.text);
  assert.equal((h.body.data as { alias?: string }).alias, 'alice');
  assert.equal((h.body.data as { org_id?: string }).org_id, tenant.org);
  const list = await dashboardCall(dashboard.url, 'GET', '/api/keys?p=-1', { auth: tenant.system.key });
  assert.ok(
    list.text.includes(sha256(value)) && !list.text.includes(value),
    'the dashboard lists the hash only',
  );
  await answers('/vault/a', value, 200);
  assert.equal((await call('/vault/a', 'not-the-key')).status, 403);
  assert.doesNotMatch(operator.log(), new RegExp(value), 'the value is never logged');
});

test('pro: accessRights beside a quota-only policy; the API created later: ApiNotFound, then only its allowed URLs are served', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: quota-only, namespace: shop}
spec:
  name: quota-only
  partitions: {quota: true}
  quota_max: 100
  quota_renewal_rate: 3600
---
${keyManifest(
  'erin',
  `  policies: [quota-only]
  accessRights:
  - name: pantry
    allowed_urls: [{url: "/get(.*)", methods: [GET]}]
`,
)}`,
  );
  const { api } = await pantryAfterItsKey(w.cp, 'erin', w.upstream.url);
  const value = await secretValue('erin');
  const h = await held(sha256(value));
  assert.deepEqual(Object.keys((h.body.data as { access_rights?: object }).access_rights ?? {}), [
    api.api_id,
  ]);
  await answers('/pantry/get', value, 200);
  const other = await call('/pantry/put', value);
  assert.equal(other.status, 403, 'a path outside allowed_urls');
  assert.match(other.body, /Access to this resource has been disallowed/);
  assert.equal((await call('/vault/a', value)).status, 403, 'an API the key has no right to');
});

test('pro: a certificate key is refused clearly (NotSupportedInPro naming the dashboard), nothing written', async () => {
  // Its Secret exists: the key is refused for its type, not waiting for the Secret.
  await applyManifest(w.cp, tlsSecretManifest('shop', 'gus-tls', await makeCert('gus-client')));
  const keysBefore = await dashboardCall(dashboard.url, 'GET', '/api/keys?p=-1', { auth: tenant.system.key });
  const certsBefore = await dashboardCall(dashboard.url, 'GET', '/api/certs', { auth: tenant.system.key });
  assert.equal(keysBefore.status, 200, keysBefore.text);
  assert.equal(certsBefore.status, 200, certsBefore.text);
  await applyManifest(w.cp, keyManifest('gus', '  type: certificate\n  certificateSecretRef: gus-tls\n'));
  const st = await waitForStatus(
    w.cp,
    keyRef('gus'),
    'NotSupportedInPro',
    (s) => readyOf(s)?.reason === 'NotSupportedInPro',
  );
  assert.equal(readyOf(st)?.status, 'False');
  assert.match(
    readyOf(st)?.message ?? '',
    new RegExp(`certificate keys \\(dynamic mTLS\\).*${dashboard.url}`),
  );
  assert.equal(st.keyHash, undefined);
  assert.equal(st.certificateId, undefined);
  const keysAfter = await dashboardCall(dashboard.url, 'GET', '/api/keys?p=-1', { auth: tenant.system.key });
  assert.deepEqual(keysAfter.body, keysBefore.body, 'no key written to the dashboard');
  const certsAfter = await dashboardCall(dashboard.url, 'GET', '/api/certs', { auth: tenant.system.key });
  assert.deepEqual(certsAfter.body, certsBefore.body, 'no certificate uploaded');
  assert.equal(await secretValueOf(w.cp, 'shop', 'gus'), undefined, 'no Secret generated');
  await w.cp.kubectl(['delete', 'apikey', 'gus', '-n', 'shop', '--wait=true', '--timeout=60s']);
});

test('pro: a policy created after the key: PolicyNotFound, then Ready and authenticating', async () => {
  await keyBeforeItsPolicy(w.cp, 'carol');
  const st = await waitReady(w.cp, keyRef('carol'));
  const value = await secretValue('carol');
  assert.equal(st.keyHash, sha256(value));
  await answers('/vault/c', value, 200);
});

test('pro: a basic-auth user registered from its Secret; a new password replaces the old', async () => {
  await basicUserReady(w.cp, 'dave', 'first-1');
  const basic = (pw: string): string => basicAuth('dave', pw);
  await answers('/locker/a', basic('first-1'), 200);
  const h = await held(sha256('dave'));
  assert.deepEqual((h.body.data as { basic_auth_data?: unknown }).basic_auth_data, { hash_type: 'scrypt' });
  await changePassword(w.cp, 'dave-pw', 'second-2');
  await answers('/locker/a', basic('second-2'), 200);
  assert.equal((await call('/locker/a', basic('first-1'))).status, 401);
});

test('pro: drift in the dashboard is reverted: a field edited by hand, the key deleted by hand', async () => {
  const st = await waitReady(w.cp, keyRef('alice'));
  const hash = String(st.keyHash);
  const before = (await held(hash)).body.data as Record<string, unknown>;
  const put = await dashboardCall(dashboard.url, 'PUT', `/api/keys/${hash}?hashed=true`, {
    auth: tenant.system.key,
    body: { ...before, alias: 'edited by hand' },
  });
  assert.equal(put.status, 200, put.text);
  await waitFor(
    'the alias back to alice',
    async () => ((await held(hash)).body.data as { alias?: string } | undefined)?.alias === 'alice',
    30_000,
  );
  const del = await dashboardCall(dashboard.url, 'DELETE', `/api/keys/${hash}?hashed=true`, {
    auth: tenant.system.key,
  });
  assert.equal(del.status, 200, del.text);
  await waitFor('the key held again', async () => (await held(hash)).status === 200, 30_000);
  await answers('/vault/a', await secretValue('alice'), 200);
});

test('pro: rotation with an overlap: both values work on one quota, the old one is refused after', async () => {
  await applyManifest(w.cp, keyManifest('gina', '  policies: [metered]\n  rotation: {overlapSeconds: 20}\n'));
  await waitReady(w.cp, keyRef('gina'));
  const oldValue = await secretValue('gina');
  await answers('/vault/g', oldValue, 200);
  await patchKey(w.cp, 'gina', { spec: { rotate: 'r1' } });
  const st = await waitForStatus(w.cp, keyRef('gina'), 'rotated', (s) => s.rotated === 'r1' && isReady(s));
  const newValue = await secretValue('gina');
  assert.notEqual(newValue, oldValue);
  assert.equal(st.keyHash, sha256(newValue));
  assert.equal((st.rotatedFrom as { keyHash?: string } | undefined)?.keyHash, sha256(oldValue));
  assert.equal((await held(sha256(oldValue))).status, 200, 'the old hash kept during the overlap');
  await answers('/vault/g', newValue, 200);
  assert.equal((await call('/vault/g', oldValue)).status, 200, 'the third request, with the old value');
  const over = await call('/vault/g', newValue);
  assert.equal(over.status, 403, 'the fourth is over the one quota both values count against');
  assert.match(over.body, /Quota exceeded/);
  await waitFor(
    'the old hash deleted after the overlap',
    async () => (await held(sha256(oldValue))).status === 404,
    60_000,
  );
  // Refused as unknown now, no longer as over the quota.
  const unknown = await call('/vault/g', 'never-a-key-0123456789');
  await waitFor(
    'the old value refused as an unknown key',
    async () => {
      const r = await call('/vault/g', oldValue);
      return r.status === unknown.status && r.body === unknown.body;
    },
    30_000,
  );
  assert.doesNotMatch(unknown.body, /Quota exceeded/);
  const after = await waitForStatus(w.cp, keyRef('gina'), 'overlap over', (s) => s.rotatedFrom === undefined);
  assert.equal(after.keyHash, sha256(newValue));
});

test('pro: a Secret changed by hand with an overlap: both values share one rate limit; lastRotatedAt', async () => {
  const [oldValue, newValue] = ['hank-token-old-0123456789', 'hank-token-new-0123456789'];
  await pacedKeyFromSecret(w.cp, oldValue);
  await waitReady(w.cp, keyRef('hank'));
  await answers('/vault/h', oldValue, 200);
  const st = await rotateBySecret(w.cp, oldValue, newValue);
  assert.ok(Date.now() - Date.parse(String(st.lastRotatedAt)) < 120_000, String(st.lastRotatedAt));
  assert.equal((await held(sha256(oldValue))).status, 200, 'the old hash kept during the overlap');
  await answers('/vault/h', newValue, 200);
  await assertOneRateForBoth(call, oldValue, newValue);
});

test('pro: expiresAt in the past: 401 Key has expired, please renew', async () => {
  const value = await secretValue('alice');
  await patchKey(w.cp, 'alice', { spec: { expiresAt: '2020-01-01T00:00:00Z' } });
  await answers('/vault/e', value, 401);
  assert.match((await call('/vault/e', value)).body, /Key has expired, please renew/);
  const st = await waitForStatus(
    w.cp,
    keyRef('alice'),
    'expired',
    (s) => s.expiresAt === '2020-01-01T00:00:00Z',
  );
  assert.match(readyOf(st)?.message ?? '', /expired/);
  assert.equal(((await held(sha256(value))).body.data as { expires?: number }).expires, 1577836800);
});

test('pro: deleted: the finalizer deletes the key and the user from the dashboard; the gateway refuses them', async () => {
  const st = await waitReady(w.cp, keyRef('gina'));
  const value = await secretValue('gina');
  await w.cp.kubectl(['delete', 'apikey', 'gina', 'dave', '-n', 'shop', '--wait=true', '--timeout=60s']);
  assert.equal((await held(String(st.keyHash))).status, 404);
  assert.equal((await held(sha256('dave'))).status, 404);
  await answers('/vault/g', value, 403);
  await answers('/locker/a', basicAuth('dave', 'second-2'), 401);
});

test('pro: kstatus (Flux) reads the stored objects: a Secret to come InProgress then Current, a refused spec Failed', async () => {
  const kstatus = async (name: string) => {
    const r = await w.cp.kubectl(['get', 'apikey', name, '-n', 'shop', '-o', 'json']);
    return kstatusOf(JSON.parse(r.stdout) as KstatusObject);
  };
  await applyManifest(
    w.cp,
    keyManifest('late', '  policies: [vault-plan]\n  secretRef: {name: late-secret}\n'),
  );
  await waitForStatus(w.cp, keyRef('late'), 'SecretNotFound', (s) => readyOf(s)?.reason === 'SecretNotFound');
  assert.deepEqual(await kstatus('late'), {
    status: 'InProgress',
    message: 'Secret shop/late-secret does not exist yet: the key is created once it does',
  });
  await w.cp.kubectl([
    'create',
    'secret',
    'generic',
    'late-secret',
    '-n',
    'shop',
    '--from-literal=key=late-0123456789',
  ]);
  await waitReady(w.cp, keyRef('late'));
  assert.deepEqual(await kstatus('late'), { status: 'Current', message: 'Resource is current' });
  // No webhook in this suite: what it would refuse reaches the operator, which refuses it for good.
  await applyManifest(w.cp, keyManifest('bad', '  type: basic\n'));
  await waitForStatus(w.cp, keyRef('bad'), 'SpecInvalid', (s) => readyOf(s)?.reason === 'SpecInvalid');
  const bad = await kstatus('bad');
  assert.equal(bad.status, 'Failed');
  assert.match(bad.message, /spec\.username/);
});
