/**
 * `make bench` (operator part): apply 10, 100 and 1000 ApiDefinitions and measure the time until
 * each serves traffic through the gateway (p50, p99, total) and the operator's peak memory. The
 * reference, in the same run, is the same number of APIs written straight to the gateway's
 * management API with one group reload: the floor the operator adds its work to.
 * Then 1000 SecurityPolicies, each on its own API (the 1000 APIs applied before), until each is in
 * the gateway's policy list with its API's ID in its access rights, against the same policies
 * written straight to `/svc/policies`.
 * Then 1000 ApiKeys (`SVC_BENCH_KEYS`) until each authenticates, against the same keys written
 * straight to `/svc/keys` (api-key-phase.ts).
 * Last, the changing-API probe (`SVC_BENCH_PROBE` changes, e2e/harness/change-probe.ts): two
 * gateways on one Redis store, one API's upstream moved every 10 changes among 1,000 changes of
 * other APIs, a client counting every answer of that API on both gateways by status.
 * Figures go to the "Operator" section of docs/benchmarks.md.
 */
import { cpus, loadavg } from 'node:os';
import { derivedId } from '../../operator/ids.ts';
import { apiKeysPhase, type KeysResult } from './api-key-phase.ts';
import { APPLIERS, applyAll, summarize, timeToServe, timeoutMs, type Run } from './serving.ts';
import {
  operatorMemory,
  startBenchStack,
  writeChangesBlock,
  writeKeysRow,
  writeProbeBlock,
  writeSection,
} from './stack.ts';
import { changeLatencies } from './change-latency.ts';
import { runChangeProbe, totals, type ChangeProbeResult } from '../harness/change-probe.ts';
import { startLocalWebhooks } from '../webhooks/helpers.ts';
import {
  OPERATOR_NODE_OPTIONS,
  httpRequest,
  startOperator,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';

/** `SVC_BENCH_SIZES=1000` (comma-separated) runs other sizes, to profile one. */
const SIZES = (process.env.SVC_BENCH_SIZES ?? '10,100,1000,10000').split(',').map(Number);
/**
 * `SVC_BENCH_PROFILE=<dir>`: the operator writes a CPU profile there when it stops, and the
 * webhook server one in `<dir>/webhooks`.
 */
const PROFILE_DIR = process.env.SVC_BENCH_PROFILE;
/** `SVC_BENCH_KEYS=50`: the ApiKey row with fewer keys (0 leaves it out). */
const KEYS = Number(process.env.SVC_BENCH_KEYS ?? '1000');
/**
 * `SVC_BENCH_ONLY=keys`: the ApiKey row alone (no ApiDefinition sizes, no policies); only that
 * row and its note change in docs/benchmarks.md, the other figures stay as their run wrote them.
 */
const ONLY_KEYS = process.env.SVC_BENCH_ONLY === 'keys';
/** `SVC_BENCH_PROBE=100`: the changing-API probe with fewer changes (0 leaves it out). */
const PROBE_CHANGES = Number(process.env.SVC_BENCH_PROBE ?? '1000');
/**
 * `SVC_BENCH_ONLY=probe`: the changing-API probe alone; only its part of the Operator section of
 * docs/benchmarks.md changes.
 */
const ONLY_PROBE = process.env.SVC_BENCH_ONLY === 'probe';
/**
 * `SVC_BENCH_ONLY=changes`: the sizes of at least 1,000 APIs applied, then one change at a time
 * among them (change-latency.ts) alone; only that part of docs/benchmarks.md changes.
 */
const ONLY_CHANGES = process.env.SVC_BENCH_ONLY === 'changes';
/** `SVC_BENCH_CHANGES=50`: changes one at a time among 1,000 and among 10,000 APIs (0: none). */
const CHANGES = Number(process.env.SVC_BENCH_CHANGES ?? '100');
/** Sizes with the one-change-at-a-time figures, and each one's target (p99, ms; issue 33 item 2). */
const CHANGE_TARGETS = new Map([
  [1000, 100],
  [10_000, 250],
]);
/** The probed API's upstream moves every this many changes. */
const PROBE_UPSTREAM_EVERY = 10;
/** The probe's runs: its changes one after the other, then 8 at once (as the APIs are applied). */
const PROBE_APPLIERS = [1, APPLIERS];
/** The other APIs the probe's other changes create, modify and delete. */
const PROBE_OTHERS = 100;
/** The machine's load when the run starts (other work on it lowers every figure). */
const LOAD_BEFORE = loadavg()[0] ?? NaN;
/** Sums and counts of the operator's reconcile and convergence histograms (ApiDefinitions). */
interface OperatorSums {
  reconcile: [number, number];
  convergence: [number, number];
}

async function operatorMeans(op: OperatorProc): Promise<OperatorSums> {
  const text = (await httpRequest(`${op.opsUrl}/metrics`)).body;
  const read = (name: string, label: string): [number, number] => {
    const at = (suffix: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}_${suffix}{`) && l.includes(label));
      return Number(line?.split(' ').at(-1) ?? NaN);
    };
    return [at('sum'), at('count')];
  };
  return {
    reconcile: read('svc_reconcile_duration_seconds', 'controller="apidefinition"'),
    convergence: read('svc_config_convergence_seconds', 'kind="ApiDefinition"'),
  };
}

/** The mean of each histogram between two scrapes, ms. */
function meansBetween(a: OperatorSums, b: OperatorSums): { reconcileMs: number; convergenceMs: number } {
  const mean = (x: [number, number], y: [number, number]): number => (1000 * (y[0] - x[0])) / (y[1] - x[1]);
  return { reconcileMs: mean(a.reconcile, b.reconcile), convergenceMs: mean(a.convergence, b.convergence) };
}

/** `SVC_BENCH_WRITE=0`: print the section without writing docs/benchmarks.md (a trial run). */
const WRITE = process.env.SVC_BENCH_WRITE !== '0';
/**
 * Polls the gateway's policy list until every ID in `want` is there with the access rights the
 * map gives (policy ID to API ID); returns each one's time since `t0`.
 */
async function timeToPolicies(
  gw: GatewayProc,
  secret: string,
  want: Map<string, string>,
  t0: number,
): Promise<number[]> {
  const done = new Map<string, number>();
  const deadline = t0 + timeoutMs(want.size);
  while (done.size < want.size) {
    if (Date.now() > deadline)
      throw new Error(
        `${want.size - done.size} policies not in the gateway after ${timeoutMs(want.size)} ms`,
      );
    const r = await httpRequest(`${gw.url}/svc/policies`, { headers: { 'x-svc-authorization': secret } });
    if (r.status !== 200) throw new Error(`GET /svc/policies: ${r.status} ${r.body}`);
    const now = Date.now() - t0;
    for (const p of JSON.parse(r.body) as { id?: string; access_rights?: Record<string, unknown> }[]) {
      const api = p.id === undefined ? undefined : want.get(p.id);
      if (
        p.id !== undefined &&
        api !== undefined &&
        !done.has(p.id) &&
        p.access_rights?.[api] !== undefined
      ) {
        done.set(p.id, now);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [...want.keys()].map((id) => done.get(id) ?? NaN);
}

const stack = await startBenchStack('operator', 'bench');
const { dir, cp, upstream, gw, secret } = stack;
/**
 * The chart's admission webhooks in front of the API server, as installed (their finalizer on
 * create spares the operator a write; their lookups cost requests of their own; the route check
 * answers from a watch cache). `SVC_BENCH_WEBHOOKS=0` leaves them out.
 */
const webhooks =
  process.env.SVC_BENCH_WEBHOOKS === '0'
    ? undefined
    : await startLocalWebhooks(cp, dir, 'webhooks', {
        operatorNamespaces: '',
        // As the chart runs it (`operator.logLevel`): a debug line per review is not the product.
        logLevel: 'info',
        ...(PROFILE_DIR === undefined
          ? {}
          : { env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}/webhooks` } }),
      });
