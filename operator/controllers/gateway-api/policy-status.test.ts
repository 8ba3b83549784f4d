import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../lib/log.ts';
import { GATEWAY_CONTROLLER, type GatewayInput, type HttpRouteInput } from '../../translate/gateway-api.ts';
import { NOW } from '../testing.ts';
import { reconcileRoutePolicy, type RoutePolicyObject, type StoredAncestor } from './policy-status.ts';

const gw: GatewayInput = {
  metadata: { name: 'edge', namespace: 'apps' },
  spec: { gatewayClassName: 'svc', listeners: [{ name: 'http', port: 8080, protocol: 'HTTP' }] },
};
const shop: HttpRouteInput = {
  metadata: { name: 'shop', namespace: 'apps' },
  spec: { parentRefs: [{ name: 'edge' }], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] },
};
const policy = (
  name: string,
  created: string,
  extra: Partial<RoutePolicyObject> = {},
): RoutePolicyObject => ({
  metadata: { name, namespace: 'apps', generation: 2, creationTimestamp: created, resourceVersion: '7' },
  spec: {
    targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }],
    use_standard_auth: true,
  },
  ...extra,
});
const other: StoredAncestor = {
  ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'apps', name: 'x' },
  controllerName: 'example.com/other',
  conditions: [],
};

/** The policies of a cluster, the routes and Gateways there, and the status writes. */
function world(policies: RoutePolicyObject[], routes: HttpRouteInput[] = [shop]) {
  const writes: { name: string; ancestors: StoredAncestor[] }[] = [];
  const run = (name: string) =>
    reconcileRoutePolicy(`apps/${name}`, {
      read: (_ns, n) => policies.find((p) => p.metadata.name === n),
      context: () => ({
        gateway: (ns, n) => (ns === 'apps' && n === 'edge' ? gw : undefined),
        route: (ns, n) => routes.find((r) => r.metadata.namespace === ns && r.metadata.name === n),
        policies,
      }),
      patchAncestors: (p, ancestors) => {
        writes.push({ name: p.metadata.name, ancestors });
        p.status = { ancestors };
        return Promise.resolve();
      },
      now: () => NOW,
      log: silentLogger(),
    });
  return { writes, run };
}

const reason = (a: StoredAncestor | undefined) => a?.conditions[0]?.reason;

test('a policy on a route attached to our Gateway: Accepted for that Gateway, written once', async () => {
  const p = policy('auth', '2026-01-01T00:00:00Z');
  const w = world([p]);
  await w.run('auth');
  assert.equal(w.writes.length, 1);
  const [a] = w.writes[0]?.ancestors ?? [];
  assert.ok(a);
  assert.deepEqual(a.ancestorRef, {
    group: 'gateway.networking.k8s.io',
    kind: 'Gateway',
    namespace: 'apps',
    name: 'edge',
  });
  assert.equal(a.controllerName, GATEWAY_CONTROLLER);
  assert.deepEqual(
    { ...a.conditions[0] },
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: 'applied to the APIs serving HTTPRoute shop',
      observedGeneration: 2,
      lastTransitionTime: NOW.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  );
  await w.run('auth');
  assert.equal(w.writes.length, 1, 'nothing changed: no second write');
});

test('two policies on one route: the older is Accepted, the newer Conflicted naming it; other controllers kept', async () => {
  const older = policy('a-old', '2026-01-01T00:00:00Z');
  const newer = policy('b-new', '2026-01-02T00:00:00Z', { status: { ancestors: [other] } });
  const w = world([newer, older]);
  await w.run('a-old');
  await w.run('b-new');
  assert.equal(reason(w.writes[0]?.ancestors[0]), 'Accepted');
  const mine = w.writes[1]?.ancestors ?? [];
  assert.deepEqual(mine[0], other, "another controller's entry stays first");
  assert.equal(reason(mine[1]), 'Conflicted');
  assert.match(mine[1]?.conditions[0]?.message ?? '', /older SvcRoutePolicy, a-old/);
});

test('a route that is not there: TargetNotFound on the route itself; it appears: Accepted', async () => {
  const p = policy('auth', '2026-01-01T00:00:00Z');
  const routes: HttpRouteInput[] = [];
  const w = world([p], routes);
  await w.run('auth');
  const [a] = w.writes[0]?.ancestors ?? [];
  assert.equal(a?.ancestorRef.kind, 'HTTPRoute');
  assert.equal(reason(a), 'TargetNotFound');
  routes.push(shop);
  await w.run('auth');
  assert.equal(reason(w.writes[1]?.ancestors[0]), 'Accepted');
  assert.equal(w.writes[1]?.ancestors.length, 1, 'the TargetNotFound entry is gone');
});

test('a policy the rules refuse (no webhook): Invalid, naming the field', async () => {
  const p = policy('bad', '2026-01-01T00:00:00Z');
  p.spec = { ...p.spec, enable_ip_whitelisting: true, allowed_ips: ['10.*'] };
  const w = world([p]);
  await w.run('bad');
  const [a] = w.writes[0]?.ancestors ?? [];
  assert.equal(reason(a), 'Invalid');
  assert.match(a?.conditions[0]?.message ?? '', /^spec\.allowed_ips\[0\]: Invalid value/);
});

test('a policy deleted: nothing to do', async () => {
  const w = world([]);
  assert.deepEqual(await w.run('gone'), {});
  assert.equal(w.writes.length, 0);
});
