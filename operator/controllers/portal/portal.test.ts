import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NamespacedRef } from '../../../schemas/generated/kinds.ts';
import type { PortalCollection, PortalOps } from '../../clients/management.ts';
import type { Resolved } from '../../connections.ts';
import { PushMemory } from '../sync.ts';
import { assertReady, baseDeps, FakeGateway } from '../testing.ts';
import { reconcileAPIDescription, type APIDescriptionObject, type PolicyView } from './api-description.ts';
import { reconcilePortalAPICatalogue, type CatalogueObject } from './catalogue.ts';
import { reconcilePortalConfig, type PortalConfigObject } from './config.ts';

/** A dashboard in memory: a FakeGateway with the portal admin API. */
class FakeDashboard extends FakeGateway {
  readonly docs = new Map<string, Record<string, unknown>>();
  readonly portal: PortalOps = {
    get: (c, id) => Promise.resolve(structuredClone(this.docs.get(`${c}/${id}`))),
    put: (c, id, doc) => {
      this.docs.set(`${c}/${id}`, structuredClone(doc));
      this.writes.push(`put ${c}/${id}`);
      return Promise.resolve();
    },
    delete: (c: PortalCollection, id) => {
      this.writes.push(`delete ${c}/${id}`);
      return Promise.resolve(this.docs.delete(`${c}/${id}`));
    },
  };
}

const proConnections = (client: FakeDashboard) => ({
  resolve: (_ref: NamespacedRef | undefined, _ns: string): Promise<Resolved> =>
    Promise.resolve({
      ok: true,
      conn: { mode: 'pro', url: client.url, auth: 'x', org: 'acme', insecureSkipVerify: false },
      client,
    }),
});

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: 'default',
  uid: `uid-${name}`,
  generation: 1,
  ...extra,
});

const description = (spec: Partial<APIDescriptionObject['spec']>): APIDescriptionObject => ({
  apiVersion: 'svc.svc.io/v1alpha1',
  kind: 'APIDescription',
  metadata: meta('orders'),
  spec: { name: 'Orders', show: true, auth_type: 'authToken', policyRef: { name: 'gold' }, ...spec },
});

const readyPolicy: PolicyView = {
  metadata: { name: 'gold', namespace: 'default' },
  status: {
    pol_id: 'pol-gold',
    conditions: [{ type: 'Ready', status: 'True', reason: 'Synced', message: '', lastTransitionTime: '' }],
  },
};

test('mode ce: Ready=False NotSupportedInModeCe, said once, nothing written', async () => {
  const gw = new FakeGateway('http://gw:8080');
  const base = baseDeps<APIDescriptionObject>({ default: gw });
  let obj = description({});
  const deps = {
    ...base,
    read: () => Promise.resolve(obj),
    pushes: new PushMemory(),
    policy: () => readyPolicy,
  };
  await reconcileAPIDescription('default/orders', deps);
  assertReady(base.objects.statuses.at(-1), {
    status: 'False',
    reason: 'NotSupportedInModeCe',
    message: /developer portal is the dashboard's \(mode pro\), and http:\/\/gw:8080 is a gateway/,
  });
  assert.equal(base.events.lines.length, 1);
  // The next loop finds the status written: no status write, no event.
  obj = {
    ...obj,
    metadata: { ...obj.metadata, finalizers: ['finalizers.svc.svc.io/apidescription'] },
    status: base.objects.statuses.at(-1) as APIDescriptionObject['status'],
  };
  await reconcileAPIDescription('default/orders', deps);
  assert.equal(base.objects.statuses.length, 1);
  assert.equal(base.events.lines.length, 1);
  assert.deepEqual(gw.writes, []);
  // Deleted: never written, the finalizer just goes.
  obj = { ...obj, metadata: { ...obj.metadata, deletionTimestamp: new Date() } };
  await reconcileAPIDescription('default/orders', deps);
  assert.deepEqual(base.objects.finalizers, [
    '+finalizers.svc.svc.io/apidescription',
    '-finalizers.svc.svc.io/apidescription',
  ]);
});

test('mode pro: a product written with its policy ID; a missing policy waits, named', async () => {
  const dash = new FakeDashboard('http://dash:3000');
  const base = baseDeps<APIDescriptionObject>({});
  const held: { policy?: PolicyView } = {};
  const obj = description({
    key_approval: 'auto',
    docs: { doc_type: 'swagger_custom_url', documentation: 'https://x.example/oas.json' },
  });
  const deps = {
    ...base,
    connections: proConnections(dash),
    read: () => Promise.resolve(obj),
    pushes: new PushMemory(),
    policy: () => held.policy,
  };
  await reconcileAPIDescription('default/orders', deps);
  assertReady(base.objects.statuses.at(-1), {
    status: 'False',
    reason: 'PolicyNotFound',
    message: /spec.policyRef: SecurityPolicy default\/gold does not exist/,
  });
  held.policy = readyPolicy;
  await reconcileAPIDescription('default/orders', deps);
  const status = base.objects.statuses.at(-1) as { id: string; policyId: string };
  assertReady(status, {
    status: 'True',
    reason: 'Synced',
    message: /developer portal of http:\/\/dash:3000/,
  });
  assert.equal(status.policyId, 'pol-gold');
  assert.deepEqual(dash.docs.get(`products/${status.id}`), {
    id: status.id,
    name: 'Orders',
    show: true,
    auth_type: 'authToken',
    key_approval: 'auto',
    subscribable_events: [],
    policy_id: 'pol-gold',
    docs: { doc_type: 'oas', url: 'https://x.example/oas.json' },
  });
});