let operator: OperatorProc | undefined;

const POLICIES = 1000;
/** The size whose APIs the policies cover. */
const POLICY_SIZE = Math.max(...SIZES.filter((n) => n <= POLICIES));
/** The operator's memory after a size: peak resident so far (VmHWM), and its heap in use. */
interface Memory {
  n: number;
  peakRssMiB: number;
  heapUsedMiB: number;
}
const results: {
  operator: Run[];
  direct: Run[];
  policies?: Run;
  policiesDirect?: Run;
  keys?: KeysResult;
  memory: Memory[];
  changeOne?: number;
  /** One change at a time among n APIs: each one's time from its acceptance to served, ms. */
  changes: { n: number; took: number[]; operator?: { reconcileMs: number; convergenceMs: number } }[];
  /** The changing-API probe's runs, with the load average (1 min) when each started and ended. */
  probes: { appliers: number; run: ChangeProbeResult; load: [number, number] }[];
  /** API server requests per object during each size's burst, by verb and resource. */
  requests: { n: number; perObject: Map<string, number> }[];
} = { operator: [], direct: [], memory: [], requests: [], probes: [], changes: [] };

/**
 * The API server's request counters (`apiserver_request_total`) by `VERB resource`, and its time
 * spent calling admission webhooks (`webhook <type> seconds` and `webhook <type> calls`, from
 * `apiserver_admission_webhook_admission_duration_seconds`).
 */
