/**
 * reconcileApiKey against fake parts: the Secret, the policies and the gateway's keys in, the
 * gateway writes, the Secret writes, the status and the requeue out. The e2e suite
 * (e2e/operator/api-key.test.ts) runs the same lifecycle against the real processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { createCa } from '../../lib/x509.ts';
import type { SecretContent } from '../certificates.ts';
import type { ApiKeySpec, ApiKeyStatus } from '../../schemas/generated/kinds.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import type { KeyOps } from '../clients/management.ts';
import { keyHashOf, reconcileApiKey, type ApiKeyDeps, type KeyObject, type PolicyView } from './api-key.ts';
import { assertReady, baseDeps, FakeGateway, NOW } from './testing.ts';

/** A gateway with keys: what it holds by hash, and its writes. */
class KeyedGateway extends FakeGateway {
  readonly held = new Map<string, GatewaySession>();
  readonly keyWrites: string[] = [];
  readonly keys: KeyOps = {
    get: (h) => Promise.resolve(this.held.get(h)),
    create: (raw, s, opts) => {
      this.keyWrites.push(`create ${keyHashOf(raw)}${opts?.keepCounters === true ? ' (counters kept)' : ''}`);
      this.held.set(keyHashOf(raw), s);
      return Promise.resolve();
    },
    update: (h, s) => {
      this.keyWrites.push(`update ${h}`);
      this.held.set(h, s);
      return Promise.resolve();
    },
    delete: (h) => {
      this.keyWrites.push(`delete ${h}`);
      return Promise.resolve(this.held.delete(h));
    },
  };
}

const policy: PolicyView = {
  metadata: { name: 'plan', namespace: 'team' },
  status: {
    pol_id: 'pol-1',
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Synced',
        message: '',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ],
  },
};

/** A policy that gives its keys only a quota: their own access rights stay. */
const quotaOnly: PolicyView = {
  ...policy,
  metadata: { name: 'quota-only', namespace: 'team' },
  spec: { partitions: { quota: true } },
  status: { ...policy.status, pol_id: 'pol-q' },
};

/** An API the operator has pushed: its ID in its status. */
const ordersApi = { metadata: { name: 'orders', namespace: 'team' }, status: { api_id: 'api-orders' } };

/** A kubernetes.io/tls Secret of a fresh client certificate, its gateway ID and bound key's hash. */
async function clientTls(cn: string): Promise<{ secret: SecretContent; id: string; keyHash: string }> {
  const c = await createCa({ commonName: cn, validityDays: 1 });
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  const fingerprint = createHash('sha256').update(new X509Certificate(c.certPem).raw).digest('hex');
  return {
    secret: { type: 'kubernetes.io/tls', data: { 'tls.crt': b64(c.certPem), 'tls.key': b64(c.keyPem) } },
    id: `org-1${fingerprint}`,
    keyHash: keyHashOf(`cert:org-1:${fingerprint}`),
  };
}

