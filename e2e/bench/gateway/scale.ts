/**
 * The gateway at scale, in process (issue 33 item 4): route lookup, reload and memory with 1 and
 * with N keyless APIs (10,000 by default), compared in one run so that the machine's other load
 * cancels out in the ratios. `node --expose-gc e2e/bench/gateway/scale.ts [N] [seconds] [rounds]`.
 *
 * - lookup: `RouteTable.match` per second for the first, two middle ones (one changed by the
 *   reload) and the last API, and a path no API serves, against the one-API table (ratio wanted:
 *   at least 0.95); interleaved rounds, the best of each.
 * - reload: a full build of N APIs, then a build with one API changed reusing the others' routes.
 * - memory: heap held per compiled route (heapUsed after gc, divided by N).
 */
import { silentLogger } from '../../../lib/log.ts';
import { loadGatewayConfig } from '../../../gateway/config/load.ts';
import type { Store } from '../../../gateway/store/store.ts';
import { Dispatchers } from '../../../gateway/upstream/dispatchers.ts';
import { MemoryCounters } from '../../../gateway/limits/memory.ts';
import { LimitsGuard } from '../../../gateway/limits/guard.ts';
import { Sessions } from '../../../gateway/sessions/sessions.ts';
import { chain } from '../../../gateway/routes/chain.ts';
import type { CompileEnv } from '../../../gateway/routes/check.ts';
import { buildRouteTable, type CompileDeps } from '../../../gateway/routes/compile.ts';
import type { RouteTable } from '../../../gateway/pipeline/router.ts';

const n = Number(process.argv[2] ?? 10_000);
const seconds = Number(process.argv[3] ?? 1);
const rounds = Number(process.argv[4] ?? 3);
const env: CompileEnv = { listenPort: 8080, controlPort: undefined, tls: false };
const deps: CompileDeps = {
  store: {} as Store,
  counters: new MemoryCounters(),
  limits: new LimitsGuard({ failOpen: false, log: silentLogger() }),
  sessions: new Sessions({} as Store, { log: silentLogger() }),
  log: silentLogger(),
  config: loadGatewayConfig({ argv: ['--secret', 's'], env: {} }),
  now: Date.now,
  chain,
  dispatchers: new Dispatchers({ connectTimeoutMs: 1000, timeoutMs: 1000 }),
};

const id = (i: number): string => `api-${String(i).padStart(5, '0')}`;
function entry(i: number, version = 0): { id: string; value: unknown; text: string } {
  const value = {
    name: `API ${i}`,
    use_keyless: true,
    proxy: { listen_path: `/svc-${i}/v${version}/`, target_url: `http://127.0.0.1:${1000 + (i % 50)}` },
  };
  return { id: id(i), value, text: JSON.stringify(value) };
}

const gc = (): void => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g !== undefined) for (let i = 0; i < 3; i++) g();
};

/** A keyless API on a wildcard domain of its own (`*.d<i>.example.com`), listen path `/`. */
function wildcardEntry(i: number): { id: string; value: unknown; text: string } {
  const value = {
    name: `API ${i}`,
    use_keyless: true,
    domain: `*.d${i}.example.com`,
    proxy: { listen_path: '/', target_url: `http://127.0.0.1:${1000 + (i % 50)}` },
  };
  return { id: id(i), value, text: JSON.stringify(value) };
}

function lookupRate(table: RouteTable, path: string, want: string | undefined, host = '127.0.0.1'): number {
  if (table.match('main', host, path)?.id !== want) throw new Error(`${path} not served by ${want}`);
  let count = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let k = 0; k < 1000; k++) table.match('main', host, path);
    count += 1000;
  }
  return count / seconds;
}

async function main(): Promise<void> {
  const one = await buildRouteTable([entry(0)], env, deps);
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const all = Array.from({ length: n }, (_, i) => entry(i));
  const t0 = performance.now();
  const full = await buildRouteTable(all, env, deps);
  const fullMs = performance.now() - t0;
  gc();
  const heap1 = process.memoryUsage().heapUsed;
  const changed = all.map((e, i) => (i === n >> 1 ? entry(i, 1) : e));
  const t1 = performance.now();
  const again = await buildRouteTable(changed, env, deps, full.reusable);
  const reloadMs = performance.now() - t1;
  // More one-change reloads, each from the table before it (wall and CPU: the machine's other
  // load stretches the wall time, much less the CPU time).
  const more: { wall: number; cpu: number }[] = [];
  let last = again;
  for (let k = 0; k < 7; k++) {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    const next = await buildRouteTable(
      changed.map((e, i) => (i === (k * 1237) % n ? entry(i, 2 + k) : e)),
      env,
      deps,
      last.reusable,
    );
    const c = process.cpuUsage(c0);
    more.push({ wall: performance.now() - w0, cpu: (c.user + c.system) / 1000 });
    if (last !== again) await last.table.retire();
    last = next;
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? NaN;
  if (again.problems.length > 0) throw new Error(JSON.stringify(again.problems.slice(0, 3)));

  const wildOne = await buildRouteTable([wildcardEntry(0)], env, deps);
  const wildAll = await buildRouteTable(
    Array.from({ length: n }, (_, i) => wildcardEntry(i)),
    env,
    deps,
  );
  // Interleaved rounds, the best of each kept: the machine's other load only ever slows one down.
  const rows: [string, RouteTable, string, string | undefined, string?][] = [
    ['1 API', one.table, '/svc-0/v0/get', id(0)],
    ...[0, n >> 2, n >> 1, n - 1].map((i): [string, RouteTable, string, string] => [
      `${n} APIs, API ${i}`,
      again.table,
      `/svc-${i}/v${i === n >> 1 ? 1 : 0}/get`,
      id(i),
    ]),
    [`${n} APIs, no API (404)`, again.table, '/nothing/here/at/all', undefined],
    ['1 wildcard API', wildOne.table, '/get', id(0), 'h.d0.example.com'],
    ...[0, n >> 1, n - 1].map((i): [string, RouteTable, string, string, string] => [
      `${n} wildcard APIs, API ${i}`,
      wildAll.table,
      '/get',
      id(i),
      `h.d${i}.example.com`,
    ]),
  ];
  const best = rows.map(() => 0);
  for (let round = 0; round < rounds; round++)
    rows.forEach(([, table, path, want, host], k) => {
      best[k] = Math.max(best[k] ?? 0, lookupRate(table, path, want, host));
    });
  rows.forEach(([label, , , , host], k) => {
    const rate = best[k] ?? 0;
    // Each row against its one-API table: the plain one, or the wildcard one.
    const baseline = (host === undefined ? best[0] : best[rows.length - 4]) ?? 1;
    console.log(
      `lookup, ${label}: ${Math.round(rate).toLocaleString()} /s (${(rate / baseline).toFixed(2)})`,
    );
  });
  console.log(
    `build, ${n} APIs: ${fullMs.toFixed(0)} ms; reload with one changed: ${reloadMs.toFixed(1)} ms; 7 more: median ${med(more.map((m) => m.wall)).toFixed(1)} ms wall, ${med(more.map((m) => m.cpu)).toFixed(1)} ms CPU`,
  );
  console.log(
    `heap per route: ${((heap1 - heap0) / n / 1024).toFixed(1)} KiB (${((heap1 - heap0) / 2 ** 20).toFixed(0)} MiB for ${n})`,
  );
  await again.table.retire();
  await full.table.retire();
  await wildAll.table.retire();
}

await main();
process.exit(0);
