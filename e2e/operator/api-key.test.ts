/**
 * ApiKey end to end: a real control plane with the real webhooks, a real gateway and the
 * operator as a process. Keys are declared as resources; clients call the gateway with the value
 * the Secret holds, and see it accepted, rotated, expired and deleted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { httpRequest, waitFor, type OperatorProc } from '../harness/processes.ts';
import { startLocalWebhooks, type WebhookServer } from '../webhooks/helpers.ts';
import { makeCert, type MadeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet } from '../../gateway/testing/tls-client.ts';
import { freePort } from '../../lib/testing/wait.ts';
import {
  admin,
  applyExamples,
  applyManifest,
  defaultCertEnv,
  isReady,
  readyOf,
  tlsSecretManifest,
  startWorld,
  startWorldOperator,
  stopWorld,
  waitForStatus,
  waitReady,
  type OperatorWorld,
} from './helpers.ts';
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
  secretValue,
  sha256,
  METERED_POLICY,
} from './api-key-fixtures.ts';

const ORG = 'e2e-org';
let w: OperatorWorld;
let webhooks: WebhookServer | undefined;
let operator: OperatorProc | undefined;

before(async () => {
  w = await startWorld({
    name: 'apikey',
    namespaces: ['shop'],
    // An HTTPS listen port (the certificate-bound key's API) needs a default certificate.
    gatewayEnv: defaultCertEnv(),
  });
  webhooks = await startLocalWebhooks(w.cp, w.dir, 'apikey-webhooks');
  operator = await startWorldOperator(w, {
    org: ORG,
    env: { WATCH_NAMESPACE: 'shop,default', SVC_RESYNC_PERIOD: '2s', LOG_LEVEL: 'debug' },
  });
  await applyManifest(w.cp, keyApisManifest(w.upstream.url, { stripAuthData: true }));
  await waitReady(w.cp, { kind: 'securitypolicy', ns: 'shop', name: 'vault-plan' });
});

after(() => stopWorld(w, operator, webhooks));

/** A client request through the gateway with `authorization`. */
async function call(path: string, authorization?: string): Promise<{ status: number; body: string }> {
  const r = await httpRequest(`${w.gw.url}${path}`, { headers: authorization ? { authorization } : {} });
  return { status: r.status, body: r.body };
}

test('a key without a Secret: the operator generates it; the value authenticates, the gateway holds only its hash', async () => {
  await applyManifest(w.cp, keyManifest('alice', '  policies: [vault-plan]\n  alias: alice\n'));
  const st = await waitReady(w.cp, keyRef('alice'));
  const value = await secretValue(w.cp, 'shop', 'alice');
  assert.ok(value !== undefined && value.length >= 32, 'a strong value was written to the Secret');
  assert.equal(st.keyHash, sha256(value));
  assert.deepEqual(st.policyIds, [
    (await waitReady(w.cp, { kind: 'securitypolicy', ns: 'shop', name: 'vault-plan' })).pol_id,
  ]);
  await waitFor('the key authenticates', async () => (await call('/vault/x', value)).status === 200);
  assert.equal((await call('/vault/x', 'not-the-key')).status, 403);
  const held = await admin(w.gw, 'GET', `/svc/keys/${sha256(value)}?hashed=true`);
  assert.equal(held.status, 200);
  assert.doesNotMatch(JSON.stringify(held.body), new RegExp(value), 'the clear value is not stored');
  const owner = await w.cp.kubectl([
    'get',
    'secret',
    'alice',
    '-n',
    'shop',
    '-o',
    'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}',
  ]);
  assert.equal(owner.stdout, 'ApiKey/alice');
  const logs = operator?.log() ?? '';
  assert.doesNotMatch(logs, new RegExp(value), 'the value is never logged');
});

test('kubectl get svckey: the short name, the printer columns Type, Policies, Expires, Ready, and the category svc-all', async () => {
  const st = await waitReady(w.cp, keyRef('alice'));
  const polId = String((st.policyIds as string[] | undefined)?.[0]);
  const out = await w.cp.kubectl(['get', 'svckey', 'alice', '-n', 'shop']);
  const [header, row] = out.stdout.trim().split('\n');
  assert.match(header ?? '', /^NAME\s+TYPE\s+POLICIES\s+EXPIRES\s+READY\s+AGE$/);
  assert.match(row ?? '', new RegExp(`^alice\\s+token\\s+${polId}\\s+(<none>\\s+)?True\\s+\\S+$`));
  const all = await w.cp.kubectl(['get', 'svc-all', '-n', 'shop', '-o', 'name']);
  assert.match(all.stdout, /^apikey\.svc\.svc\.io\/alice$/m);
});

