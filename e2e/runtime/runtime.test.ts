/**
 * The controller runtime (lib/k8s) against a real kube-apiserver: informers, status and
 * finalizer helpers, the manager's resync, and leader election.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { API_VERSION } from '../../schemas/common.ts';
import { silentLogger } from '../../lib/log.ts';
import { loadKubeConfig } from '../../lib/k8s/client.ts';
import { Informer, objectKey } from '../../lib/k8s/informer.ts';
import { LeaderElector } from '../../lib/k8s/leader.ts';
import { ControllerManager } from '../../lib/k8s/manager.ts';
import { SvcObjects, setCondition, type SvcObject } from '../../lib/k8s/objects.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { waitFor } from '../harness/processes.ts';

const root = join(import.meta.dirname, '..', '..');
let cp: ControlPlane;
const log = silentLogger();

before(async () => {
  cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
  for (const ns of ['rt-a', 'rt-b', 'rt-c']) await cp.kubectl(['create', 'namespace', ns]);
});
after(async () => {
  await cp.stop();
});

const policy = (ns: string, name: string, rate = 10): string => `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: ${name}, namespace: ${ns}}
spec: {name: ${name}, rate: ${rate}, per: 60}
`;

test('an informer lists, then follows adds, updates and deletes in its namespaces only', async () => {
  await cp.kubectl(['apply', '-f', '-'], { input: policy('rt-a', 'before-start') });
  const inf = new Informer<SvcObject>(
    loadKubeConfig(cp.kubeconfig),
    {
      apiVersion: API_VERSION,
      kind: 'SecurityPolicy',
      plural: 'securitypolicies',
      namespaces: ['rt-a', 'rt-b'],
    },
    log,
  );
  const events: string[] = [];
  inf.on((event, obj) => events.push(`${event} ${objectKey(obj)}`));
  await inf.start();
  assert.deepEqual(events, ['add rt-a/before-start'], 'the initial list');

  await cp.kubectl(['apply', '-f', '-'], {
    input: policy('rt-b', 'p') + '---\n' + policy('rt-c', 'unwatched'),
  });
  await cp.kubectl(['apply', '-f', '-'], { input: policy('rt-b', 'p', 20) });
  await cp.kubectl(['delete', 'securitypolicy', 'p', '-n', 'rt-b']);
  await waitFor('the delete event', () => events.includes('delete rt-b/p'));
  assert.deepEqual(events, ['add rt-a/before-start', 'add rt-b/p', 'update rt-b/p', 'delete rt-b/p']);
  assert.equal(inf.get('rt-c', 'unwatched'), undefined);
  assert.deepEqual(inf.list().map(objectKey), ['rt-a/before-start']);
  await inf.stop();
});

test('an index finds objects by what they refer to, before and after they change or go', async () => {
  const inf = new Informer<SvcObject<{ rate?: number }>>(
    loadKubeConfig(cp.kubeconfig),
    { apiVersion: API_VERSION, kind: 'SecurityPolicy', plural: 'securitypolicies', namespaces: ['rt-c'] },
    log,
  );
  await cp.kubectl(['apply', '-f', '-'], {
    input: policy('rt-c', 'ix-1', 11) + '---\n' + policy('rt-c', 'ix-2', 11),
  });
  await inf.start();
  // Indexed by rate: added after the first list, it indexes what is cached already.
  inf.addIndex('rate', (p) => [String(p.spec.rate)]);
  const names = (rate: number): string[] => inf.byIndex('rate', String(rate)).map(objectKey).sort();
  assert.deepEqual(names(11), ['rt-c/ix-1', 'rt-c/ix-2']);
  await cp.kubectl(['apply', '-f', '-'], { input: policy('rt-c', 'ix-2', 21) });
  await waitFor('ix-2 under its new rate', () => names(21).length === 1);
  assert.deepEqual(names(11), ['rt-c/ix-1'], 'the old value no longer finds it');
  await cp.kubectl(['delete', 'securitypolicy', 'ix-1', '-n', 'rt-c']);
  await waitFor('ix-1 gone from the index', () => names(11).length === 0);
  assert.deepEqual(names(21), ['rt-c/ix-2']);
  assert.throws(() => inf.byIndex('missing', 'x'), /no index missing/);
  await inf.stop();
});

test('status is written only when it changes; finalizers are added and removed once', async () => {
  await cp.kubectl(['apply', '-f', '-'], { input: policy('rt-a', 'statusy') });
  const objs = new SvcObjects<SvcObject<unknown, Record<string, unknown>>>(
    loadKubeConfig(cp.kubeconfig),
    'securitypolicies',
  );
  let obj = await objs.get('rt-a', 'statusy');
  assert.ok(obj);
  obj = await objs.ensureFinalizer(obj, 'finalizers.svc.svc.io/test');
  assert.deepEqual(obj.metadata.finalizers, ['finalizers.svc.svc.io/test']);
  const again = await objs.ensureFinalizer(obj, 'finalizers.svc.svc.io/test');
  assert.equal(again.metadata.resourceVersion, obj.metadata.resourceVersion, 'no write when present');

  const now = new Date('2026-01-01T00:00:00Z');
  const st = {
    pol_id: 'x',
    conditions: setCondition([], { type: 'Ready', status: 'True', reason: 'R', message: 'm' }, now),
  };
  assert.equal(await objs.patchStatus(obj, st), true);
  obj = await objs.get('rt-a', 'statusy');
  assert.ok(obj);
  assert.deepEqual(obj.status, st);
  assert.equal(await objs.patchStatus(obj, structuredClone(st)), false, 'equal status: no write');
  const later = setCondition(
    st.conditions,
    { type: 'Ready', status: 'True', reason: 'R', message: 'm' },
    new Date(),
  );
  assert.equal(
    later[0]?.lastTransitionTime,
    st.conditions[0]?.lastTransitionTime,
    'same status keeps its time',
  );

  await objs.removeFinalizer(obj, 'finalizers.svc.svc.io/test');
  await cp.kubectl(['delete', 'securitypolicy', 'statusy', '-n', 'rt-a', '--timeout=20s']);
});

test('the manager reconciles every object at start and again at each resync', async () => {
  await cp.kubectl(['apply', '-f', '-'], { input: policy('rt-b', 'r1') + '---\n' + policy('rt-b', 'r2') });
  const seen = new Map<string, number>();
  const mgr = new ControllerManager({
    kc: loadKubeConfig(cp.kubeconfig),
    log,
    registry: new Registry(),
    resyncPeriodMs: 300,
  });
  mgr.add({
    name: 'counter',
    watch: {
      apiVersion: API_VERSION,
      kind: 'SecurityPolicy',
      plural: 'securitypolicies',
      namespaces: ['rt-b'],
    },
    reconcile: (key) => {
      seen.set(key, (seen.get(key) ?? 0) + 1);
      return Promise.resolve({});
    },
  });
  await mgr.start();
  await waitFor(
    'three reconciles of each object',
    () => (seen.get('rt-b/r1') ?? 0) >= 3 && (seen.get('rt-b/r2') ?? 0) >= 3,
  );
  await mgr.stop();
});

test('leader election: one of two replicas leads; on release the other takes over', async () => {
  const kc = loadKubeConfig(cp.kubeconfig);
  const opts = { namespace: 'rt-c', name: 'svc-operator-leader', leaseDurationMs: 3000, retryPeriodMs: 200 };
  const a = new LeaderElector(kc, { ...opts, identity: 'a' }, log);
  const b = new LeaderElector(kc, { ...opts, identity: 'b' }, log);
  const lost: string[] = [];
  const start = Date.now();
  await a.acquire(() => lost.push('a'));
  let bLeads = false;
  const bDone = b.acquire(() => lost.push('b')).then(() => (bLeads = true));
  /** A field of the Lease, as kubectl prints it. */
  const leaseField = async (field: 'renewTime' | 'holderIdentity'): Promise<string> =>
    (await cp.kubectl(['get', 'lease', opts.name, '-n', opts.namespace, '-o', `jsonpath={.spec.${field}}`]))
      .stdout;
  // a keeps renewing past its lease duration while b waits.
  const renewTime = (): Promise<string> => leaseField('renewTime');
  const first = await renewTime();
  await waitFor('a to renew its lease', async () => (await renewTime()) !== first);
  await waitFor('a lease duration to pass', () => Date.now() - start > opts.leaseDurationMs + 500, 10_000);
  assert.equal(a.leading, true);
  assert.equal(bLeads, false, 'b waits while a renews');
  assert.equal(await leaseField('holderIdentity'), 'a');

  await a.release();
  await bDone;
  assert.equal(b.leading, true);
  assert.equal(await leaseField('holderIdentity'), 'b');
  await b.release();
  assert.deepEqual(lost, []);
});