async function apiServerRequests(): Promise<Map<string, number>> {
  const text = (await cp.kubectl(['get', '--raw', '/metrics'])).stdout;
  const counts = new Map<string, number>();
  for (const m of text.matchAll(
    /^apiserver_admission_webhook_admission_duration_seconds_(sum|count)\{[^}]*type="(\w+)"[^}]*\} (\S+)$/gm,
  )) {
    const key = `webhook ${m[2] ?? '?'} ${m[1] === 'sum' ? 'seconds' : 'calls'}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[3]));
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    const key = `${labels.verb ?? '?'} ${labels.resource ?? '?'}${labels.subresource ? `/${labels.subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** The webhook server's own review time (`svc_webhook_review_duration_seconds`), all reviews. */
async function webhookReviewSeconds(): Promise<{ sum: number; count: number } | undefined> {
  if (webhooks === undefined) return undefined;
  const text = (await httpRequest(`http://127.0.0.1:${webhooks.healthPort}/metrics`)).body;
  const total = (what: 'sum' | 'count'): number =>
    [
      ...text.matchAll(new RegExp(`^svc_webhook_review_duration_seconds_${what}\\{[^}]*\\} (\\S+)$`, 'gm')),
    ].reduce((a, m) => a + Number(m[1]), 0);
  return { sum: total('sum'), count: total('count') };
}

/** Requests per object between two readings, the kinds a burst makes at least 0.05 of per object. */
function perObject(before: Map<string, number>, after: Map<string, number>, n: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, v] of after) {
    const per = (v - (before.get(key) ?? 0)) / n;
    if (per >= 0.05 || (key.startsWith('webhook ') && per > 0)) out.set(key, per);
  }
  return new Map([...out].sort((a, b) => b[1] - a[1]));
}

/** The operator's peak resident memory so far and its heap in use. */
async function memoryOf(op: OperatorProc): Promise<Omit<Memory, 'n'>> {
  const m = await operatorMemory(op);
  return { peakRssMiB: m.peakRssMiB, heapUsedMiB: m.heapUsedMiB };
}
/**
 * 1000 SecurityPolicies, each on its own API (the APIs of size n), one apply, until each is in the
 * gateway; then the same policies written straight to the gateway (the reference).
 */