test('mode pro: a catalogue waits for its products, then lists their portal IDs', async () => {
  const dash = new FakeDashboard('http://dash:3000');
  const base = baseDeps<CatalogueObject>({});
  let product: APIDescriptionObject | undefined;
  const obj = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'PortalAPICatalogue',
    metadata: meta('public'),
    spec: { apis: [{ name: 'orders' }] },
  } as CatalogueObject;
  const deps = {
    ...base,
    connections: proConnections(dash),
    read: () => Promise.resolve(obj),
    pushes: new PushMemory(),
    description: () => product,
  };
  await reconcilePortalAPICatalogue('default/public', deps);
  assertReady(base.objects.statuses.at(-1), { status: 'False', reason: 'APIDescriptionNotFound' });
  product = { ...description({}), status: { id: 'p-1' } };
  await reconcilePortalAPICatalogue('default/public', deps);
  assertReady(base.objects.statuses.at(-1), {
    status: 'False',
    reason: 'APIDescriptionNotReady',
    message: /spec.apis\[0\].name: APIDescription default\/orders is not Ready yet/,
  });
  product = { ...product, status: { id: 'p-1', conditions: readyPolicy.status?.conditions ?? [] } };
  await reconcilePortalAPICatalogue('default/public', deps);
  assertReady(base.objects.statuses.at(-1), { status: 'True', reason: 'Synced' });
  const id = (base.objects.statuses.at(-1) as { id: string }).id;
  assert.deepEqual(dash.docs.get(`catalogues/${id}`), { id, name: 'default/public', apis: ['p-1'] });
});

test('mode pro: the oldest PortalConfig of a connection is written, the other is in Conflict', async () => {
  const dash = new FakeDashboard('http://dash:3000');
  const config = (name: string, at: string, spec: PortalConfigObject['spec']): PortalConfigObject => ({
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'PortalConfig',
    metadata: meta(name, { creationTimestamp: new Date(at) }),
    spec,
  });
  const first = config('a', '2025-01-01T00:00:00Z', { disable_signup: true, developer_approval: 'auto' });
  const second = config('b', '2025-02-01T00:00:00Z', {});
  const all = [second, first];
  for (const obj of all) {
    const base = baseDeps<PortalConfigObject>({});
    await reconcilePortalConfig(`default/${obj.metadata.name}`, {
      ...base,
      connections: proConnections(dash),
      read: () => Promise.resolve(obj),
      pushes: new PushMemory(),
      configs: () => all,
    });
    if (obj === first) assertReady(base.objects.statuses.at(-1), { status: 'True', reason: 'Synced' });
    else
      assertReady(base.objects.statuses.at(-1), {
        status: 'False',
        reason: 'Conflict',
        message: /PortalConfig default\/a sets the portal of the same dashboard organisation/,
      });
  }
  assert.deepEqual(dash.docs.get('config/config'), { signup_enabled: false, developer_approval: 'auto' });
  assert.deepEqual(dash.writes, ['put config/config']);
});

test('mode pro: a product edited in the dashboard is written again; deleted, it leaves the portal', async () => {
  const dash = new FakeDashboard('http://dash:3000');
  const base = baseDeps<APIDescriptionObject>({});
  let obj = description({});
  const deps = {
    ...base,
    connections: proConnections(dash),
    read: () => Promise.resolve(obj),
    pushes: new PushMemory(),
    policy: () => readyPolicy,
  };
  await reconcileAPIDescription('default/orders', deps);
  const status = base.objects.statuses.at(-1) as APIDescriptionObject['status'] & { id: string };
  obj = {
    ...obj,
    metadata: { ...obj.metadata, finalizers: ['finalizers.svc.svc.io/apidescription'] },
    status,
  };
  // Nothing changed: nothing written again.
  await reconcileAPIDescription('default/orders', deps);
  assert.deepEqual(dash.writes, [`put products/${status.id}`]);
  dash.docs.set(`products/${status.id}`, { ...dash.docs.get(`products/${status.id}`), name: 'by hand' });
  await reconcileAPIDescription('default/orders', deps);
  assert.equal(dash.docs.get(`products/${status.id}`)?.name, 'Orders');
  assert.equal(dash.writes.length, 2);
  obj = { ...obj, metadata: { ...obj.metadata, deletionTimestamp: new Date() } };
  await reconcileAPIDescription('default/orders', deps);
  assert.equal(dash.docs.has(`products/${status.id}`), false);
  assert.deepEqual(base.objects.finalizers.at(-1), '-finalizers.svc.svc.io/apidescription');
});
