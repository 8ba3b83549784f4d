/**
 * Pushes per spec: the operator writes an object to the gateway once per distinct spec, not once
 * more when a second reconcile of it reads a cache that does not hold the status the first one
 * wrote yet. Counted as a user sees it: the gateway's `api stored` and `policy stored` log lines
 * (one per write to its management API). Real processes: etcd and kube-apiserver from the
 * harness, a gateway, an operator, an echo upstream; and a gateway of two worker processes, as
 * the chart runs it on a node of two cores, with an operator replaced as a deleted pod is.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import {
  httpRequest,
  startEchoUpstream,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';
import {
  applyManifest,
  startGatewaySuite,
  startSuiteGateway,
  startWorldOperator,
  stopGatewaySuite,
  type GatewaySuite,
} from './helpers.ts';

const NS = 'pushes';
/** The namespace of the two-worker case, and its operators' lease. */
const NS_WORKERS = 'pushes-workers';
const LEASE_NS_WORKERS = 'pushes-workers-lease';
/** ApiDefinitions (and SecurityPolicies) of the burst. */
const N = 80;
const CONVERGE_MS = 90_000;

let w: GatewaySuite;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let op: OperatorProc;

before(
  async () => {
    w = await startGatewaySuite({ name: 'pushes', namespaces: [NS, NS_WORKERS, LEASE_NS_WORKERS] });
    upstream = await startEchoUpstream();
    op = await startWorldOperator(w, { env: { WATCH_NAMESPACE: NS, LOG_LEVEL: 'info' } });
  },
  { timeout: 120_000 },
);

after(() => stopGatewaySuite(w, op, upstream));

const apiName = (i: number): string => `api-${String(i).padStart(3, '0')}`;
const policyName = (i: number): string => `pol-${String(i).padStart(3, '0')}`;
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

function apiYaml(i: number, version: number, ns = NS): string {
  const name = apiName(i);
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: ${ns}}
spec:
  name: ${name}-v${String(version)}
  use_keyless: true
  proxy: {listen_path: /${name}/, target_url: "${upstream.url}/v${String(version)}", strip_listen_path: true}
`;
}

function policyYaml(i: number, rate: number): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: ${policyName(i)}, namespace: ${NS}}
spec:
  name: ${policyName(i)}
  rate: ${String(rate)}
  per: 60
  access_rights_array: [{name: ${apiName(i)}}]
`;
}

/** Writes per document as the gateway's log lists them (`added` and `modified` alike). */
function writes(what: 'api stored' | 'policy stored', of: GatewayProc = w.gw): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of of.log().split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { message?: string; api_id?: string; policy_id?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.message !== what) continue;
    const id = entry.api_id ?? entry.policy_id ?? '';
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

interface Item {
  metadata: { name: string; generation?: number };
  status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] };
}

/** Waits until every object of `kind` is Ready for its current generation. */
async function waitConverged(kind: string, n: number, ns = NS): Promise<void> {
  await waitFor(
    `${String(n)} ${kind} Ready`,
    async () => {
      const out = await w.cp.kubectl(['get', kind, '-n', ns, '-o', 'json']);
      const items = (JSON.parse(out.stdout) as { items: Item[] }).items;
      const ready = items.filter((it) => {
        const c = it.status?.conditions?.find((x) => x.type === 'Ready');
        return c?.status === 'True' && c.observedGeneration === it.metadata.generation;
      });
      return ready.length === n && items.length === n;
    },
    CONVERGE_MS,
    500,
  );
}

/**
 * Waits until the gateway's count of writes stays the same for 3 s: the operator's reconciles
 * of the burst (and any second ones they queued) are done.
 */
