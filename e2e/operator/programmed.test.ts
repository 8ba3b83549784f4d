/**
 * Ready means served by every gateway (issue 33, items 1 and 2): two gateways on one Redis store,
 * the operator writing to one of them. An API (a SecurityPolicy) is Ready and Programmed only
 * once both serve (apply) its current revision, `status.gateways` listing them; with one gateway
 * killed, a change is Pending naming it, until its heartbeat is older than the gateways' `node_timeout_ms`: then it is
 * dropped (a `GatewayDropped` Warning event) and the API is Ready on the other alone. The time
 * from a change to the last gateway serving it is on the operator's `/metrics`
 * (`svc_config_convergence_seconds`). Real processes: etcd, kube-apiserver, redis-server, two
 * gateways, the operator, an echo upstream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';
import { startRedis, type TestRedis } from '../../gateway/testing/redis-server.ts';
import { applyManifest, eventsOf, readyOf, startCluster, waitForStatus, type Status } from './helpers.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const NS = 'programmed';
/** Long enough that a killed gateway is still listed when the change reaches the operator. */
const NODE_TIMEOUT_MS = 10_000;

let cp: ControlPlane;
let dir: string;
let redis: TestRedis;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let gwA: GatewayProc;
let gwB: GatewayProc;
let op: OperatorProc;

before(
  async () => {
    ({ dir, cp } = await startCluster('programmed', [NS, 'svc-operator-system']));
    redis = await startRedis();
    upstream = await startEchoUpstream();
    const env = {
      SVC_GW_STORE: redis.url,
      SVC_GW_REDIS_KEY_PREFIX: 'programmed:',
      SVC_GW_NODE_HEARTBEAT_INTERVAL_MS: '200',
      SVC_GW_NODE_TIMEOUT_MS: String(NODE_TIMEOUT_MS),
    };
    const common = { secret: 'programmed-secret', logDir: dir, env };
    gwA = await startGateway({ name: 'gateway-a', dataDir: join(dir, 'a'), ...common });
    gwB = await startGateway({ name: 'gateway-b', dataDir: join(dir, 'b'), ...common });
    op = await startOperator({
      name: 'programmed-operator',
      gateway: gwA,
      kubeconfig: cp.kubeconfig,
      logDir: dir,
      env: { WATCH_NAMESPACE: NS },
    });
  },
  { timeout: 120_000 },
);

after(async () => {
  await stopAll(op, gwA, gwB, upstream, redis, cp);
});

function apiYaml(version: number): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: orders, namespace: ${NS}}
spec:
  name: orders-v${String(version)}
  use_keyless: true
  proxy: {listen_path: /orders/, target_url: "${upstream.url}/v${String(version)}", strip_listen_path: true}
`;
}

interface Gateways {
  name: string;
  revision?: string;
  appliedAt?: string;
}

function policyYaml(rate: number): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: orders-plan, namespace: ${NS}}
spec:
  name: orders-plan
  rate: ${String(rate)}
  per: 60
  access_rights_array: [{name: orders}]
`;
}

const target = { kind: 'apidefinitions', ns: NS, name: 'orders' };
const policy = { kind: 'securitypolicies', ns: NS, name: 'orders-plan' };
const gatewaysOf = (st: Status): Gateways[] => (st.gateways as Gateways[] | undefined) ?? [];
const conditionOf = (
  st: Status,
  type: string,
): { status?: string; reason?: string; message?: string } | undefined =>
  (st.conditions as { type: string; status: string; reason: string; message: string }[] | undefined)?.find(
    (c) => c.type === type,
  );
/** The gateway's name in the registry ends with its port. */
const nameOf = (gws: Gateways[], gw: GatewayProc): string | undefined =>
  gws.find((g) => g.name.endsWith(`:${String(gw.port)}`))?.name;

test('Ready and Programmed once both gateways serve the revision; status.gateways lists them', async () => {
  await applyManifest(cp, apiYaml(1));
  const st = await waitForStatus(cp, target, 'Ready with two gateways', (s) => {
    return readyOf(s)?.status === 'True' && gatewaysOf(s).length === 2;
  });
  const revision = st.latestSvcSpecHash as string;
  for (const g of gatewaysOf(st)) {
    assert.equal(g.revision, revision, `${g.name} serves the current revision`);
    assert.ok(g.appliedAt !== undefined && !Number.isNaN(Date.parse(g.appliedAt)), g.name);
  }
  assert.ok(nameOf(gatewaysOf(st), gwA) !== undefined && nameOf(gatewaysOf(st), gwB) !== undefined);
  assert.equal(conditionOf(st, 'Programmed')?.status, 'True');
  // Ready means served: both gateways answer from the upstream.
  for (const gw of [gwA, gwB]) {
    const r = await httpRequest(`${gw.url}/orders/x`);
    assert.equal(r.status, 200, `${gw.url}: ${r.body}`);
  }
  const metrics = (await httpRequest(`${op.opsUrl}/metrics`)).body;
  const count = /^svc_config_convergence_seconds_count\{kind="ApiDefinition"\} (\d+)$/m.exec(metrics);
  assert.ok(count !== null && Number(count[1]) >= 1, 'the convergence of the push is observed');
});