test('a Secret created after its ApiKey: SecretNotFound, then the key works with its value', async () => {
  await applyManifest(
    w.cp,
    keyManifest('bob', '  policies: [vault-plan]\n  secretRef: {name: bob-credentials, key: token}\n'),
  );
  const waiting = await waitForStatus(
    w.cp,
    keyRef('bob'),
    'SecretNotFound',
    (s) => readyOf(s)?.reason === 'SecretNotFound',
  );
  assert.match(readyOf(waiting)?.message ?? '', /Secret shop\/bob-credentials does not exist yet/);
  await w.cp.kubectl([
    'create',
    'secret',
    'generic',
    'bob-credentials',
    '-n',
    'shop',
    '--from-literal=token=bob-token-0123456789abcdef',
  ]);
  const st = await waitReady(w.cp, keyRef('bob'));
  assert.equal(st.keyHash, sha256('bob-token-0123456789abcdef'));
  await waitFor(
    'bob authenticates',
    async () => (await call('/vault/y', 'bob-token-0123456789abcdef')).status === 200,
  );
});

test('a policy created after the key: PolicyNotFound, then Ready and authenticating', async () => {
  await keyBeforeItsPolicy(w.cp, 'carol');
  await waitReady(w.cp, keyRef('carol'));
  const value = (await secretValue(w.cp, 'shop', 'carol')) ?? '';
  await waitFor('carol authenticates', async () => (await call('/vault/z', value)).status === 200);
});

test('accessRights naming an API created later: ApiNotFound naming it, then only its allowed URLs are served', async () => {
  await applyManifest(
    w.cp,
    keyManifest(
      'erin',
      `  accessRights:
  - name: pantry
    allowed_urls: [{url: "/get(.*)", methods: [GET]}]
`,
    ),
  );
  await pantryAfterItsKey(w.cp, 'erin', w.upstream.url);
  const value = (await secretValue(w.cp, 'shop', 'erin')) ?? '';
  await waitFor(
    'erin is served on an allowed URL',
    async () => (await call('/pantry/get', value)).status === 200,
  );
  assert.equal((await call('/pantry/get/deeper', value)).status, 200);
  const other = await call('/pantry/put', value);
  assert.equal(other.status, 403, 'a path outside allowed_urls');
  assert.match(other.body, /Access to this resource has been disallowed/);
  const api2 = await call('/vault/x', value);
  assert.equal(api2.status, 403, 'an API the key has no right to');
  assert.match(api2.body, /Access to this API has been disallowed/);
});

test('metadata changed: the key is updated in place, its hash and value unchanged', async () => {
  const before = await waitReady(w.cp, keyRef('alice'));
  await patchKey(w.cp, 'alice', { spec: { metaData: { team: 'blue' } } });
  await waitFor('the gateway holds the new metadata', async () => {
    const r = await admin(w.gw, 'GET', `/svc/keys/${String(before.keyHash)}?hashed=true`);
    return (r.body as { meta_data?: Record<string, string> }).meta_data?.team === 'blue';
  });
  assert.equal((await waitReady(w.cp, keyRef('alice'))).keyHash, before.keyHash);
});

test('quota kept across a metadata change: the update does not reset the key counters', async () => {
  await applyManifest(
    w.cp,
    `${METERED_POLICY}---
${keyManifest('frank', '  policies: [metered]\n')}`,
  );
  const st = await waitReady(w.cp, keyRef('frank'));
  const value = (await secretValue(w.cp, 'shop', 'frank')) ?? '';
  await waitFor('frank authenticates', async () => (await call('/vault/q', value)).status === 200);
  assert.equal((await call('/vault/q', value)).status, 200);
  await patchKey(w.cp, 'frank', { spec: { metaData: { plan: 'gold' } } });
  await waitFor('the gateway holds the new metadata', async () => {
    const r = await admin(w.gw, 'GET', `/svc/keys/${String(st.keyHash)}?hashed=true`);
    return (r.body as { meta_data?: Record<string, string> }).meta_data?.plan === 'gold';
  });
  assert.equal((await call('/vault/q', value)).status, 200, 'the third request of the quota');
  const over = await call('/vault/q', value);
  assert.equal(over.status, 403, 'the fourth is over the quota: the update kept the count');
  assert.match(over.body, /Quota exceeded/);
});

