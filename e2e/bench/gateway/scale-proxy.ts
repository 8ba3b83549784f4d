/**
 * The gateway at 10,000 APIs, as a new user loads it (issue 33 item 4), for `make bench-gateway`:
 * two gateways of WORKERS workers on the files store, one serving 1 keyless API and one serving
 * 10,000 (written to its data directory before it starts), in front of the same nginx upstream,
 * loaded by wrk in interleaved runs (the best of ROUNDS kept). Rows: keyless requests/s with 1 API
 * and with 10,000 calling the first, a middle and the last API (wanted: at least 0.95 of the
 * one-API rate), each worker's resident memory with 1 and with 10,000 APIs, and a reload with one
 * API changed among the 10,000 (`GET /svc/reload`, every worker of the node). Writes the "Gateway
 * at scale" section of docs/benchmarks.md (not with `--quick`, which checks the script in 2-second
 * runs). `node e2e/bench/gateway/scale-proxy.ts [--quick]`; SVC_BENCH_SCALE_APIS for another count.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout } from 'node:timers/promises';
import { join } from 'node:path';
import { freePort, waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import { auth, WORKERS } from './cases.ts';
import { DURATION_S, fmt, ROUNDS, root, saturate, type Load, type Result } from './drivers.ts';
import { ensureTools, startNginx } from './nginx.ts';
import { start, stopAll } from './processes.ts';
import { loadAverage } from './report.ts';
import { RELEASE_QUIET_MS, RELEASE_TURN_MS } from '../../../gateway/server/memory.ts';

/** APIs of the large gateway. */
const N = Number(process.env.SVC_BENCH_SCALE_APIS ?? 10_000);
/** Reloads with one change, the median reported. */
const RELOADS = 5;

const apiId = (i: number): string => `scale-${String(i).padStart(5, '0')}`;
function definition(i: number, upstream: number, version = 0): Record<string, unknown> {
  return {
    api_id: apiId(i),
    name: `Scale ${String(i)}`,
    use_keyless: true,
    active: true,
    proxy: {
      listen_path: `/scale-${String(i)}/v${String(version)}/`,
      target_url: `http://127.0.0.1:${String(upstream)}`,
      strip_listen_path: true,
    },
  };
}

interface Gateway {
  port: number;
  dir: string;
  pid: number;
}

/** A gateway of WORKERS workers on a data directory holding `count` keyless APIs. */
async function startScaleGateway(base: string, count: number, upstream: number): Promise<Gateway> {
  const dir = join(base, `data-${String(count)}`);
  mkdirSync(join(dir, 'apis'), { recursive: true });
  for (let i = 0; i < count; i++)
    writeFileSync(join(dir, 'apis', `${apiId(i)}.json`), JSON.stringify(definition(i, upstream)));
  const port = await freePort();
  const child = start(
    process.execPath,
    [
      join(root, 'gateway', 'main.ts'),
      ...['--secret', auth['x-svc-authorization'], '--host', '127.0.0.1', '--port', String(port)],
      ...['--data-dir', dir, '--workers', String(WORKERS), '--log-level', 'warn'],
    ],
    `gateway (${String(count)} APIs)`,
  );
  await waitFor(
    `the gateway with ${String(count)} APIs`,
    async () => ((await send({ port, path: '/ready' })).status === 200 ? true : undefined),
    300_000,
  );
  // Every worker serves once /ready answered on each: a few more answers.
  for (let i = 0; i < 4 * WORKERS; i++) await send({ port, path: '/ready' });
  if (child.pid === undefined) throw new Error('gateway without a pid');
  return { port, dir, pid: child.pid };
}

/**
 * A process's memory in MiB: resident, its own (resident pages no other process shares), and its
 * proportional share (PSS: its own pages plus each shared page divided by the processes sharing it;
 * the node's processes' PSS add up to the memory they take together).
 */
interface Memory {
  rss: number;
  own: number;
  pss: number;
}

function memoryOf(pid: number): Memory {
  const rollup = readFileSync(`/proc/${String(pid)}/smaps_rollup`, 'utf8');
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(rollup)?.[1] ?? NaN);
  return {
    rss: kb('Rss') / 1024,
    own: (kb('Private_Clean') + kb('Private_Dirty')) / 1024,
    pss: kb('Pss') / 1024,
  };
}

/**
 * The memory of each worker of a gateway (the primary's children), once every worker runs and
 * a moment has passed: a worker gives back its first load's memory when it starts serving
 * (gateway/server/memory.ts).
 */
async function workersMemory(g: Gateway): Promise<Memory[]> {
  const pids = await waitFor(
    `${String(WORKERS)} workers`,
    () => {
      const out = execFileSync('pgrep', ['-P', String(g.pid)], { encoding: 'utf8' }).trim();
      const found = out.split('\n').filter((x) => x !== '');
      return found.length === WORKERS ? found : undefined;
    },
    30_000,
  );
  await setTimeout(2_000);
  return pids.map((pid) => memoryOf(Number(pid))).sort((a, b) => b.rss - a.rss);
}

/** Milliseconds of `GET /svc/reload` after one API's file changed, for each of RELOADS changes. */
async function reloads(g: Gateway, upstream: number): Promise<number[]> {
  const took: number[] = [];
  for (let k = 1; k <= RELOADS; k++) {
    const i = (1237 * k) % N;
    writeFileSync(join(g.dir, 'apis', `${apiId(i)}.json`), JSON.stringify(definition(i, upstream, k)));
    const t0 = performance.now();
    const res = await send({ port: g.port, path: '/svc/reload', headers: auth });
    took.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`reload answered ${String(res.status)}: ${res.text}`);
    // The change is served, and the path it left is not.
    for (let w = 0; w < 2 * WORKERS; w++) {
      const now = await send({ port: g.port, path: `/scale-${String(i)}/v${String(k)}/x` });
      const old = await send({ port: g.port, path: `/scale-${String(i)}/v${String(k - 1)}/x` });
      if (now.status !== 200 || old.status !== 404)
        throw new Error(
          `after the reload: ${String(now.status)} on the new path, ${String(old.status)} on the old`,
        );
    }
  }
  return took;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? NaN;

