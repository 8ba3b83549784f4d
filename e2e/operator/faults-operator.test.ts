/**
 * Faults under a burst of changes (issue 13), the operator's own: killed (SIGKILL) mid-burst and
 * restarted, and the leader killed under two replicas. Real processes throughout: etcd and
 * kube-apiserver from the harness, gateway and operator processes, an echo upstream. Each case has
 * its own namespace, gateway, operator(s) and lease namespace, so the cases share only the control
 * plane; each asserts the final state of every object of its burst (faults-helpers.ts). What the
 * operator depends on going away: faults-outages.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor, type GatewayProc } from '../harness/processes.ts';
import {
  afterCase,
  apiName,
  apiYaml,
  applyAll,
  assertBurstConverged,
  BURST,
  CASE_TIMEOUT_MS,
  controlPlane,
  converged,
  heldIds,
  kill,
  list,
  startCase,
  operator,
  policyName,
  policyYaml,
  range,
  useFaultsCluster,
} from './faults-helpers.ts';

/** The operator's lease duration and retry period (lib/k8s/leader.ts defaults). */
const LEASE_MS = 15_000;
const LEASE_RETRY_MS = 2_000;

useFaultsCluster();

test(
  'the operator killed (SIGKILL) mid-burst and restarted: converges, no duplicates, no stuck finalizer',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const n = BURST;
    const { where, ns, gw, versions } = await startCase('kill', n);
    const policies = range(0, n / 5);
    const op = await operator('kill-1', gw, where);

    // Killed while the burst is still being applied, as soon as the gateway holds a few APIs.
    const applying = applyAll(
      [...range(0, n).map((i) => apiYaml(ns, i)), ...policies.map((i) => policyYaml(ns, i))],
      50,
    );
    try {
      await waitFor(
        'the first APIs pushed',
        async () => (await heldIds(gw, 'apis')).length >= 10,
        60_000,
        20,
      );
      await kill(op);
    } finally {
      await applying;
    }
    const held = (await heldIds(gw, 'apis')).length;
    const done = (await list('apidefinition', ns)).filter(converged).length;
    assert.ok(held < n && done < n, `killed mid-burst (${held}/${n} APIs pushed, ${done} Ready)`);
    process.stderr.write(`faults: operator killed with ${held}/${n} APIs pushed, ${done} Ready\n`);
    await operator('kill-2', gw, where);

    await assertBurstConverged(gw, ns, versions, policies);

    // Finalizers work after the restart: APIs no policy covers, and some policies, deleted.
    const goneApis = range(n / 5, n / 5 + 20);
    const gonePolicies = policies.slice(0, 10);
    await controlPlane().kubectl([
      'delete',
      '-n',
      ns,
      '--wait=false',
      ...goneApis.map((i) => `apidefinition/${apiName(i)}`),
      ...gonePolicies.map((i) => `securitypolicy/${policyName(i)}`),
    ]);
    for (const i of goneApis) versions.delete(i);
    const keptPolicies = policies.slice(10);
    await assertBurstConverged(gw, ns, versions, keptPolicies);
  },
);

/** A management write seen by a recording proxy. */
interface Write {
  who: string;
  method: string;
  path: string;
  /** When the proxy forwarded it to the gateway. */
  at: number;
}

/**
 * A proxy in front of the gateway's management API for one operator: it forwards everything and
 * records the writes (any method but GET, and reloads), so the test knows who wrote when.
 */
async function recordingProxy(who: string, gw: GatewayProc, writes: Write[]): Promise<GatewayProc> {
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    if (method !== 'GET' || path.startsWith('/svc/reload'))
      writes.push({ who, method, path, at: Date.now() });
    const upstreamReq = http.request(
      `${gw.url}${path}`,
      { method, headers: req.headers, agent: false },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    upstreamReq.on('error', () => {
      res.destroy();
    });
    req.pipe(upstreamReq);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  afterCase(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return { ...gw, url: `http://127.0.0.1:${port}`, port };
}

test(
  'two replicas: the leader killed, the other takes over within the lease and finishes; never both write',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const n = BURST;
    const { where, ns, gw, versions } = await startCase('leader', n);
    const writes: Write[] = [];
    const a = await operator('leader-a', await recordingProxy('a', gw, writes), where);
    await waitFor('replica a leads', () => a.log().includes('became leader'));
    const b = await operator('leader-b', await recordingProxy('b', gw, writes), where);

    await applyAll(range(0, n).map((i) => apiYaml(ns, i)));
    await waitFor('replica a writing', () => writes.filter((w) => w.who === 'a').length >= n / 4, 60_000);
    assert.ok(!b.log().includes('became leader'), 'replica b waits while a leads');
    const killedAt = Date.now();
    await kill(a);
    await waitFor(
      'replica b leads',
      () => b.log().includes('became leader'),
      LEASE_MS + LEASE_RETRY_MS + 5_000,
    );
    const takeoverMs = Date.now() - killedAt;
    assert.ok(
      takeoverMs <= LEASE_MS + LEASE_RETRY_MS + 1_000,
      `b took over ${takeoverMs} ms after a died (lease ${LEASE_MS} ms, retry ${LEASE_RETRY_MS} ms)`,
    );

    await assertBurstConverged(gw, ns, versions);

    const byA = writes.filter((w) => w.who === 'a');
    const byB = writes.filter((w) => w.who === 'b');
    assert.ok(byA.length > 0 && byB.length > 0, `both wrote in turn (a ${byA.length}, b ${byB.length})`);
    const lastA = Math.max(...byA.map((w) => w.at));
    const firstB = Math.min(...byB.map((w) => w.at));
    assert.ok(lastA <= killedAt, 'no write of a after it was killed');
    assert.ok(
      firstB > killedAt,
      `b wrote nothing before a was killed (first write ${firstB - killedAt} ms after)`,
    );
    process.stderr.write(
      `faults: takeover ${takeoverMs} ms; writes a ${byA.length}, b ${byB.length}; ` +
        `gap ${firstB - lastA} ms between a's last and b's first\n`,
    );
  },
);