test('rotation: the old and the new value count against one quota, and the count outlives the rotation', async () => {
  await applyManifest(
    w.cp,
    keyManifest('gina', '  policies: [metered]\n  rotation: {overlapSeconds: 600}\n'),
  );
  await waitReady(w.cp, keyRef('gina'));
  const oldValue = (await secretValue(w.cp, 'shop', 'gina')) ?? '';
  await waitFor('gina authenticates', async () => (await call('/vault/g', oldValue)).status === 200);
  await patchKey(w.cp, 'gina', { spec: { rotate: 'r1' } });
  await waitForStatus(w.cp, keyRef('gina'), 'rotated', (s) => s.rotated === 'r1' && isReady(s));
  const newValue = (await secretValue(w.cp, 'shop', 'gina')) ?? '';
  assert.notEqual(newValue, oldValue);
  assert.equal((await call('/vault/g', newValue)).status, 200, 'the second request of the quota');
  assert.equal((await call('/vault/g', oldValue)).status, 200, 'the third, with the old value');
  const over = await call('/vault/g', newValue);
  assert.equal(over.status, 403, 'the fourth is over the one quota both values count against');
  assert.match(over.body, /Quota exceeded/);
  assert.equal((await call('/vault/g', oldValue)).status, 403);
});

test('drift: a field edited in the gateway behind the operator is put back', async () => {
  const st = await waitReady(w.cp, keyRef('bob'));
  const path = `/svc/keys/${String(st.keyHash)}?hashed=true`;
  const held = { ...((await admin(w.gw, 'GET', path)).body as Record<string, unknown>) };
  delete held.key_hash; // what GET adds: not a field of the key
  const put = await admin(w.gw, 'PUT', `${path}&suppress_reset=1`, {
    ...held,
    alias: 'edited by hand',
    apply_policies: [],
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  await waitFor('the policies and alias put back', async () => {
    const r = (await admin(w.gw, 'GET', path)).body as { alias?: string; apply_policies?: string[] };
    return r.alias !== 'edited by hand' && r.apply_policies?.length === 1;
  });
  // The stored key is put back at once; a worker's cached session follows on the cache
  // invalidation that write sends (a moment later under load: a 403 here failed CI once).
  await waitFor(
    'bob served again with the policy put back',
    async () => (await call('/vault/y', 'bob-token-0123456789abcdef')).status === 200,
    10_000,
  );
});

test('drift: a key deleted behind the operator is created again', async () => {
  const st = await waitReady(w.cp, keyRef('bob'));
  const del = await admin(w.gw, 'DELETE', `/svc/keys/${String(st.keyHash)}?hashed=true`);
  assert.equal(del.status, 200);
  await waitFor(
    'bob works again',
    async () => (await call('/vault/y', 'bob-token-0123456789abcdef')).status === 200,
  );
});

test('rotate with overlap: both values work during the overlap, the old one is refused after', async () => {
  const oldValue = (await secretValue(w.cp, 'shop', 'alice')) ?? '';
  await patchKey(w.cp, 'alice', { spec: { rotation: { overlapSeconds: 6 }, rotate: 'r1' } });
  const st = await waitForStatus(w.cp, keyRef('alice'), 'rotated', (s) => s.rotated === 'r1' && isReady(s));
  const newValue = (await secretValue(w.cp, 'shop', 'alice')) ?? '';
  assert.notEqual(newValue, oldValue);
  assert.equal(st.keyHash, sha256(newValue));
  assert.equal((st.rotatedFrom as { keyHash?: string } | undefined)?.keyHash, sha256(oldValue));
  assert.equal((await call('/vault/r', newValue)).status, 200);
  assert.equal((await call('/vault/r', oldValue)).status, 200, 'the old value works during the overlap');
  await waitFor(
    'the old value refused after the overlap',
    async () => (await call('/vault/r', oldValue)).status === 403,
    30_000,
  );
  assert.equal((await call('/vault/r', newValue)).status, 200);
  const after = await waitForStatus(
    w.cp,
    keyRef('alice'),
    'overlap over',
    (s) => s.rotatedFrom === undefined,
  );
  assert.equal(after.keyHash, sha256(newValue));
});

test('a Secret changed by hand (overlap 0): the new value works at once, the old one is refused', async () => {
  await w.cp.kubectl([
    'patch',
    'secret',
    'bob-credentials',
    '-n',
    'shop',
    '--type=merge',
    '-p',
    JSON.stringify({ stringData: { token: 'bob-token-rotated-0123456789' } }),
  ]);
  await waitFor(
    'the new value works',
    async () => (await call('/vault/y', 'bob-token-rotated-0123456789')).status === 200,
  );
  await waitFor(
    'the old value is refused',
    async () => (await call('/vault/y', 'bob-token-0123456789abcdef')).status === 403,
  );
  assert.equal((await waitReady(w.cp, keyRef('bob'))).keyHash, sha256('bob-token-rotated-0123456789'));
});

test('a Secret changed by hand with an overlap (as an external secrets tool does): both values share one rate limit; lastRotatedAt', async () => {
  const [oldValue, newValue] = ['hank-token-old-0123456789', 'hank-token-new-0123456789'];
  await pacedKeyFromSecret(w.cp, oldValue);
  const first = await waitReady(w.cp, keyRef('hank'));
  assert.equal(first.lastRotatedAt, undefined, 'not rotated yet');
  await waitFor('hank authenticates', async () => (await call('/vault/h', oldValue)).status === 200);
  const st = await rotateBySecret(w.cp, oldValue, newValue);
  assert.ok(
    Date.now() - Date.parse(String(st.lastRotatedAt)) < 120_000,
    `lastRotatedAt is the rotation's time: ${String(st.lastRotatedAt)}`,
  );
  assert.equal((await call('/vault/h', newValue)).status, 200, 'the second request of the rate');
  await assertOneRateForBoth(call, oldValue, newValue);
});

test('expiresAt in the past: 401 Key has expired, please renew', async () => {
  const value = (await secretValue(w.cp, 'shop', 'carol')) ?? '';
  await patchKey(w.cp, 'carol', { spec: { expiresAt: '2020-01-01T00:00:00Z' } });
  await waitFor('the key refused as expired', async () => (await call('/vault/z', value)).status === 401);
  const r = await call('/vault/z', value);
  assert.match(r.body, /Key has expired, please renew/);
  const st = await waitForStatus(
    w.cp,
    keyRef('carol'),
    'expiresAt',
    (s) => s.expiresAt === '2020-01-01T00:00:00Z',
  );
  assert.match(readyOf(st)?.message ?? '', /expired/);
});

test('a basic-auth user: its password from the Secret authenticates, a changed one replaces it', async () => {
  const st = await basicUserReady(w.cp, 'dave', 'first-pass-1');
  assert.equal(st.keyHash, undefined);
  await waitFor(
    'dave authenticates',
    async () => (await call('/locker/a', basicAuth('dave', 'first-pass-1'))).status === 200,
  );
  assert.equal((await call('/locker/a', basicAuth('dave', 'wrong'))).status, 401);
  await changePassword(w.cp, 'dave-pw', 'second-pass-2');
  await waitFor(
    'the new password works',
    async () => (await call('/locker/a', basicAuth('dave', 'second-pass-2'))).status === 200,
  );
  assert.equal((await call('/locker/a', basicAuth('dave', 'first-pass-1'))).status, 401);
});

test('the webhook refuses a certificate key without its Secret and a basic key without a user, naming the field', async () => {
  const r = await w.cp.kubectl(['apply', '-f', '-'], {
    input: keyManifest('eve', '  type: certificate\n'),
    allowFailure: true,
  });
  assert.notEqual(r.code, 0);
  assert.match(
    r.stderr,
    /spec\.certificateSecretRef: Required value: a certificate key names the kubernetes\.io\/tls Secret/,
  );
  const r2 = await w.cp.kubectl(['apply', '-f', '-'], {
    input: keyManifest('eve', '  type: basic\n'),
    allowFailure: true,
  });
  assert.match(r2.stderr, /spec\.username: Required value: a basic key names its user/);
});

test("certificate key (dynamic mTLS): the client with the Secret's certificate is served without a token, another certificate is not; a new certificate in the Secret re-binds; deleted, refused", async () => {
  const port = await freePort();
  const bound: MadeCert = await makeCert('bound-client');
  const other: MadeCert = await makeCert('other-client');
  const get = (client?: MadeCert) =>
    tlsGet(port, '/bound/get', client ? { client: { cert: client.cert, key: client.key } } : {});
  // The key first, its Secret later: it waits, then binds.
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: bound, namespace: shop}
spec:
  name: bound
  use_keyless: false
  use_standard_auth: true
  auth: {use_certificate: true}
  protocol: https
  listen_port: ${String(port)}
  proxy: {listen_path: /bound/, target_url: "${w.upstream.url}", strip_listen_path: true}
---
${keyManifest('ivy', '  type: certificate\n  certificateSecretRef: ivy-tls\n  accessRights: [{name: bound}]\n')}`,
  );
  const waiting = await waitForStatus(
    w.cp,
    keyRef('ivy'),
    'SecretNotFound',
    (s) => readyOf(s)?.reason === 'SecretNotFound',
  );
  assert.match(
    readyOf(waiting)?.message ?? '',
    /spec\.certificateSecretRef: Secret shop\/ivy-tls does not exist yet/,
  );
  await applyManifest(w.cp, tlsSecretManifest('shop', 'ivy-tls', bound));
  const st = await waitReady(w.cp, keyRef('ivy'));
  assert.equal(st.certificateId, `${ORG}${bound.fingerprint}`);
  await waitFor('the bound certificate is served', async () => (await get(bound)).status === 200);
  const refused = await get(other);
  assert.equal(refused.status, 401, 'another certificate, no token');
  assert.equal(refused.json?.error, 'Authorization field missing');
  assert.equal((await get()).status, 401, 'no certificate, no token');
  const cert = await admin(w.gw, 'GET', `/svc/certs/${ORG}${bound.fingerprint}`);
  assert.equal(cert.status, 200);
  assert.doesNotMatch(JSON.stringify(cert.body), /PRIVATE KEY/, 'only the certificate is uploaded');

  // Rotation: the Secret gets another certificate; the key follows it.
  await applyManifest(w.cp, tlsSecretManifest('shop', 'ivy-tls', other));
  await waitFor('the new certificate is served', async () => (await get(other)).status === 200);
  await waitFor('the old certificate is refused', async () => (await get(bound)).status === 401);
  const rotated = await waitReady(w.cp, keyRef('ivy'));
  assert.equal(rotated.certificateId, `${ORG}${other.fingerprint}`);
  assert.equal((await admin(w.gw, 'GET', `/svc/keys/${String(st.keyHash)}?hashed=true`)).status, 404);
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${ORG}${bound.fingerprint}`)).status, 404);

  await w.cp.kubectl(['delete', 'apikey', 'ivy', '-n', 'shop', '--wait=true', '--timeout=60s']);
  assert.equal((await get(other)).status, 401, 'the key deleted: its certificate authenticates no more');
  assert.equal((await admin(w.gw, 'GET', `/svc/certs/${ORG}${other.fingerprint}`)).status, 404);
});

