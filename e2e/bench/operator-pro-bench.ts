/**
 * `make bench-operator-pro`: the operator in mode pro. N ApiDefinitions (1,000 by default) from
 * `kubectl apply` until each serves traffic through a gateway, twice in one run on one API
 * server: the operator in mode ce writing to a gateway's management API (the reference), then the
 * operator in mode pro writing to a dashboard, with a gateway in mode pro loading from the
 * dashboard. Each phase has a fresh operator watching its own namespace. Target (issue 18): mode
 * pro within 1.5 of mode ce (p99 and total). Figures go to the "Operator, mode pro" section of
 * docs/benchmarks.md.
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { startPostgres, type TestPostgres } from '../../dashboard/testing/postgres.ts';
import { createTenant, signedLicense, startDashboardProc, type DashboardProc } from '../harness/dashboard.ts';
import { startGateway, waitFor, type GatewayProc, type OperatorProc } from '../harness/processes.ts';
import { APPLIERS, applyAll, summarize, timeToServe, type Run } from './serving.ts';
import { operatorMemory, startBenchStack, startPhaseOperator, writeSection } from './stack.ts';

/** `SVC_BENCH_PRO_APIS=50` runs another size. */
const N = Number(process.env.SVC_BENCH_PRO_APIS ?? '1000');
/**
 * `SVC_BENCH_PRO_POSTGRES=1`: the dashboard on a PostgreSQL of its own (the chart's
 * `storage=postgres`; needs Debian's PostgreSQL binaries) instead of SQLite (the chart's default).
 */
const POSTGRES = process.env.SVC_BENCH_PRO_POSTGRES === '1';
const NODE_SECRET = 'bench-pro-node-secret-0123456789';
/** A license signed with a key pair made here; the operator verifies it with the public key. */
const LICENSE = await signedLicense('bench');

/** One phase's times and the operator's peak resident memory then. */
type Phase = Run & { peakRssMiB: number };

const stack = await startBenchStack('operator-pro', 'bench-ce');
const { dir, cp, upstream } = stack;
await cp.kubectl(['create', 'namespace', 'bench-pro']);

/** N ApiDefinitions in `namespace`, listen paths `/<namespace>-<i>/`. */
function apis(namespace: string): { manifests: string[]; paths: string[] } {
  const paths = Array.from({ length: N }, (_, i) => `/${namespace}-${i}/`);
  const manifests = paths.map(
    (p, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: api-${i}, namespace: ${namespace}}
spec:
  name: api-${i}
  use_keyless: true
  proxy: {listen_path: ${p}, target_url: "${upstream.url}", strip_listen_path: true}
`,
  );
  return { manifests, paths };
}

/**
 * Starts an operator of organisation `org` (mode ce against `gw`, or as `env` says) watching
 * `namespace`, applies the N ApiDefinitions and polls `gw` until each serves; stops the operator.
 */
async function phase(
  namespace: string,
  gw: GatewayProc,
  org: string,
  env: Record<string, string>,
): Promise<Phase> {
  let operator: OperatorProc | undefined;
  try {
    operator = await startPhaseOperator(stack, gw, namespace, org, env);
    const { manifests, paths } = apis(namespace);
    const t0 = Date.now();
    const serving = timeToServe(gw, paths, t0);
    const applied = (await applyAll(cp, manifests)) - t0;
    const run = { ...summarize(N, await serving), applied };
    return { ...run, peakRssMiB: (await operatorMemory(operator)).peakRssMiB };
  } finally {
    await operator?.stop();
  }
}

let pg: TestPostgres | undefined;
let dashboard: DashboardProc | undefined;
let proGw: GatewayProc | undefined;
let ce: Phase;
let pro: Phase;
try {
  // Mode ce: the operator writes to the gateway's management API.
  ce = await phase('bench-ce', stack.gw, 'bench', {});
  console.log(`mode ce: ${JSON.stringify(ce)}`);

  // Mode pro: a dashboard, an organisation with the operator's system user, a gateway loading
  // from the dashboard (its notification stream open before the apply), the operator pushing there.
  pg = POSTGRES ? await startPostgres() : undefined;
  dashboard = await startDashboardProc({
    name: 'dashboard',
    logDir: dir,
    ...(pg === undefined
      ? { dataDir: join(dir, 'dashboard-data') }
      : { postgresUrl: await pg.createDatabase('bench') }),
    args: ['--node-secret', NODE_SECRET],
  });
  const tenant = await createTenant(dashboard.url, 'bench-pro');
  const gw = await startGateway({
    name: 'gateway-pro',
    secret: 'operator-pro-gateway-secret',
    dataDir: join(dir, 'gw-pro'),
    logDir: dir,
    env: {
      SVC_GW_DASHBOARD_URL: dashboard.url,
      SVC_GW_NODE_SECRET: NODE_SECRET,
      SVC_GW_DASHBOARD_ORGS: tenant.org,
    },
  });
  proGw = gw;
  await waitFor(`gateway-pro's dashboard notifications (log ${gw.logFile})`, () =>
    gw.log().includes('dashboard notifications open'),
  );
  pro = await phase('bench-pro', gw, tenant.org, {
    SVC_MODE: 'pro',
    SVC_URL: dashboard.url,
    SVC_AUTH: tenant.system.key,
    ...LICENSE,
  });
  console.log(`mode pro: ${JSON.stringify(pro)}`);
} finally {
  await proGw?.stop();
  await dashboard?.stop();
  await pg?.stop();
  await stack.stop();
}

const fmt = (ms: number): string => (ms / 1000).toFixed(2);
const row = (what: string, r: Phase): string =>
  `| ${what} | ${fmt(r.applied ?? NaN)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.total)} | ${r.peakRssMiB.toFixed(0)} |`;
const ratio = { p50: pro.p50 / ce.p50, p99: pro.p99 / ce.p99, total: pro.total / ce.total };
const met = ratio.p99 <= 1.5 && ratio.total <= 1.5;
const storage = POSTGRES
  ? "PostgreSQL, the chart's `storage=postgres`"
  : "SQLite, the chart's default storage";
const section = `## Operator, mode pro

Time from \`kubectl apply\` (server-side, ${APPLIERS} kubectl processes at once, as in "Operator") of
${N} ApiDefinitions until each serves traffic through a gateway, polled from the start of the
apply ("applied" is when the last kubectl returned), twice in one run on one API server, same
machine, same N: first the operator in mode ce writing to a gateway's management API, then the
operator in mode pro writing to a dashboard (storage: ${storage}), with a gateway in mode
pro loading from the dashboard (its notification stream open before the apply). Each phase runs a
fresh operator watching its own namespace. Seconds; memory is the operator's peak resident
(VmHWM).
Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}); generated by \`make bench-operator-pro\` on ${new Date().toISOString().slice(0, 10)}.

| ${N} ApiDefinitions | applied | p50 | p99 | total | operator peak RSS (MiB) |
|---|---|---|---|---|---|
${row('mode ce (operator to gateway)', ce)}
${row('mode pro (operator to dashboard to gateway)', pro)}
| ratio pro/ce | - | ${ratio.p50.toFixed(2)} | ${ratio.p99.toFixed(2)} | ${ratio.total.toFixed(2)} | - |

Target (issue 18, "Benchmark"): mode pro within 1.5 of mode ce in the same run (p99 and total):
**${met ? 'met' : 'missed'}** (p99 ${ratio.p99.toFixed(2)}, total ${ratio.total.toFixed(2)}).
`;
await writeSection('Operator, mode pro', section);
console.log(section);