async function policiesPhase(n: number): Promise<void> {
  const count = Math.min(POLICIES, n);
  const want = new Map<string, string>();
  const policies = Array.from({ length: count }, (_, i) => {
    want.set(derivedId('bench', `pol-${i}`), derivedId('bench', `op-${n}-${i}`));
    return `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: pol-${i}, namespace: bench}
spec:
  name: pol-${i}
  state: active
  active: true
  rate: 100
  per: 60
  quota_max: -1
  access_rights_array:
    - {name: op-${n}-${i}, namespace: bench, kind: ApiDefinition}
`;
  });
  const t2 = Date.now();
  const inGateway = timeToPolicies(gw, secret, want, t2);
  const policiesApplied = await applyAll(cp, policies);
  results.policies = { ...summarize(count, await inGateway), applied: policiesApplied - t2 };

  // Reference: the same policies written straight to the gateway.
  const wantDirect = new Map<string, string>();
  const t3 = Date.now();
  for (let i = 0; i < count; i += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, count - i) }, async (_, j) => {
        const id = `direct-pol-${i + j}`;
        const api = `direct-${n}-${i + j}`;
        wantDirect.set(id, api);
        const r = await httpRequest(`${gw.url}/svc/policies`, {
          method: 'POST',
          headers: { 'x-svc-authorization': secret, 'content-type': 'application/json' },
          body: JSON.stringify({
            id,
            name: id,
            active: true,
            rate: 100,
            per: 60,
            quota_max: -1,
            access_rights: { [api]: { api_id: api, api_name: api, versions: ['Default'] } },
          }),
        });
        if (r.status !== 200) throw new Error(`POST /svc/policies: ${r.status} ${r.body}`);
      }),
    );
  }
  results.policiesDirect = summarize(count, await timeToPolicies(gw, secret, wantDirect, t3));
  console.log(
    `policies: operator ${JSON.stringify(results.policies)}, direct ${JSON.stringify(results.policiesDirect)}`,
  );
}

