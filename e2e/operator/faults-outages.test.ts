/**
 * Faults under a burst of changes (issue 13), what the operator depends on going away: the
 * gateway down, the API server and etcd restarted, the gateway's Redis restarted empty. Real
 * processes throughout: etcd and kube-apiserver from the harness, gateway and operator processes,
 * an echo upstream, redis-server. Each case has its own namespace, gateway, operator and lease
 * namespace, so the cases share only the control plane; each asserts the final state of every
 * object of its burst (faults-helpers.ts). The operator's own faults: faults-operator.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, startRedisOn, type TestRedis } from '../../gateway/testing/redis-server.ts';
import { waitFor } from '../harness/processes.ts';
import {
  afterCase,
  apiName,
  apiYaml,
  applyAll,
  assertApis,
  assertBurstConverged,
  BURST,
  CASE_TIMEOUT_MS,
  controlPlane,
  gateway,
  heldIds,
  list,
  startCase,
  operator,
  policyYaml,
  range,
  tracked,
  useFaultsCluster,
  waitConverged,
  waitHeld,
} from './faults-helpers.ts';
import { readyOf } from './helpers.ts';

/** Objects in the gateway-down burst: the 500. */
const BURST_GATEWAY_DOWN = 500;
/** How long the gateway stays down (the issue's ~20 s; the operator's per-key backoff is 0.5 s doubling). */
const GATEWAY_DOWN_MS = 20_000;

useFaultsCluster();

test(
  'the gateway down during a burst: every object converges, nothing is pushed twice, statuses say GatewayUnavailable meanwhile',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const n = BURST_GATEWAY_DOWN;
    const started = await startCase('gateway-down', n);
    const { where, ns, versions } = started;
    let { gw } = started;
    const op = await operator('gateway-down', gw, where);

    // The first half is created; once some of it is in the gateway, the gateway goes.
    await applyAll(range(0, n / 2).map((i) => apiYaml(ns, i)));
    await waitHeld(gw, n / 10);
    const { port } = gw;
    const down = Date.now();
    await gw.stop();

    // While it is down: the second half is created and a quarter of the first updated.
    await applyAll([
      ...range(n / 2, n).map((i) => apiYaml(ns, i)),
      ...range(0, n / 4).map((i) => apiYaml(ns, i, 2)),
    ]);
    for (const i of range(0, n / 4)) versions.set(i, 2);
    const appliedMs = Date.now() - down;
    // Sampled until the gateway has been down GATEWAY_DOWN_MS, and at least once after the
    // apply: on a loaded machine the apply alone can take the whole 20 s (24 s seen with both
    // cores busy), and a `while` that then sampled nothing failed with "0 objects" though the
    // operator had reported GatewayUnavailable within a second of the stop.
    const unavailable = new Set<string>();
    let samples = 0;
    do {
      samples++;
      for (const it of await list('apidefinition', ns)) {
        const ready = readyOf(it.status ?? {});
        if (ready?.status === 'False' && ready.reason === 'GatewayUnavailable')
          unavailable.add(it.metadata.name);
      }
      if (Date.now() - down < GATEWAY_DOWN_MS) await new Promise((r) => setTimeout(r, 1000));
    } while (Date.now() - down < GATEWAY_DOWN_MS);
    assert.ok(
      unavailable.size > 0,
      `some statuses said Ready=False, GatewayUnavailable while the gateway was down (${String(samples)} ` +
        `samples; the apply took ${String(appliedMs)} ms after the stop; the operator's log: ${op.logFile})`,
    );

    // The gateway comes back on the same port, with the same data.
    gw = await gateway('gateway-down', undefined, port);
    const back = Date.now();
    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    const convergedMs = Date.now() - back;
    await assertApis(gw, ns, versions);
    process.stderr.write(
      `faults: gateway down ${GATEWAY_DOWN_MS} ms (applied after ${String(appliedMs)} ms), ` +
        `${unavailable.size}/${n} reported GatewayUnavailable; ` +
        `converged ${convergedMs} ms after it came back\n`,
    );
  },
);

test(
  'the API server and etcd restarted during a burst: informers recover, nothing is missed',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const n = BURST;
    const { where, ns, gw, versions } = await startCase('apiserver', n);
    const alive = tracked(await operator('apiserver', gw, where));

    await applyAll(range(0, n / 2).map((i) => apiYaml(ns, i)));
    await waitHeld(gw, n / 10);
    // Mid-burst: the operator's watches break and its status writes fail until it is back. The
    // outage (stop, 1 s, start until ready: ~6-11 s on 2 cores) stays under the lease duration:
    // a leader that cannot renew its lease for that long exits, by design.
    const restarted = Date.now();
    await controlPlane().restart({ downMs: 1000 });
    const outageMs = Date.now() - restarted;
    // After the restart: the second half, and updates of a quarter, must reach the new watches.
    await applyAll([
      ...range(n / 2, n).map((i) => apiYaml(ns, i)),
      ...range(0, n / 4).map((i) => apiYaml(ns, i, 2)),
    ]);
    for (const i of range(0, n / 4)) versions.set(i, 2);

    await assertBurstConverged(gw, ns, versions);
    assert.ok(alive(), 'the operator rode out the restart (it did not exit)');
    process.stderr.write(`faults: control plane down for ${outageMs} ms (stop, 1 s, start until ready)\n`);
  },
);

test(
  "the gateway's Redis restarted empty: the next resync restores every API and policy",
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const n = BURST / 2;
    const policies = range(0, n / 5);
    let redis: TestRedis = await startRedis();
    afterCase(() => redis.stop());
    const { where, ns, gw, versions } = await startCase('redis', n, { SVC_GW_STORE: redis.url });
    await operator('redis', gw, where, { SVC_RESYNC_PERIOD: '5s' });

    await applyAll([...range(0, n).map((i) => apiYaml(ns, i)), ...policies.map((i) => policyYaml(ns, i))]);
    await assertBurstConverged(gw, ns, versions, policies);

    // Redis restarts with nothing (no persistence): the gateway's store is empty.
    await redis.stop();
    redis = await startRedisOn(redis.port);
    const wiped = Date.now();
    await waitFor(
      'the gateway sees the empty store',
      async () => (await heldIds(gw, 'apis')).length < n,
      10_000,
    );

    await waitFor(
      'every API and policy back in the gateway',
      async () =>
        (await heldIds(gw, 'apis')).length === n &&
        (await heldIds(gw, 'policies')).length === policies.length,
      30_000,
      250,
    );
    const restoredMs = Date.now() - wiped;
    await assertBurstConverged(gw, ns, versions, policies, { recreated: true });
    process.stderr.write(`faults: store restored ${restoredMs} ms after Redis restarted empty\n`);
  },
);