async function settled(of: GatewayProc = w.gw): Promise<void> {
  let last = -1;
  let since = Date.now();
  await waitFor(
    'the gateway written no more',
    () => {
      const total = of
        .log()
        .split('\n')
        .filter((l) => l.includes(' stored"')).length;
      if (total !== last) {
        last = total;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= 3000;
    },
    60_000,
    250,
  );
}

/** The documents not written exactly as often as expected: `[name, writes]`. */
function wrong(
  what: 'api stored' | 'policy stored',
  name: (i: number) => string,
  expected: (i: number) => number,
): [string, number][] {
  const counts = writes(what);
  return range(0, N)
    .map((i): [string, number, number] => [name(i), counts.get(derivedId(NS, name(i))) ?? 0, expected(i)])
    .filter(([, got, want]) => got !== want)
    .map(([n, got]) => [n, got]);
}

test(
  'a burst of ApiDefinitions and SecurityPolicies, then updates of half: each written to the gateway once per distinct spec',
  { timeout: 240_000 },
  async () => {
    await applyManifest(
      w.cp,
      range(0, N)
        .map((i) => apiYaml(i, 1))
        .join('---\n'),
    );
    await applyManifest(
      w.cp,
      range(0, N)
        .map((i) => policyYaml(i, 100))
        .join('---\n'),
    );
    await waitConverged('apidefinition', N);
    await waitConverged('securitypolicy', N);
    await settled();
    assert.deepEqual(
      wrong('api stored', apiName, () => 1),
      [],
      'APIs written more than once for one spec',
    );
    assert.deepEqual(
      wrong('policy stored', policyName, () => 1),
      [],
      'policies written more than once for one spec',
    );

    // Updates of half of each: one more write for those, none for the others.
    const updated = (i: number): boolean => i % 2 === 0;
    const half = range(0, N).filter(updated);
    await applyManifest(w.cp, half.map((i) => apiYaml(i, 2)).join('---\n'));
    await applyManifest(w.cp, half.map((i) => policyYaml(i, 200)).join('---\n'));
    await waitConverged('apidefinition', N);
    await waitConverged('securitypolicy', N);
    await settled();
    const perSpec = (i: number): number => (updated(i) ? 2 : 1);
    assert.deepEqual(wrong('api stored', apiName, perSpec), [], 'APIs written more than once per spec');
    assert.deepEqual(
      wrong('policy stored', policyName, perSpec),
      [],
      'policies written more than once per spec',
    );
  },
);

/** Reconciles of ApiDefinitions an operator has finished (its `/metrics`). */
async function apiReconciles(of: OperatorProc): Promise<number> {
  const text = (await httpRequest(`${of.opsUrl}/metrics`)).body;
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('svc_reconcile_total{') && line.includes('controller="apidefinition"')) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

test(
  'a gateway of two workers, then the operator replaced (a deleted pod): its successor writes nothing again',
  { timeout: 300_000 },
  async () => {
    // As on the node: the chart's gateway runs one worker per core, and the process a read
    // reaches may not be the one that took the write before them all reloading.
    const gw2 = await startSuiteGateway(w.dir, 'pushes-workers', { workers: 2 });
    const env = { WATCH_NAMESPACE: NS_WORKERS, POD_NAMESPACE: LEASE_NS_WORKERS, LOG_LEVEL: 'info' };
    let first: OperatorProc | undefined;
    let successor: OperatorProc | undefined;
    try {
      first = await startWorldOperator({ ...w, gw: gw2 }, { name: 'pushes-workers-operator-1', env });
      const updated = (i: number): boolean => i < N / 2;
      await applyManifest(
        w.cp,
        range(0, N)
          .map((i) => apiYaml(i, 1, NS_WORKERS))
          .join('---\n'),
      );
      await waitConverged('apidefinition', N, NS_WORKERS);
      await applyManifest(
        w.cp,
        range(0, N)
          .filter(updated)
          .map((i) => apiYaml(i, 2, NS_WORKERS))
          .join('---\n'),
      );
      await waitConverged('apidefinition', N, NS_WORKERS);
      await settled(gw2);

      // SIGTERM, as the kubelet ends a deleted pod; the successor starts from the statuses.
      await first.stop();
      const next = await startWorldOperator({ ...w, gw: gw2 }, { name: 'pushes-workers-operator-2', env });
      successor = next;
      await waitFor(
        `the successor's reconcile of the ${String(N)} APIs`,
        async () => (await apiReconciles(next)) >= N,
        120_000,
        500,
      );
      await settled(gw2);

      const counts = writes('api stored', gw2);
      const wrong = range(0, N)
        .map((i): [string, number] => [apiName(i), counts.get(derivedId(NS_WORKERS, apiName(i))) ?? 0])
        .filter(([name, got]) => got !== (updated(Number(name.slice(4))) ? 2 : 1));
      assert.deepEqual(wrong, [], 'APIs written more (or less) than once per spec');
    } finally {
      await successor?.stop();
      await first?.stop();
      await gw2.stop();
    }
  },
);
