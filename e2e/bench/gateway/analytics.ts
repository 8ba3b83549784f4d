/**
 * The protected case with traffic analytics on (issue 34 item 5): a third gateway on the protected
 * case's Redis (the same API and key), sending a record of every request to a real dashboard
 * (`--analytics-dashboard-url`, SQLite), measured interleaved with the protected case (analytics
 * off) in the same run: the cost of analytics on the request path. After the runs, the gateway's
 * `svc_gateway_analytics_records_total` says how many records went to the dashboard and how many
 * were dropped (a full buffer, a batch the dashboard did not take), so the figure is not that of a
 * gateway dropping its records.
 *
 * Run alone, `node e2e/bench/gateway/analytics.ts [--quick]` measures just this pair (nginx as the
 * upstream, Redis, the two gateways, the dashboard) and prints the ratio, and the CPU time per
 * request of each gateway's processes (and of the dashboard, for analytics on), from `/proc`: a
 * figure a loaded machine disturbs less than requests/s; `make bench-gateway`
 * (run.ts) measures it with the other cases and writes it to docs/benchmarks.md.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import { protectedLoad, startGatewayProcess, startProtectedOnRedis } from './cases.ts';
import {
  CONNECTIONS,
  DURATION_S,
  ensureLoadgen,
  fmt,
  root,
  ROUNDS,
  WARMUP_S,
  wrk,
  type Load,
  type Result,
} from './drivers.ts';
import { ensureTools, startNginx } from './nginx.ts';
import { start, stopAll } from './processes.ts';

const NODE_SECRET = 'bench-node-secret-0123456789';
const DASHBOARD_SECRET = 'bench-dashboard-admin-0123456789';

/** Records of the analytics gateway by outcome (`svc_gateway_analytics_records_total`). */
export interface AnalyticsOutcomes {
  sent: number;
  dropped: number;
}

/** The protected case with analytics on: what it loads, and its records' outcomes so far. */
export interface AnalyticsCase {
  load: Load;
  outcomes(): Promise<AnalyticsOutcomes>;
  /** The ports of its gateway and of its dashboard (to find their processes). */
  port: number;
  dashboardPort: number;
}

/**
 * Starts a dashboard and the analytics gateway on the protected case's Redis (`redisPort`), after
 * `addProtected`: the gateway loads the protected API and key from Redis.
 */
export async function startAnalyticsCase(redisPort: number, dir: string): Promise<AnalyticsCase> {
  const dashboardPort = await freePort();
  const port = await freePort();
  start(
    process.execPath,
    [
      join(root, 'dashboard', 'main.ts'),
      ...['--host', '127.0.0.1', '--port', String(dashboardPort), '--data-dir', join(dir, 'dashboard')],
      ...['--admin-secret', DASHBOARD_SECRET, '--node-secret', NODE_SECRET, '--log-level', 'warn'],
    ],
    'dashboard',
  );
  await waitFor('the dashboard', async () =>
    (await send({ port: dashboardPort, path: '/ready' })).status === 200 ? true : undefined,
  );
  await startGatewayProcess(
    port,
    [
      ...['--store', `redis://127.0.0.1:${redisPort}`],
      ...['--analytics-dashboard-url', `http://127.0.0.1:${dashboardPort}`, '--node-secret', NODE_SECRET],
    ],
    'gateway (redis, analytics on)',
  );
  const load = protectedLoad(port);
  const r = await send({ port, path: new URL(load.url).pathname, headers: { ...load.headers }, fresh: true });
  if (r.status !== 200) throw new Error(`the protected API with analytics answers ${r.status}: ${r.text}`);
  return {
    load,
    port,
    dashboardPort,
    outcomes: async () => {
      // A connection of its own: the runs block this process for minutes (wrk runs synchronously),
      // and a kept-alive socket the gateway closed meanwhile fails its next write (EPIPE).
      const m = (await send({ port, path: '/metrics', fresh: true })).text;
      const n = (outcome: string): number => {
        const re = new RegExp(`svc_gateway_analytics_records_total\\{outcome="${outcome}"\\} (\\d+)`);
        return Number(re.exec(m)?.[1] ?? NaN);
      };
      return { sent: n('sent'), dropped: n('dropped_buffer_full') + n('dropped_send_failed') };
    },
  };
}

/** The records sent so far, once the gateway's buffer has gone out (its flush interval is 2 s). */
export async function settledOutcomes(c: AnalyticsCase): Promise<AnalyticsOutcomes> {
  let last = await c.outcomes();
  await waitFor('the analytics buffer to go out', async () => {
    await new Promise((r) => setTimeout(r, 2500));
    const now = await c.outcomes();
    const settled = now.sent === last.sent && now.dropped === last.dropped;
    last = now;
    return settled ? true : undefined;
  });
  return last;
}