try {
  if (!ONLY_PROBE)
    operator = await startOperator({
      name: 'operator',
      gateway: gw,
      kubeconfig: cp.kubeconfig,
      logDir: dir,
      org: 'bench',
      env: {
        LOG_LEVEL: 'warn',
        NODE_OPTIONS: [
          process.env.SVC_BENCH_NODE_OPTIONS ?? OPERATOR_NODE_OPTIONS,
          PROFILE_DIR ? `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}` : '',
        ]
          .join(' ')
          .trim(),
      },
    });
  for (const n of ONLY_KEYS || ONLY_PROBE
    ? []
    : ONLY_CHANGES
      ? SIZES.filter((x) => CHANGE_TARGETS.has(x))
      : SIZES) {
    // Through the operator: one kubectl apply of n manifests.
    const paths = Array.from({ length: n }, (_, i) => `/op-${n}-${i}/`);
    const manifests = paths.map(
      (p, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: op-${n}-${i}, namespace: bench}
spec:
  name: op-${n}-${i}
  use_keyless: true
  proxy: {listen_path: ${p}, target_url: "${upstream.url}", strip_listen_path: true}
`,
    );
    const requestsBefore = await apiServerRequests();
    const reviewsBefore = await webhookReviewSeconds();
    const t0 = Date.now();
    const serving = timeToServe(gw, paths, t0);
    const applied = await applyAll(cp, manifests);
    const run = summarize(n, await serving);
    results.operator.push({ ...run, applied: applied - t0 });
    results.requests.push({ n, perObject: perObject(requestsBefore, await apiServerRequests(), n) });
    const reviewsAfter = await webhookReviewSeconds();
    if (reviewsBefore !== undefined && reviewsAfter !== undefined) {
      const calls = reviewsAfter.count - reviewsBefore.count;
      console.log(
        `n=${n}: admission reviews as the webhook server times them: ${calls}, mean ${calls === 0 ? '-' : ((1000 * (reviewsAfter.sum - reviewsBefore.sum)) / calls).toFixed(2)} ms`,
      );
    }

    if (CHANGES > 0 && CHANGE_TARGETS.has(n)) {
      const before = operator === undefined ? undefined : await operatorMeans(operator);
      const took = await changeLatencies({
        cp,
        gatewayUrl: gw.url,
        namespace: 'bench',
        names: Array.from({ length: Math.min(CHANGES, n) }, (_, k) => `op-${n}-${k}`),
        pathOf: (k) => `/op-${n}-${k}-changed/`,
      });
      const after = operator === undefined ? undefined : await operatorMeans(operator);
      const means = before === undefined || after === undefined ? undefined : meansBetween(before, after);
      results.changes.push({ n, took, ...(means === undefined ? {} : { operator: means }) });
      console.log(
        `n=${n}: one change at a time, ms: ${JSON.stringify(summarize(took.length, took))}; the operator's own means: ${JSON.stringify(means)}`,
      );
    }
    if (ONLY_CHANGES) continue;

    // Reference: the same APIs written straight to the gateway, then one group reload.
    const direct = Array.from({ length: n }, (_, i) => `/direct-${n}-${i}/`);
    const t1 = Date.now();
    for (let i = 0; i < direct.length; i += 16) {
      await Promise.all(
        direct.slice(i, i + 16).map(async (p, j) => {
          const r = await httpRequest(`${gw.url}/svc/apis`, {
            method: 'POST',
            headers: { 'x-svc-authorization': secret, 'content-type': 'application/json' },
            body: JSON.stringify({
              api_id: `direct-${n}-${i + j}`,
              name: `direct-${n}-${i + j}`,
              use_keyless: true,
              proxy: { listen_path: p, target_url: upstream.url, strip_listen_path: true },
            }),
          });
          if (r.status !== 200) throw new Error(`POST /svc/apis: ${r.status} ${r.body}`);
        }),
      );
    }
    await httpRequest(`${gw.url}/svc/reload/group`, { headers: { 'x-svc-authorization': secret } });
    results.direct.push(summarize(n, await timeToServe(gw, direct, t1)));
    console.log(
      `n=${n}: operator ${JSON.stringify(results.operator.at(-1))}, direct ${JSON.stringify(results.direct.at(-1))}`,
    );
    console.log(
      `n=${n}: API server requests per object: ${JSON.stringify([...(results.requests.at(-1)?.perObject ?? [])])}`,
    );
    const perCall = (type: string): string => {
      const per = results.requests.at(-1)?.perObject;
      const calls = per?.get(`webhook ${type} calls`) ?? 0;
      return calls === 0
        ? '-'
        : `${((1000 * (per?.get(`webhook ${type} seconds`) ?? 0)) / calls).toFixed(1)} ms`;
    };
    console.log(
      `n=${n}: admission webhook latency seen by the API server, mean per call: mutating ${perCall('admit')}, validating ${perCall('validating')}`,
    );
    if (n === POLICY_SIZE) await policiesPhase(n);
    if (operator !== undefined) results.memory.push({ n, ...(await memoryOf(operator)) });
  }

  if (!ONLY_KEYS && !ONLY_PROBE && !ONLY_CHANGES) {
    // One change among all of them: a new listen path for one API, until it serves.
    const largest = SIZES.at(-1) ?? 0;
    const tc = Date.now();
    const changedPath = `/changed-${largest}/`;
    await cp.kubectl([
      'patch',
      'apidefinition',
      `op-${largest}-0`,
      '-n',
      'bench',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { proxy: { listen_path: changedPath } } }),
    ]);
    results.changeOne = (await timeToServe(gw, [changedPath], tc))[0];
  }

  if (KEYS > 0 && !ONLY_PROBE && !ONLY_CHANGES) {
    results.keys = await apiKeysPhase({
      cp,
      gw,
      secret,
      upstreamUrl: upstream.url,
      namespace: 'bench',
      org: 'bench',
      count: KEYS,
    });
    console.log(`keys: ${JSON.stringify(results.keys)}`);
  }

  if (PROBE_CHANGES > 0 && !ONLY_KEYS && !ONLY_CHANGES) {
    // The probe's own operator watches its namespace alone: this one would push it to `gw` too.
    await operator?.stop();
    for (const appliers of PROBE_APPLIERS) {
      const namespace = `probe-${String(appliers)}`;
      await cp.kubectl(['create', 'namespace', namespace]);
      const loadBefore = loadavg()[0] ?? NaN;
      const run = await runChangeProbe({
        cp,
        dir,
        namespace,
        changes: PROBE_CHANGES,
        upstreamEvery: PROBE_UPSTREAM_EVERY,
        others: PROBE_OTHERS,
        appliers,
        log: (line) => {
          console.log(line);
        },
      });
      results.probes.push({ appliers, run, load: [loadBefore, loadavg()[0] ?? NaN] });
      console.log(`probe, ${String(appliers)} at once: ${JSON.stringify(run)}`);
    }
  }
} finally {
  await operator?.stop();
  await webhooks?.stop();
  await stack.stop();
}

