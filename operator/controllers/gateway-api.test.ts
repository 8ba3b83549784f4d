import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { GATEWAY_CONTROLLER, GATEWAY_LABEL, type RoutePolicyInput } from '../translate/gateway-api.ts';
import { reconcileGateway, reconcileGatewayClass } from './gateway-api/reconcile.ts';
import {
  GATEWAY_FINALIZER,
  type GatewayClassObject,
  type GatewayDeps,
  type GatewayObject,
  type HttpRouteObject,
  type StoredCondition,
  type StoredParentStatus,
} from './gateway-api/types.ts';
import type { ApiObject } from './objects.ts';
import { NOW } from './testing.ts';

const ours: GatewayClassObject = {
  metadata: { name: 'svc', generation: 1 },
  spec: { controllerName: GATEWAY_CONTROLLER },
};
const theirs: GatewayClassObject = { metadata: { name: 'other' }, spec: { controllerName: 'example.com/x' } };

const gateway = (className = 'svc'): GatewayObject => ({
  metadata: { name: 'edge', namespace: 'ns', generation: 3, uid: 'uid-1', resourceVersion: '1' },
  spec: { gatewayClassName: className, listeners: [{ name: 'http', port: 8080, protocol: 'HTTP' }] },
});

const shop = (parents: StoredParentStatus[] = []): HttpRouteObject => ({
  metadata: { name: 'shop', namespace: 'ns', generation: 2, resourceVersion: '5' },
  spec: { parentRefs: [{ name: 'edge' }], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] },
  status: { parents },
});

/** A cluster in memory: the Gateway, its routes, the generated APIs, and what was written. */
function world(gw: GatewayObject, routes: HttpRouteObject[], classes = [ours, theirs]) {
  const apis = new Map<string, ApiObject>();
  const writes: string[] = [];
  const state = {
    gw,
    statuses: [] as NonNullable<GatewayObject['status']>[],
    parents: new Map<string, StoredParentStatus[]>(),
  };
  const deps: GatewayDeps = {
    read: () => state.gw,
    gatewayClass: (name) => classes.find((c) => c.metadata.name === name),
    routes: () => routes,
    context: () => ({
      service: () => ({ spec: { ports: [{ port: 80 }] } }),
      endpointSlices: () => [],
      secretExists: () => false,
      namespaceLabels: () => ({}),
      grants: [],
    }),
    generated: () => [...apis.values()],
    apis: {
      create: (obj) => {
        writes.push(`create ${obj.metadata.name}`);
        apis.set(obj.metadata.name, { ...obj, metadata: { ...obj.metadata, generation: 1 } });
        return Promise.resolve(true);
      },
      replace: (obj) => {
        writes.push(`replace ${obj.metadata.name}`);
        apis.set(obj.metadata.name, obj);
        return Promise.resolve();
      },
      delete: (_ns, name) => {
        writes.push(`delete ${name}`);
        apis.delete(name);
        return Promise.resolve();
      },
    },
    writer: {
      addFinalizer: (g) => {
        writes.push('addFinalizer');
        state.gw = { ...g, metadata: { ...g.metadata, finalizers: [GATEWAY_FINALIZER] } };
        return Promise.resolve(state.gw);
      },
      removeFinalizer: () => {
        writes.push('removeFinalizer');
        return Promise.resolve();
      },
      patchStatus: (_g, status) => {
        state.statuses.push(status);
        state.gw = { ...state.gw, status };
        return Promise.resolve();
      },
      patchRouteParents: (route, parents) => {
        state.parents.set(route.metadata.name, parents);
        route.status = { parents };
        return Promise.resolve();
      },
      patchClassStatus: (cls, conditions) => {
        writes.push(`class ${cls.metadata.name} ${conditions.map((c) => `${c.type}=${c.status}`).join(',')}`);
        return Promise.resolve();
      },
    },
    addresses: () => [{ type: 'IPAddress', value: '10.0.0.1' }],
    now: () => NOW,
    log: silentLogger(),
  };
  return { deps, apis, writes, state };
}