test('an informer whose watch breaks (its CRD removed and re-installed) restarts and catches up', async () => {
  const inf = new Informer<SvcObject>(
    loadKubeConfig(cp.kubeconfig),
    { apiVersion: API_VERSION, kind: 'ApiDefinition', plural: 'apidefinitions', namespaces: [] },
    log,
    { baseMs: 100, maxMs: 500 },
  );
  const events: string[] = [];
  inf.on((event, obj) => events.push(`${event} ${objectKey(obj)}`));
  await inf.start();
  const crd = join(root, 'charts', 'svc-operator', 'crds', 'svc.svc.io_apidefinitions.yaml');
  await cp.kubectl(['delete', '-f', crd, '--wait=true']);
  await cp.kubectl(['apply', '--server-side', '-f', crd]);
  await cp.kubectl([
    'wait',
    '--for',
    'condition=Established',
    'crd/apidefinitions.svc.svc.io',
    '--timeout=30s',
  ]);
  await waitFor('the object created after the break', async () => {
    const r = await cp.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: after-break, namespace: rt-a}
spec: {name: a, use_keyless: true, proxy: {listen_path: /a/, target_url: "http://u"}}
`,
      allowFailure: true,
    });
    return r.code === 0 && events.includes('add rt-a/after-break');
  });
  await inf.stop();
});