function setup(
  spec: ApiKeySpec,
  opts: {
    secret?: string;
    mode?: 'ce' | 'pro';
    status?: ApiKeyStatus;
    tls?: { current: SecretContent | undefined };
  } = {},
) {
  const gw = new KeyedGateway('http://gw');
  const base = baseDeps<KeyObject>({ default: gw });
  let secretValue = opts.secret;
  let version = 1;
  const secretWrites: string[] = [];
  const obj: KeyObject = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiKey',
    metadata: {
      name: 'k',
      namespace: 'team',
      generation: 1,
      uid: 'u1',
      finalizers: ['finalizers.svc.svc.io/apikey'],
    },
    spec,
    ...(opts.status ? { status: opts.status } : {}),
  };
  const deps: ApiKeyDeps = {
    ...base,
    connections: {
      resolve: async (ref, ns) => {
        const r = await base.connections.resolve(ref, ns);
        return r.ok && opts.mode === 'pro' ? { ...r, conn: { ...r.conn, mode: 'pro', org: '' } } : r;
      },
    },
    read: () => Promise.resolve(obj),
    policy: (ns, name) =>
      ns === 'team' && name === 'plan'
        ? policy
        : ns === 'team' && name === 'quota-only'
          ? quotaOnly
          : undefined,
    certificateSecret: (ns, name) => (ns === 'team' && name === 'client-tls' ? opts.tls?.current : undefined),
    certificateInUse: () => false,
    api: (ref) => (ref.namespace === 'team' && ref.name === 'orders' ? ordersApi : undefined),
    // The HTTPRoute team/shop is served by the generated API team/orders (route-rights.ts).
    routeApis: (route) => (route === 'team/shop' ? [ordersApi] : []),
    secret: () =>
      secretValue === undefined ? undefined : { value: secretValue, version: `v${String(version)}` },
    writeSecret: (_o, name, dataKey, value) => {
      secretWrites.push(`${name}/${dataKey}`);
      secretValue = value;
      version++;
      return Promise.resolve(`v${String(version)}`);
    },
  };
  const lastStatus = (): ApiKeyStatus => base.objects.statuses.at(-1) as ApiKeyStatus;
  return { gw, deps, obj, secretWrites, lastStatus, secret: () => secretValue };
}

test('no Secret named: a value is generated into the Secret and created by its hash', async () => {
  const s = setup({ policies: ['plan'] });
  await reconcileApiKey('team/k', s.deps);
  const value = s.secret() ?? '';
  assert.equal(value.length, 48);
  assert.deepEqual(s.secretWrites, ['k/key']);
  assert.deepEqual(s.gw.keyWrites, [`create ${keyHashOf(value)}`], 'a new key: its counters start');
  assert.deepEqual(s.gw.held.get(keyHashOf(value))?.apply_policies, ['pol-1']);
  assert.equal(s.gw.held.get(keyHashOf(value))?.counter_id, 'apikey-u1');
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  assert.equal(s.lastStatus().keyHash, keyHashOf(value));
  assert.doesNotMatch(JSON.stringify(s.lastStatus()), new RegExp(value), 'the value is not in the status');
});

test('a named Secret that does not exist: SecretNotFound, nothing generated', async () => {
  const s = setup({ secretRef: { name: 'creds' } });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), {
    status: 'False',
    reason: 'SecretNotFound',
    message: /team\/creds does not exist/,
  });
  assert.deepEqual(s.secretWrites, []);
  assert.deepEqual(s.gw.keyWrites, []);
});

test('a policy not created yet: PolicyNotFound', async () => {
  const s = setup({ policies: ['later'] }, { secret: 'tok-1' });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'False', reason: 'PolicyNotFound', message: /team\/later/ });
});

test('mode pro: created in the dashboard by value, then kept by hash; an empty org_id is not drift', async () => {
  const s = setup({ policies: ['plan'] }, { secret: 'tok-1', mode: 'pro' });
  await reconcileApiKey('team/k', s.deps);
  const h = keyHashOf('tok-1');
  assert.deepEqual(s.gw.keyWrites, [`create ${h}`]);
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  assert.equal(s.lastStatus().keyHash, h);
  // The dashboard files the key under its caller's organisation: read back with it.
  const held = s.gw.held.get(h);
  assert.ok(held);
  s.gw.held.set(h, { ...held, org_id: 'org-of-the-caller' });
  s.obj.status = s.lastStatus();
  await reconcileApiKey('team/k', s.deps);
  assert.deepEqual(s.gw.keyWrites, [`create ${h}`], 'nothing written again');
  // A field changed in the dashboard is drift: reverted.
  s.gw.held.set(h, { ...held, org_id: 'org-of-the-caller', alias: 'changed by hand' });
  await reconcileApiKey('team/k', s.deps);
  assert.deepEqual(s.gw.keyWrites, [`create ${h}`, `update ${h}`]);
  assert.equal(s.gw.held.get(h)?.alias, '');
});