const cond = (list: readonly StoredCondition[] | undefined, type: string) =>
  list?.find((c) => c.type === type);

test("a GatewayClass of ours is Accepted; another controller's is not touched", async () => {
  const { deps, writes } = world(gateway(), []);
  await reconcileGatewayClass(ours, deps);
  await reconcileGatewayClass(theirs, deps);
  assert.deepEqual(writes, ['class svc Accepted=True']);
});

test('a Gateway: finalizer, generated APIs labelled and owned, Programmed only once they are', async () => {
  const route = shop();
  const { deps, apis, writes, state } = world(gateway(), [route]);
  const first = await reconcileGateway('ns/edge', deps);
  assert.equal(writes[0], 'addFinalizer');
  assert.equal(apis.size, 1);
  const [api] = apis.values();
  assert.ok(api);
  assert.equal(api.metadata.labels?.[GATEWAY_LABEL], 'edge');
  assert.equal(api.metadata.ownerReferences?.[0]?.uid, 'uid-1');
  const status = state.gw.status;
  assert.ok(status);
  assert.equal(cond(status.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(status.conditions, 'Programmed')?.reason, 'Pending');
  assert.equal(cond(status.conditions, 'Programmed')?.observedGeneration, 3);
  assert.equal(status.listeners?.[0]?.attachedRoutes, 1);
  assert.deepEqual(status.addresses, [{ type: 'IPAddress', value: '10.0.0.1' }]);
  assert.ok(first.requeueAfterMs !== undefined, 'looked at again while pending');
  const [parent] = state.parents.get('shop') ?? [];
  assert.ok(parent);
  assert.equal(parent.controllerName, GATEWAY_CONTROLLER);
  assert.equal(cond(parent.conditions, 'Accepted')?.status, 'True');
  assert.equal(cond(parent.conditions, 'Accepted')?.observedGeneration, 2);

  // The ApiDefinition controller reports it served by every gateway.
  api.status = {
    conditions: [
      {
        type: 'Programmed',
        status: 'True',
        reason: 'Programmed',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: NOW.toISOString(),
      },
    ],
  };
  const writesBefore = writes.length;
  assert.deepEqual(await reconcileGateway('ns/edge', deps), {});
  assert.equal(writes.length, writesBefore, 'nothing written to the APIs again');
  assert.equal(cond(state.gw.status?.conditions, 'Programmed')?.status, 'True');
  assert.equal(cond(state.gw.status?.listeners?.[0]?.conditions, 'Programmed')?.status, 'True');
  // Nothing changed: no status write.
  const statusWrites = state.statuses.length;
  await reconcileGateway('ns/edge', deps);
  assert.equal(state.statuses.length, statusWrites);
});

test("a route's parent statuses of other controllers and Gateways are kept", async () => {
  const foreign: StoredParentStatus = {
    parentRef: { name: 'edge' },
    controllerName: 'example.com/x',
    conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '' }],
  };
  const route = shop([foreign]);
  const { deps, state } = world(gateway(), [route]);
  await reconcileGateway('ns/edge', deps);
  const parents = state.parents.get('shop') ?? [];
  assert.deepEqual(
    parents.map((p) => p.controllerName),
    ['example.com/x', GATEWAY_CONTROLLER],
  );
});

test('a Gateway moved to another class (or deleted) has its APIs deleted and its finalizer removed', async () => {
  const { deps, apis, writes, state } = world(gateway(), [shop()]);
  await reconcileGateway('ns/edge', deps);
  assert.equal(apis.size, 1);
  state.gw = { ...state.gw, spec: { ...state.gw.spec, gatewayClassName: 'other' } };
  await reconcileGateway('ns/edge', deps);
  assert.equal(apis.size, 0);
  assert.equal(writes.at(-1), 'removeFinalizer');
});

test('a Gateway of another class without our finalizer is left alone', async () => {
  const { deps, writes } = world(gateway('other'), [shop()]);
  await reconcileGateway('ns/edge', deps);
  assert.deepEqual(writes, []);
});