function writeSection(section: string): void {
  const file = join(root, 'docs', 'benchmarks.md');
  const doc = readFileSync(file, 'utf8');
  const start = doc.search(/^## Gateway at scale\s*$/m);
  if (start === -1) {
    const next = doc.search(/^## Operator\s*$/m);
    const at = next === -1 ? doc.length : next;
    writeFileSync(file, `${doc.slice(0, at)}${section}\n${doc.slice(at)}`);
    return;
  }
  const rest = doc.slice(start + 1);
  const end = rest.search(/^## /m);
  writeFileSync(file, `${doc.slice(0, start)}${section}\n${end === -1 ? '' : rest.slice(end)}`);
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  ensureTools();
  const base = mkdtempSync(join(tmpdir(), 'svc-gw-scale-'));
  try {
    const upstream = await freePort();
    await startNginx(base, { workers: 1, listen: upstream });
    const one = await startScaleGateway(base, 1, upstream);
    const t0 = performance.now();
    const many = await startScaleGateway(base, N, upstream);
    const readyMs = performance.now() - t0;
    const memOne = await workersMemory(one);
    const memMany = await workersMemory(many);
    const url = (g: Gateway, i: number): Load => ({
      url: `http://127.0.0.1:${String(g.port)}/scale-${String(i)}/v0/get`,
    });
    const called = [0, N >> 1, N - 1];
    console.log(
      `bench: keyless, 1 API against ${String(N)} APIs (first, middle, last), ${String(ROUNDS)} x ${String(DURATION_S)} s each, interleaved`,
    );
    const [base1, ...rows] = saturate([url(one, 0), ...called.map((i) => url(many, i))]) as [
      Result,
      ...Result[],
    ];
    const took = await reloads(many, upstream);
    const memAfter = await workersMemory(many);
    // Once the routes have been quiet, each worker in its turn gives back what the reloads freed.
    await setTimeout(RELEASE_QUIET_MS + WORKERS * RELEASE_TURN_MS);
    const memQuiet = await workersMemory(many);
    const ratios = rows.map((r) => r.rps / base1.rps);
    const worst = Math.min(...ratios);
    const row = (what: string, r: Result, ratio: number): string =>
      `| ${what} | ${fmt(r.rps, 0)} | ${fmt(ratio)} | ${fmt(r.p50ms)} ms | ${fmt(r.p99ms)} ms |`;
    const mem = (xs: Memory[]): string => xs.map((x) => `${fmt(x.rss, 0)} MiB`).join(', ');
    const own = (xs: Memory[]): string =>
      xs.map((x) => `${fmt(x.own, 0)} MiB, PSS ${fmt(x.pss, 0)}`).join('; ');
    const peak = (xs: Memory[]): number => Math.max(...xs.map((x) => x.rss));
    const section = `## Gateway at scale

\`make bench-gateway\` (e2e/bench/gateway/scale-proxy.ts), last run: load average ${loadBefore} before
the run. Two gateways of ${String(WORKERS)} workers on the files store, one serving 1 keyless API
and one serving ${N.toLocaleString('en')} (written to its data directory before it started, ready in
${fmt(readyMs / 1000, 1)} s), in front of one nginx upstream; wrk, ${String(ROUNDS)} x ${String(DURATION_S)} s per row,
interleaved, the best kept.

| Keyless | Requests/s | / 1 API | p50 | p99 |
| --- | ---: | ---: | ---: | ---: |
${row('1 API', base1, 1)}
${rows.map((r, k) => row(`${N.toLocaleString('en')} APIs, API ${String(called[k])}`, r, ratios[k] ?? NaN)).join('\n')}

Route lookup independent of the number of APIs (at least 0.95 of the one-API rate whichever API is
called): worst ${fmt(worst)}, ${worst >= 0.95 ? 'met' : 'missed'}.

Resident memory per worker (RSS; in brackets the worker's own, the resident pages no other process
shares, and its PSS, its own plus its share of the shared ones: RSS counts in each worker the Node
binary's code that all the node's processes share):
${mem(memOne)} (${own(memOne)}) with 1 API; ${mem(memMany)} (${own(memMany)}) with ${N.toLocaleString('en')};
${mem(memAfter)} (${own(memAfter)}) right after the load and the reloads below; ${mem(memQuiet)} (${own(memQuiet)})
once the routes had been quiet for ${fmt(RELEASE_QUIET_MS / 1000, 0)} s (each worker then gives back what the reloads
freed, gateway/server/memory.ts). Target at most 100 MiB per worker at ${N.toLocaleString('en')} APIs: RSS ${
      Math.max(peak(memMany), peak(memQuiet)) <= 100 ? 'met' : 'missed'
    }, own memory ${Math.max(...[...memMany, ...memQuiet].map((x) => x.own)) <= 100 ? 'met' : 'missed'}.

A reload with one API changed among ${N.toLocaleString('en')} (\`GET /svc/reload\`, answered once every
worker has swapped its table): median ${fmt(median(took), 0)} ms (${took.map((t) => fmt(t, 0)).join(', ')} ms);
target 50 ms, ${median(took) <= 50 ? 'met' : 'missed'}. Each is then served on every worker, its old path 404.
`;
    // A --quick run checks the script: its 2-second figures are not the benchmark's.
    if (!process.argv.includes('--quick')) writeSection(section);
    console.log(section);
  } finally {
    await stopAll();
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