/** The lines of the report for the pair. */
export function analyticsLines(off: Result, on: Result, outcomes: AnalyticsOutcomes): string {
  const ratio = on.rps / off.rps;
  return `Analytics on / off (protected case, same run): ${fmt(ratio)} (target 0.9): **${ratio >= 0.9 ? 'met' : 'missed'}**;
records sent to the dashboard ${fmt(outcomes.sent, 0)}, dropped ${fmt(outcomes.dropped, 0)}.`;
}

/** The processes whose command line has `--port <port>` (a gateway's primary and workers). */
function processesOn(port: number): number[] {
  const arg = `\0--port\0${String(port)}\0`;
  const out: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(arg)) out.push(Number(pid));
    } catch {
      // gone
    }
  }
  return out;
}

/** CPU time (user and system) of processes so far, in milliseconds (USER_HZ is 100). */
function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f =
        readFileSync(`/proc/${String(pid)}/stat`, 'latin1')
          .split(') ')[1]
          ?.split(' ') ?? [];
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone
    }
  }
  return ticks * 10;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
}

/**
 * `saturate` of the pair, also reading the CPU time of each gateway's processes (and of the
 * analytics gateway's dashboard, read 2.5 s after its run so that its last batch counts) per
 * request served: a figure the machine's load disturbs less than requests/s.
 */
async function saturateWithCpu(
  off: { load: Load; port: number },
  on: AnalyticsCase,
): Promise<{ runs: [Result, Result]; cpu: { off: number[]; on: number[]; dashboard: number[] } }> {
  const pids = { off: processesOn(off.port), on: processesOn(on.port), dash: processesOn(on.dashboardPort) };
  for (const load of [off.load, on.load]) wrk(load, { seconds: WARMUP_S, connections: CONNECTIONS });
  const best: Result[] = [];
  const cpu = { off: [] as number[], on: [] as number[], dashboard: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const which of ['off', 'on'] as const) {
      const load = which === 'off' ? off.load : on.load;
      const g0 = cpuMs(pids[which]);
      const d0 = cpuMs(pids.dash);
      const res = wrk(load, { seconds: DURATION_S, connections: CONNECTIONS });
      const g1 = cpuMs(pids[which]);
      if (which === 'on') await new Promise((resolve) => setTimeout(resolve, 2500));
      const served = res.rps * DURATION_S;
      cpu[which].push(((g1 - g0) * 1000) / served);
      if (which === 'on') cpu.dashboard.push(((cpuMs(pids.dash) - d0) * 1000) / served);
      const i = which === 'off' ? 0 : 1;
      const b = best[i];
      if (b === undefined || res.rps > b.rps) best[i] = res;
    }
  }
  return { runs: best as [Result, Result], cpu };
}

async function main(): Promise<void> {
  ensureTools();
  ensureLoadgen();
  const dir = mkdtempSync(join(tmpdir(), 'svc-gw-bench-analytics-'));
  try {
    const ports = { upstream: await freePort(), redis: await freePort(), protected: await freePort() };
    await startNginx(dir, { workers: 1, listen: ports.upstream });
    await startProtectedOnRedis(ports);
    const analytics = await startAnalyticsCase(ports.redis, dir);
    const off = protectedLoad(ports.protected);
    console.log('bench: protected, analytics off and on, interleaved');
    const { runs, cpu } = await saturateWithCpu({ load: off, port: ports.protected }, analytics);
    const [offRun, onRun] = runs;
    const outcomes = await settledOutcomes(analytics);
    console.log(
      `| protected, analytics off | ${fmt(offRun.rps, 0)} | ${fmt(offRun.p50ms)} ms | ${fmt(offRun.p99ms)} ms |`,
    );
    console.log(
      `| protected, analytics on | ${fmt(onRun.rps, 0)} | ${fmt(onRun.p50ms)} ms | ${fmt(onRun.p99ms)} ms |`,
    );
    console.log(analyticsLines(offRun, onRun, outcomes));
    const offUs = median(cpu.off);
    const onUs = median(cpu.on.map((g, i) => g + (cpu.dashboard[i] ?? NaN)));
    console.log(
      `CPU per request (medians of ${String(ROUNDS)} runs): off ${fmt(offUs, 1)} us; on ${fmt(onUs, 1)} us ` +
        `(gateway ${fmt(median(cpu.on), 1)}, dashboard ${fmt(median(cpu.dashboard), 1)}); off / on ${fmt(offUs / onUs)}.`,
    );
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