test('a route detached from the Gateway loses our parent status for it; a released Gateway takes its parents away', async () => {
  const stale: StoredParentStatus = {
    parentRef: { name: 'edge' },
    controllerName: GATEWAY_CONTROLLER,
    conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '' }],
  };
  const foreign: StoredParentStatus = { ...stale, controllerName: 'example.com/x' };
  const detached: HttpRouteObject = {
    ...shop([foreign, stale]),
    spec: { parentRefs: [{ name: 'elsewhere' }], rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] },
  };
  const { deps, state } = world(gateway(), [detached]);
  await reconcileGateway('ns/edge', deps);
  assert.deepEqual(
    (state.parents.get('shop') ?? []).map((p) => p.controllerName),
    ['example.com/x'],
    'ours for edge removed, the other controller kept',
  );
  assert.equal(state.gw.status?.listeners?.[0]?.attachedRoutes, 0);

  const attached = shop();
  const w = world(gateway(), [attached]);
  await reconcileGateway('ns/edge', w.deps);
  assert.equal(w.state.parents.get('shop')?.length, 1);
  w.state.gw = { ...w.state.gw, spec: { ...w.state.gw.spec, gatewayClassName: 'other' } };
  await reconcileGateway('ns/edge', w.deps);
  assert.deepEqual(w.state.parents.get('shop'), []);
  assert.equal(w.writes.at(-1), 'removeFinalizer');
});

test('a generated API the gateway refused: the Gateway and its listener are Programmed=False Invalid with the reason, not Pending', async () => {
  const gw = gateway();
  gw.spec.listeners = [{ name: 'low', port: 81, protocol: 'HTTP' }];
  const { deps, apis, state } = world(gw, [shop()]);
  await reconcileGateway('ns/edge', deps);
  const [api] = apis.values();
  assert.ok(api);
  assert.equal(api.spec.listen_port, 81, 'served on the listener port');
  const refusal =
    'listen_port: port 81 needs a privilege this gateway does not have (it runs as a user without CAP_NET_BIND_SERVICE): choose a listen_port from 1024';
  api.status = {
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'GatewayRejected',
        message: refusal,
        observedGeneration: 1,
        lastTransitionTime: NOW.toISOString(),
      },
    ],
  };
  await reconcileGateway('ns/edge', deps);
  const programmed = cond(state.gw.status?.conditions, 'Programmed');
  assert.ok(programmed);
  assert.equal(programmed.status, 'False');
  assert.equal(programmed.reason, 'Invalid');
  assert.ok(programmed.message.includes(refusal), programmed.message);
  const listener = cond(state.gw.status?.listeners?.[0]?.conditions, 'Programmed');
  assert.ok(listener);
  assert.equal(listener.reason, 'Invalid');
  assert.equal(listener.message, refusal);
});

test('an SvcRoutePolicy on the route: the generated API carries its settings, and loses them when it goes', async () => {
  const route = shop();
  const { deps, apis, writes } = world(gateway(), [route]);
  const policies: RoutePolicyInput[] = [
    {
      metadata: { name: 'auth', namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }],
        use_standard_auth: true,
        enable_ip_blacklisting: true,
        blacklisted_ips: ['192.0.2.1'],
        global_rate_limit: { rate: 2, per: 60 },
      },
    },
  ];
  const context = deps.context;
  deps.context = () => ({ ...context(), policies });
  await reconcileGateway('ns/edge', deps);
  const [api] = apis.values();
  assert.ok(api);
  assert.equal(api.spec.use_keyless, false);
  assert.equal(api.spec.use_standard_auth, true);
  assert.deepEqual(api.spec.blacklisted_ips, ['192.0.2.1']);
  assert.deepEqual(api.spec.global_rate_limit, { rate: 2, per: 60 });

  policies.length = 0;
  await reconcileGateway('ns/edge', deps);
  assert.ok(
    writes.some((w) => w.startsWith('replace ')),
    'the API is written again',
  );
  const [open] = apis.values();
  assert.ok(open);
  assert.equal(open.spec.use_keyless, true);
  assert.equal(open.spec.use_standard_auth, undefined);
  assert.equal(open.spec.global_rate_limit, undefined);
});