test('deleted: the key is refused and gone from the gateway, and so is a previous value still in its overlap', async () => {
  const st = await waitReady(w.cp, keyRef('bob'));
  await w.cp.kubectl(['delete', 'apikey', 'bob', '-n', 'shop', '--wait=true', '--timeout=60s']);
  assert.equal((await call('/vault/y', 'bob-token-rotated-0123456789')).status, 403);
  assert.equal((await admin(w.gw, 'GET', `/svc/keys/${String(st.keyHash)}?hashed=true`)).status, 404);
  const hank = await waitReady(w.cp, keyRef('hank'));
  const previous = (hank.rotatedFrom as { keyHash?: string } | undefined)?.keyHash;
  assert.ok(previous !== undefined, 'hank is in its overlap');
  await w.cp.kubectl(['delete', 'apikey', 'hank', '-n', 'shop', '--wait=true', '--timeout=60s']);
  for (const hash of [String(hank.keyHash), previous]) {
    assert.equal((await admin(w.gw, 'GET', `/svc/keys/${hash}?hashed=true`)).status, 404, hash);
  }
});

test('examples: the example key is Ready with its generated Secret, the gateway holds it', async () => {
  const r = await applyExamples(w.cp, ['api-definition', 'security-policy']);
  assert.equal(r.code, 0, r.stderr);
  const st = await waitReady(w.cp, keyRef('orders-client', 'default'), 60_000);
  const value = (await secretValue(w.cp, 'default', 'orders-client')) ?? '';
  assert.equal(st.keyHash, sha256(value));
  assert.equal((await admin(w.gw, 'GET', `/svc/keys/${sha256(value)}?hashed=true`)).status, 200);
});