const fmt = (ms: number): string => (ms / 1000).toFixed(2);
const rows = SIZES.map((n, i) => {
  const o = results.operator[i];
  const d = results.direct[i];
  if (!o || !d) return `| ${n} | - | - | - | - | - | - |`;
  return `| ${n} | ${fmt(o.applied ?? NaN)} | ${fmt(o.p50)} | ${fmt(o.p99)} | ${fmt(o.total)} | ${fmt(d.total)} | ${(o.total / d.total).toFixed(1)}x |`;
});
const byN = (n: number): Run | undefined => results.operator[SIZES.indexOf(n)];
const pol = results.policies;
const polDirect = results.policiesDirect;
const policyRow =
  pol === undefined || polDirect === undefined
    ? '| SecurityPolicies | - | - | - | - | - | - |'
    : `| ${pol.n} SecurityPolicies (each on its own API) | ${fmt(pol.applied ?? NaN)} | ${fmt(pol.p50)} | ${fmt(pol.p99)} | ${fmt(pol.total)} | ${fmt(polDirect.total)} | ${(pol.total / polDirect.total).toFixed(1)}x |`;
const keys = results.keys;
const keysNote = `The ApiKey row: time from one \`kubectl apply\` of the keys, each with its Secret (a known
value), until each value authenticates through the gateway on an API granted by one policy; the
reference writes the same keys to \`/svc/keys/{value}\` (16 at a time) with that policy.`;
const keysRow =
  keys === undefined
    ? '| ApiKeys | - | - | - | - | - | - |'
    : `| ${keys.operator.n} ApiKeys (until each authenticates) | ${fmt(keys.operator.applied ?? NaN)} | ${fmt(keys.operator.p50)} | ${fmt(keys.operator.p99)} | ${fmt(keys.operator.total)} | ${fmt(keys.direct.total)} | ${(keys.operator.total / keys.direct.total).toFixed(1)}x |`;
const memoryRows = results.memory.map(
  (m) => `| ${m.n} | ${m.peakRssMiB.toFixed(0)} | ${m.heapUsedMiB.toFixed(0)} |`,
);
/** A target line: met or missed, with the figure. */
const target = (what: string, figure: number | undefined, limit: number, unit: string, scale = 1): string =>
  `- ${what}: **${figure !== undefined && figure <= limit ? 'met' : 'missed'}** (${figure === undefined ? '-' : (figure / scale).toFixed(scale === 1 ? 0 : 2)} ${unit}).`;
