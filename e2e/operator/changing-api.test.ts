/**
 * An API being changed answers every request (issue 33 item 2, the guard of `make
 * bench-operator`'s probe row): two gateways on one Redis store, the operator writing to one; the
 * probed ApiDefinition's upstream moves between two live upstreams every 5 changes while the other
 * changes create, modify and delete 20 other ApiDefinitions, 4 changes at once (the moves in turn). A client sending requests to the
 * probed API on both gateways all along, keep-alive and a new connection each, gets only 2xx
 * answers, and no connection error. Real processes: etcd, kube-apiserver, redis-server, two
 * gateways of two workers each, the operator, two echo upstreams.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ControlPlane } from '../harness/control-plane.ts';
import { runChangeProbe, totals } from '../harness/change-probe.ts';
import { startCluster } from './helpers.ts';

const NS = 'changing';

let cp: ControlPlane;
let dir: string;

before(
  async () => {
    ({ dir, cp } = await startCluster('changing', [NS, 'svc-operator-system']));
  },
  { timeout: 120_000 },
);

after(async () => {
  await cp.stop();
});

test(
  '95 changes, 19 of them the probed API upstream: every answer on both gateways is 2xx',
  { timeout: 600_000 },
  async (t) => {
    const r = await runChangeProbe({
      cp,
      dir,
      namespace: NS,
      changes: 95,
      upstreamEvery: 5,
      others: 20,
      appliers: 4,
    });
    const tot = totals(r);
    const report = JSON.stringify(r.counts);
    t.diagnostic(
      `${String(tot.requests)} requests, ${String(r.changes)} changes in ${String(r.changesMs)} ms: ${report}`,
    );
    assert.equal(r.upstreamChanges, 19);
    assert.equal(tot.non2xx, 0, `non-2xx answers: ${report}`);
    assert.equal(tot.connectionErrors, 0, `connection errors: ${report}`);
    for (const [name, c] of Object.entries(r.counts)) {
      // Each gateway and connection kind was probed through the changes, and saw both upstreams.
      assert.ok((c.byStatus['200'] ?? 0) >= 20, `${name}: ${JSON.stringify(c)}`);
      assert.ok(
        (c.byUpstream['up-a'] ?? 0) > 0 && (c.byUpstream['up-b'] ?? 0) > 0,
        `${name}: ${JSON.stringify(c)}`,
      );
    }
  },
);