test('a new value with an overlap: the old hash is kept until the overlap ends, and the key queued then', async () => {
  const old = keyHashOf('tok-old');
  const s = setup(
    { rotation: { overlapSeconds: 30 } },
    { secret: 'tok-new', status: { keyHash: old, latestCRDSpecHash: 'x' } },
  );
  s.gw.held.set(old, {});
  const out = await reconcileApiKey('team/k', s.deps);
  assert.deepEqual(s.gw.keyWrites, [`create ${keyHashOf('tok-new')} (counters kept)`, `update ${old}`]);
  assert.deepEqual(out, { requeueAfterMs: 30_000 });
  // One allowance for both values: the same counter_id, the ApiKey's.
  assert.equal(s.gw.held.get(old)?.counter_id, 'apikey-u1');
  assert.equal(s.gw.held.get(keyHashOf('tok-new'))?.counter_id, 'apikey-u1');
  assert.deepEqual(s.lastStatus().rotatedFrom, {
    keyHash: old,
    until: new Date(NOW.getTime() + 30_000).toISOString().replace(/\.\d+Z$/, 'Z'),
  });
});

test('the overlap over: the old hash is deleted', async () => {
  const old = keyHashOf('tok-old');
  const s = setup(
    {},
    {
      secret: 'tok-new',
      status: { keyHash: keyHashOf('tok-new'), rotatedFrom: { keyHash: old, until: '2025-06-01T11:59:00Z' } },
    },
  );
  s.gw.held.set(old, {});
  const out = await reconcileApiKey('team/k', s.deps);
  assert.ok(s.gw.keyWrites.includes(`delete ${old}`));
  assert.deepEqual(out, {});
  assert.equal(s.lastStatus().rotatedFrom, undefined);
});

test('a second reconcile that reads a stale status does not rotate twice (the written status is remembered)', async () => {
  const s = setup({ rotate: 'r1' }, { secret: 'tok-old', status: { keyHash: keyHashOf('tok-old') } });
  s.gw.held.set(keyHashOf('tok-old'), {});
  const memory = new Map<string, ApiKeyStatus>();
  const deps: ApiKeyDeps = {
    ...s.deps,
    written: (uid) => (uid === undefined ? undefined : memory.get(uid)),
    objects: {
      ...s.deps.objects,
      patchStatus: async (o, st) => {
        memory.set(o.metadata.uid ?? '', st);
        return s.deps.objects.patchStatus(o, st);
      },
    },
  };
  await reconcileApiKey('team/k', deps);
  await reconcileApiKey('team/k', deps);
  assert.deepEqual(s.secretWrites, ['k/key'], 'one new value');
  const value = s.secret() ?? '';
  assert.equal(s.lastStatus().keyHash, keyHashOf(value));
  assert.deepEqual([...s.gw.held.keys()], [keyHashOf(value)], 'the gateway holds the new value only');
});

test('accessRights: each API resolved to its ID, in the SecurityPolicy form, beside a quota-only policy', async () => {
  const s = setup(
    {
      policies: ['quota-only'],
      accessRights: [{ name: 'orders', allowed_urls: [{ url: '/get(.*)', methods: ['GET'] }] }],
    },
    { secret: 'tok-1' },
  );
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  assert.deepEqual(s.gw.held.get(keyHashOf('tok-1'))?.access_rights, {
    'api-orders': {
      api_id: 'api-orders',
      versions: ['Default'],
      allowed_urls: [{ url: '/get(.*)', methods: ['GET'] }],
    },
  });
  assert.deepEqual(s.lastStatus().apiIds, ['api-orders']);
});

test('accessRights naming an HTTPRoute: the rights, limit included, on the API generated for it', async () => {
  const s = setup(
    {
      policies: ['quota-only'],
      accessRights: [{ kind: 'HTTPRoute', name: 'shop', limit: { quota_max: 2, quota_renewal_rate: 60 } }],
    },
    { secret: 'tok-1' },
  );
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  const right = s.gw.held.get(keyHashOf('tok-1'))?.access_rights?.['api-orders'];
  assert.deepEqual(right?.versions, ['Default']);
  assert.equal(right.limit?.quota_max, 2);
  assert.deepEqual(s.lastStatus().apiIds, ['api-orders']);
});

