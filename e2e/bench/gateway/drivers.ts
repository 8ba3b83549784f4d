/**
 * The load drivers of the gateway benchmark: wrk, and tools/loadgen (Go) where a client
 * certificate must be presented; saturation runs (interleaved, the best kept) and runs paced at
 * half of a saturation rate, for the p99. `--quick` runs 2-second measurements to check the
 * script itself.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

// The load runs block the bench's process for minutes (wrk and loadgen run synchronously), and a
// kept-alive connection the gateway closed meanwhile fails the next request sent on it (EPIPE,
// "socket hang up"): the bench's own requests each take a new connection.
http.globalAgent = new http.Agent({ keepAlive: false });

/** The repository's root. */
export const root = join(import.meta.dirname, '..', '..', '..');
const quick = process.argv.includes('--quick');
export const DURATION_S = quick ? 2 : 10;
export const WARMUP_S = quick ? 1 : 3;
export const CONNECTIONS = 64;
export const WRK_THREADS = 2;
/**
 * OS threads of tools/loadgen (its GOMAXPROCS). One: on a machine it shares with the gateway, a
 * second thread took more from the server under test than it added to the load.
 */
export const LOADGEN_THREADS = 1;

/**
 * What a load generator loads: a URL, the headers of every request, and for tools/loadgen
 * (`via: 'loadgen'`; wrk otherwise) the client certificate to present and the CA of the server.
 */
export interface Load {
  url: string;
  headers?: Readonly<Record<string, string>>;
  via?: 'wrk' | 'loadgen';
  tls?: { ca: string; cert?: string; key?: string };
}

/** One wrk run. */
export interface Result {
  rps: number;
  p50ms: number;
  p99ms: number;
  connections: number;
}

function toMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (m === null) throw new Error(`unreadable latency ${text}`);
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/** The load generator binary, built (or found cached) by tools/build.sh. */
let loadgenBin = '';

/** Builds tools/loadgen (or finds it cached). */
export function ensureLoadgen(): void {
  const build = join(root, 'tools', 'build.sh');
  execFileSync(build, ['loadgen'], { stdio: 'inherit' });
  loadgenBin = join(execFileSync(build, ['--print'], { encoding: 'utf8' }).trim(), 'loadgen');
}

/**
 * Runs tools/loadgen (`rate`: paced at that many requests/s in all) and reads its JSON line:
 * requests/s and the 50th and 99th percentiles.
 */