const mem1000 = results.memory.find((m) => m.n === 1000);
const changeRows = results.changes.map(({ n, took, operator: own }) => {
  const r = summarize(took.length, took);
  const limit = CHANGE_TARGETS.get(n) ?? NaN;
  const mean = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(0));
  return `| ${String(n)} | ${String(took.length)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.total.toFixed(0)} | ${mean(own?.reconcileMs)} | ${mean(own?.convergenceMs)} | ${String(limit)}: **${r.p99 <= limit ? 'met' : 'missed'}** |`;
});
const changesBlock = `### One change at a time

Among N ApiDefinitions serving, changes one after the other, each a new listen path for another
API sent to the API server as a merge patch (as \`kubectl patch\` sends it), each timed from the
API server's answer (the change accepted) until the gateway serves the new path (polled every
2 ms); milliseconds (issue 33 item 2: p99 at most 100 ms among 1,000, 250 ms among 10,000). One
gateway; the operator's own view of the same interval, from its reconcile to the last gateway's
applied revision, is \`svc_config_convergence_seconds\` on its /metrics. Measured on
${new Date().toISOString().slice(0, 10)}, ${String(cpus().length)} cores, load average ${LOAD_BEFORE.toFixed(2)} before the run.

The operator's own means over the same changes, from its /metrics: one ApiDefinition reconcile
(\`svc_reconcile_duration_seconds\`) and its convergence (\`svc_config_convergence_seconds\`).

| N | changes | p50 | p99 | max | reconcile, mean | convergence, mean | target p99 |
|---|---|---|---|---|---|---|---|
${changeRows.join('\n') || '| - | - | - | - | - | - | - | - |'}
`;
const probeTotals = results.probes.map((p) => totals(p.run));
const probeSum = probeTotals.reduce(
  (sum, t) => ({
    requests: sum.requests + t.requests,
    non2xx: sum.non2xx + t.non2xx,
    connectionErrors: sum.connectionErrors + t.connectionErrors,
  }),
  { requests: 0, non2xx: 0, connectionErrors: 0 },
);
/** Non-2xx answers and connection errors of a row, by status or error code. */
const failures = (c: ChangeProbeResult['counts'][string]): string =>
  [
    ...Object.entries(c.byStatus).filter(([status]) => !status.startsWith('2')),
    ...Object.entries(c.connectionErrors),
  ]
    .map(([what, n]) => `${what}: ${String(n)}`)
    .join(', ') || '-';