test('a SecurityPolicy is Ready and Programmed once both gateways apply its revision; a change too', async () => {
  await applyManifest(cp, policyYaml(10));
  const first = await waitForStatus(cp, policy, 'Ready with two gateways', (s) => {
    return readyOf(s)?.status === 'True' && gatewaysOf(s).length === 2;
  });
  const revision = first.latestSvcSpecHash as string;
  assert.deepEqual(
    gatewaysOf(first).map((g) => g.revision),
    [revision, revision],
  );
  assert.ok(nameOf(gatewaysOf(first), gwA) !== undefined && nameOf(gatewaysOf(first), gwB) !== undefined);
  assert.equal(conditionOf(first, 'Programmed')?.status, 'True');
  assert.match(readyOf(first)?.message ?? '', /; revision [0-9a-f]{12} served by all 2 gateways: /);
  // What the gateway holds is what both apply.
  const held = await httpRequest(`${gwB.url}/svc/policies/${String(first.pol_id)}`, {
    headers: { 'x-svc-authorization': 'programmed-secret' },
  });
  assert.equal(held.status, 200, held.body);
  assert.equal((JSON.parse(held.body) as { rate?: number }).rate, 10);

  await applyManifest(cp, policyYaml(20));
  const second = await waitForStatus(cp, policy, 'the change applied by both', (s) => {
    const gws = gatewaysOf(s);
    return (
      readyOf(s)?.status === 'True' &&
      s.latestSvcSpecHash !== revision &&
      gws.length === 2 &&
      gws.every((g) => g.revision === s.latestSvcSpecHash)
    );
  });
  assert.equal(conditionOf(second, 'Programmed')?.status, 'True');
  const metrics = (await httpRequest(`${op.opsUrl}/metrics`)).body;
  const count = /^svc_config_convergence_seconds_count\{kind="SecurityPolicy"\} (\d+)$/m.exec(metrics);
  assert.ok(count !== null && Number(count[1]) >= 1, 'the convergence of the policy is observed');
});

test('a killed gateway keeps a change Pending, naming it, until it is dropped after the timeout: an Event, then Ready', async () => {
  const before = await waitForStatus(cp, target, 'Ready', (s) => readyOf(s)?.status === 'True');
  const killed = nameOf(gatewaysOf(before), gwB);
  assert.ok(killed !== undefined);
  process.kill(gwB.pid, 'SIGKILL');
  await gwB.exited;

  await applyManifest(cp, apiYaml(2));
  await applyManifest(cp, policyYaml(30));
  const pendingOn = (s: Status): boolean => {
    const ready = readyOf(s);
    return ready?.status === 'False' && ready.reason === 'Pending' && (ready.message ?? '').includes(killed);
  };
  const pending = await waitForStatus(cp, target, 'Pending naming the killed gateway', pendingOn);
  const policyPending = await waitForStatus(cp, policy, 'the policy Pending naming it', pendingOn);
  assert.equal(conditionOf(policyPending, 'Programmed')?.status, 'False');
  assert.equal(conditionOf(pending, 'Programmed')?.status, 'False');
  assert.equal(conditionOf(pending, 'Programmed')?.reason, 'Pending');
  assert.ok(!(readyOf(pending)?.message ?? '').includes(nameOf(gatewaysOf(pending), gwA) ?? '?'));
  // The gateway still up serves the change already.
  const r = await httpRequest(`${gwA.url}/orders/x`);
  assert.equal(r.status, 200);

  const after = await waitForStatus(
    cp,
    target,
    'Ready without the killed gateway',
    (s) => readyOf(s)?.status === 'True' && gatewaysOf(s).length === 1,
    NODE_TIMEOUT_MS + 30_000,
  );
  assert.equal(nameOf(gatewaysOf(after), gwA), gatewaysOf(after)[0]?.name);
  assert.equal(gatewaysOf(after)[0]?.revision, after.latestSvcSpecHash);
  assert.equal(conditionOf(after, 'Programmed')?.status, 'True');
  const policyAfter = await waitForStatus(
    cp,
    policy,
    'the policy Ready without the killed gateway',
    (s) => readyOf(s)?.status === 'True' && gatewaysOf(s).length === 1,
    NODE_TIMEOUT_MS + 30_000,
  );
  assert.equal(gatewaysOf(policyAfter)[0]?.revision, policyAfter.latestSvcSpecHash);
  const messages = await eventsOf(
    cp,
    NS,
    'involvedObject.name=orders,reason=GatewayDropped',
    '{.items[*].message}',
  );
  assert.match(
    messages,
    new RegExp(`gateway ${killed.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} left the registry`),
  );
});