function loadgen(load: Load, opts: { seconds: number; connections: number; rate?: number }): Result {
  const args = [
    ...['-url', load.url, '-c', String(opts.connections), '-d', `${opts.seconds}s`],
    ...['-threads', String(LOADGEN_THREADS)],
    ...Object.entries(load.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    ...(load.tls === undefined ? [] : ['-cacert', load.tls.ca]),
    ...(load.tls?.cert === undefined ? [] : ['-cert', load.tls.cert]),
    ...(load.tls?.key === undefined ? [] : ['-key', load.tls.key]),
    ...(opts.rate === undefined ? [] : ['-rate', String(Math.round(opts.rate))]),
  ];
  const out = execFileSync(loadgenBin, args, { encoding: 'utf8' });
  const r = JSON.parse(out) as Result & { non2xx: number; errors: number };
  if (r.non2xx > 0 || r.errors > 0)
    console.warn(`bench: loadgen reported for ${load.url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.rps, p50ms: r.p50ms, p99ms: r.p99ms, connections: opts.connections };
}

/** A saturation run of `load` with the generator it names. */
function measure(load: Load, opts: { seconds: number; connections: number }): Result {
  return load.via === 'loadgen' ? loadgen(load, opts) : wrk(load, opts);
}

/** Runs wrk and reads requests/s and the 50th and 99th percentiles. */
export function wrk(load: Load, opts: { seconds: number; connections: number; script?: string }): Result {
  const url = load.url;
  const args = [
    `-t${Math.min(WRK_THREADS, opts.connections)}`,
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    '--latency',
    ...Object.entries(load.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    ...(opts.script === undefined ? [] : ['-s', opts.script]),
    url,
  ];
  const out = execFileSync('wrk', args, { encoding: 'utf8' });
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1];
  const p50 = /^\s+50%\s+(\S+)/m.exec(out)?.[1];
  const p99 = /^\s+99%\s+(\S+)/m.exec(out)?.[1];
  if (rps === undefined || p50 === undefined || p99 === undefined)
    throw new Error(`unreadable wrk output:\n${out}`);
  const errors = /Non-2xx or 3xx responses: (\d+)|Socket errors: .*/.exec(out);
  if (errors !== null) console.warn(`bench: wrk reported errors for ${url}: ${errors[0]}`);
  return { rps: Number(rps), p50ms: toMs(p50), p99ms: toMs(p99), connections: opts.connections };
}

/** Interleaved runs per proxy, best kept: noise from the machine only ever slows a run down. */
export const ROUNDS = quick ? 1 : 2;

/** Saturation runs of every load, interleaved; the best run (requests/s) of each. */
export function saturate(loads: readonly Load[]): Result[] {
  for (const load of loads) measure(load, { seconds: WARMUP_S, connections: CONNECTIONS });
  const runs: Result[][] = loads.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    loads.forEach((load, i) => {
      runs[i]?.push(measure(load, { seconds: DURATION_S, connections: CONNECTIONS }));
    });
  }
  return runs.map((rs) => rs.reduce((best, x) => (x.rps > best.rps ? x : best)));
}

/**
 * The gateway paced at `target` requests/s: each connection waits `delay` ms between requests,
 * and the number of connections is corrected from the measured rate (up to five short tries;
 * the rate per connection falls as the load grows, so one correction is rarely enough). The
 * count whose probe came closest to the target is kept. Then ROUNDS measurements; all are
 * returned. tools/loadgen paces itself at a total rate: CONNECTIONS connections, no probing.
 */
function paced(load: Load, target: number, dir: string): Result[] {
  if (load.via === 'loadgen') {
    const opts = { connections: CONNECTIONS, rate: target };
    loadgen(load, { ...opts, seconds: WARMUP_S });
    return Array.from({ length: ROUNDS }, () => loadgen(load, { ...opts, seconds: DURATION_S }));
  }
  const delayMs = 2;
  const script = join(dir, 'paced.lua');
  writeFileSync(script, `function delay()\n  return ${delayMs}\nend\n`);
  let connections = Math.max(1, Math.round((target * (delayMs + 0.3)) / 1000));
  wrk(load, { seconds: WARMUP_S, connections, script });
  let best = { connections, miss: Infinity };
  for (let i = 0; i < 5; i++) {
    const probe = wrk(load, { seconds: Math.max(WARMUP_S, 3), connections, script });
    const off = probe.rps / target;
    if (Math.abs(off - 1) < best.miss) best = { connections, miss: Math.abs(off - 1) };
    if (best.miss < 0.05) break;
    connections = Math.max(1, Math.round(connections / off));
  }
  connections = best.connections;
  return Array.from({ length: ROUNDS }, () => wrk(load, { seconds: DURATION_S, connections, script }));
}

/** A proxy at half of its own saturation rate: every paced run, and the one with the best p99. */
export interface Half {
  target: number;
  best: Result;
  runs: readonly Result[];
}

/** A figure as the report writes it: thousands separated, `digits` decimals. */
export function fmt(n: number, digits = 2): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** Paces `load` at half of `saturated` requests/s. */
export function halfOf(load: Load, saturated: Result, dir: string): Half {
  const target = saturated.rps / 2;
  console.log(`bench: ${load.url} at ${fmt(target, 0)} requests/s`);
  const runs = paced(load, target, dir);
  return { target, runs, best: runs.reduce((best, x) => (x.p99ms < best.p99ms ? x : best)) };
}