test('accessRights naming an HTTPRoute no generated API serves: ApiNotFound naming it, nothing written', async () => {
  const s = setup({ accessRights: [{ kind: 'HTTPRoute', name: 'later' }] }, { secret: 'tok-1' });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), {
    status: 'False',
    reason: 'ApiNotFound',
    message: /spec\.accessRights names HTTPRoute team\/later, which no generated ApiDefinition serves yet/,
  });
  assert.deepEqual(s.gw.keyWrites, []);
});

test('accessRights naming an API not created yet: ApiNotFound naming it, nothing written', async () => {
  const s = setup({ accessRights: [{ name: 'later', kind: 'SvcOasApiDefinition' }] }, { secret: 'tok-1' });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), {
    status: 'False',
    reason: 'ApiNotFound',
    message: /spec\.accessRights names SvcOasApiDefinition team\/later, which does not exist yet/,
  });
  assert.deepEqual(s.gw.keyWrites, []);
});

test('accessRights with a policy that grants access rights: not Ready, naming the policy', async () => {
  const s = setup({ policies: ['plan'], accessRights: [{ name: 'orders' }] }, { secret: 'tok-1' });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), {
    status: 'False',
    reason: 'AccessRightsOverridden',
    message: /SecurityPolicy team\/plan grants access rights/,
  });
  assert.deepEqual(s.gw.keyWrites, []);
});

test('certificate key: its Secret missing is SecretNotFound naming spec.certificateSecretRef; nothing written', async () => {
  const s = setup(
    { type: 'certificate', certificateSecretRef: 'client-tls' },
    { tls: { current: undefined } },
  );
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), {
    status: 'False',
    reason: 'SecretNotFound',
    message: /spec\.certificateSecretRef: Secret team\/client-tls does not exist yet/,
  });
  assert.deepEqual([...s.gw.writes, ...s.gw.keyWrites], []);
  assert.deepEqual(s.secretWrites, [], 'no token Secret is generated for a certificate key');
});

test('certificate key: the certificate alone uploaded, the key bound to it; a new certificate re-binds and the old goes', async () => {
  const first = await clientTls('client-1');
  const tls = { current: first.secret as SecretContent | undefined };
  const s = setup({ type: 'certificate', certificateSecretRef: 'client-tls', policies: ['plan'] }, { tls });
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  assert.doesNotMatch(s.gw.certs.get(first.id) ?? '', /PRIVATE KEY/, 'tls.key stays in the cluster');
  assert.match(s.gw.certs.get(first.id) ?? '', /BEGIN CERTIFICATE/);
  assert.deepEqual(s.gw.keyWrites, [`create ${first.keyHash}`]);
  assert.equal(s.gw.held.get(first.keyHash)?.certificate, first.id);
  assert.equal(s.lastStatus().certificateId, first.id);
  assert.equal(s.lastStatus().keyHash, first.keyHash);
  assert.deepEqual(s.secretWrites, []);

  const second = await clientTls('client-2');
  tls.current = second.secret;
  s.obj.status = s.lastStatus();
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'True', reason: 'Synced' });
  assert.deepEqual(s.gw.keyWrites.slice(1), [
    `create ${second.keyHash} (counters kept)`,
    `delete ${first.keyHash}`,
  ]);
  assert.ok(s.gw.certs.has(second.id));
  assert.ok(!s.gw.certs.has(first.id), 'the certificate no longer bound is deleted');
  assert.equal(s.lastStatus().certificateId, second.id);
});

test('certificate key in mode pro: NotSupportedInPro naming the dashboard, nothing written', async () => {
  const t = await clientTls('client-pro');
  const s = setup(
    { type: 'certificate', certificateSecretRef: 'client-tls' },
    { mode: 'pro', tls: { current: t.secret } },
  );
  await reconcileApiKey('team/k', s.deps);
  assertReady(s.lastStatus(), { status: 'False', reason: 'NotSupportedInPro', message: /dynamic mTLS/ });
  assert.deepEqual([...s.gw.writes, ...s.gw.keyWrites], []);
});