const probeRuns = results.probes.map(({ appliers, run, load }) => {
  const rows = Object.entries(run.counts).map(([name, c]) => {
    const t = totals({ ...run, counts: { [name]: c } });
    return `| ${String(appliers)} | ${name} | ${String(t.requests)} | ${String(t.ok)} | ${failures(c)} | ${String(c.byUpstream['up-a'] ?? 0)} / ${String(c.byUpstream['up-b'] ?? 0)} |`;
  });
  return {
    rows,
    note: `- ${String(appliers)} at once: ${String(run.changes)} changes (${String(run.upstreamChanges)} of the probed API's upstream) in ${fmt(run.changesMs)} s; both gateways answered from the final upstream ${fmt(run.settleMs)} s after the last one; load average ${load[0].toFixed(2)} when it started, ${load[1].toFixed(2)} when it ended${run.retries.length === 0 ? '' : `; the API server refused ${String(run.retries.length)} change(s) once (${[...new Set(run.retries.map((r) => r.replace(/^\S+ \S+: /, '').slice(0, 160)))].join('; ')}), each applied on a retry`}.`,
  };
});
const probeBlock = `### An API being changed

Two gateway processes (2 workers each) on one Redis store, the operator in mode ce writing to
one of them (the other follows through the store's group reload); one keyless ApiDefinition whose
\`target_url\` moves between two live upstreams (both answer 200) every ${String(PROBE_UPSTREAM_EVERY)} changes, among
${String(PROBE_CHANGES)} changes applied as fast as the API server accepts them (server-side apply or delete, one
after the other, then ${String(APPLIERS)} at once with the probed API's moves still in turn); the other changes modify
the target, modify the listen path of, delete and create again ${String(PROBE_OTHERS)} other ApiDefinitions in turn. A
client sends requests to the probed API on both gateways all along, 2 at a time over keep-alive
connections and 2 at a time each on a new connection (\`connection: close\`), and counts every
answer by status and every request left without an answer (connection errors). Counting stops
2 s after both gateways answer from the final upstream. Measured on ${new Date().toISOString().slice(0, 10)}, ${String(cpus().length)} cores.
${results.probes.length === 0 ? 'Not measured in this run.' : probeRuns.map((r) => r.note).join('\n')}

| changes at once | gateway, connections | requests | 2xx | non-2xx and errors | answered by up-a / up-b |
|---|---|---|---|---|---|
${probeRuns.flatMap((r) => r.rows).join('\n')}

Target (issue 33 item 2):
- zero non-2xx answers (and no request left unanswered) on an API being changed, two gateways on one Redis store: **${results.probes.length > 0 && probeSum.non2xx === 0 && probeSum.connectionErrors === 0 ? 'met' : 'missed'}** (${String(probeSum.non2xx)} non-2xx and ${String(probeSum.connectionErrors)} connection errors among ${String(probeSum.requests)} requests).
`;
const section = `## Operator

Time from \`kubectl apply\` of N ApiDefinitions (server-side, ${APPLIERS} kubectl processes at
once, as GitOps tools apply a folder) until each one serves traffic through the gateway,
polled from the start of the apply ("applied" is when the last kubectl returned), against the
same N APIs written straight to the gateway's management API with one group reload (the
reference, same run, same gateway). Sizes run one after the other on one operator, so each
starts with the previous ones in place. Seconds.
Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}); generated by \`make bench\` on ${new Date().toISOString().slice(0, 10)}.
The operator runs as the chart starts it (\`NODE_OPTIONS=${OPERATOR_NODE_OPTIONS}\`: \`operator.heapMiB\`, \`operator.semiSpaceMiB\`).

| N | applied | p50 | p99 | total | reference total | ratio |
|---|---|---|---|---|---|---|
${rows.join('\n')}
${policyRow}
${keysRow}

The SecurityPolicy row: time from one \`kubectl apply\` of the policies (their APIs already
serving) until each is in the gateway's policy list with its API in its access rights; the
reference writes the same policies to \`/svc/policies\`.
${keysNote}

One change among all ${SIZES.at(-1) ?? 0} (a new listen path for one API, \`kubectl patch\`) served after
${results.changeOne === undefined ? '-' : fmt(results.changeOne)} s.

Operator memory after each size (peak resident so far, VmHWM; V8 heap in use then):

| N | peak RSS (MiB) | heap used (MiB) |
|---|---|---|
${memoryRows.join('\n')}

API server requests per object during the largest burst (its \`apiserver_request_total\`, all
clients: the 8 kubectl processes, the operator, its Events), by verb and resource:
${
  [...(results.requests.at(-1)?.perObject ?? [])]
    .filter(([k]) => !k.startsWith('webhook '))
    .map(([k, v]) => `\`${k}\` ${v.toFixed(2)}`)
    .join(', ') || '-'
}.

Targets (issue "The operator at scale"):
${target('1,000 ApiDefinitions serving, p99 ≤ 10 s', byN(1000)?.p99, 10_000, 's', 1000)}
${target('10,000 ApiDefinitions serving, p99 ≤ 120 s', byN(10_000)?.p99, 120_000, 's', 1000)}
${target('1,000 SecurityPolicies, p99 ≤ 15 s', pol?.p99, 15_000, 's', 1000)}
${target('one change among 10,000 served ≤ 2 s', results.changeOne, 2_000, 's', 1000)}
${target('operator peak memory at 1,000 objects ≤ 250 MiB', mem1000?.peakRssMiB, 250, 'MiB')}

${changesBlock}
${probeBlock}`;

if (ONLY_CHANGES) {
  console.log(changesBlock);
  if (WRITE) await writeChangesBlock(changesBlock);
} else if (ONLY_PROBE) {
  console.log(probeBlock);
  if (WRITE) await writeProbeBlock(probeBlock);
} else if (ONLY_KEYS) {
  const dated = `${keysNote}
Measured alone (\`SVC_BENCH_ONLY=keys\`) on ${new Date().toISOString().slice(0, 10)}, load average ${LOAD_BEFORE.toFixed(2)} before the run on ${cpus().length} cores.`;
  console.log(`${keysRow}\n\n${dated}`);
  if (WRITE) await writeKeysRow(keysRow, dated);
} else if (WRITE) await writeSection('Operator', section);
console.log(section);
