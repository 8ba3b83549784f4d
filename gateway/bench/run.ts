/**
 * `make bench` (gateway part): proxying through the gateway against nginx as a reverse proxy, in
 * one run, with the same upstream (an nginx answering a small JSON body) and the same load
 * generator (wrk): keyless, token-authenticated (one key in the Authorization header, the
 * compiled chain on the fast path), JWT (RS256, one warm key) and protected (token, rate limit and
 * quota on Redis), an endpoint-feature mix (a version chosen by a header, a white list, a request
 * header transform and a URL rewrite on every request) and a cache hit (a keyless API with caching,
 * warmed so the upstream is never called). Mutual TLS needs a client certificate, which wrk cannot
 * send: it runs on an HTTPS listener of the gateway with tools/loadgen (Go, built by
 * tools/build.sh), and so does the token case over the same listener, for a like-for-like ratio.
 * Writes the figures to the "Gateway" section of docs/benchmarks.md.
 *
 * Measurements: saturation (fixed connections, 10 s each after a warm-up) for each, then the
 * gateway cases at half of their own saturation rate (wrk paced by a Lua `delay()`, loadgen by its
 * `-rate`), for their p99. `--quick` runs 2-second measurements to check the script itself.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { environment } from '../../lib/config.ts';
import { send } from '../testing/client.ts';
import { makeCert } from '../testing/client-certs.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const quick = process.argv.includes('--quick');
const DURATION_S = quick ? 2 : 10;
const WARMUP_S = quick ? 1 : 3;
const CONNECTIONS = 64;
const WRK_THREADS = 2;
const WORKERS = availableParallelism();
const SECRET = 'bench-secret';
/** The one key of the token-authenticated case, sent as `Authorization: <token>`. */
const TOKEN = 'bench-token-0123456789abcdef';
/** The key of the protected case: token, rate limit and quota, counted in Redis. */
const PROTECTED_TOKEN = 'bench-protected-0123456789abcdef';
/** Requests sent one by one to count Redis commands per protected request. */
const COUNTED_REQUESTS = 1000;
/**
 * OS threads of tools/loadgen (its GOMAXPROCS). One: on a machine it shares with the gateway, a
 * second thread took more from the server under test than it added to the load.
 */
const LOADGEN_THREADS = 1;
/** The organisation of the mutual TLS API and of its client certificate. */
const MTLS_ORG = 'bench';
/**
 * The endpoint-feature mix: the request header that chooses the version, and the header every
 * request carries for the header transform to delete.
 */
const MIX_HEADERS = { 'x-api-version': 'v1', 'x-drop': 'drop-me' } as const;
/**
 * The one path of the endpoint-feature mix's checks (rewritten to `/catalog/items/check`): the
 * upstream answers it with what it saw in `X-Seen` (the path, `x-bench`, `x-drop`); every loaded
 * request gets the plain answer of `location /`.
 */
const MIX_CHECK = '/mix/items/check';
/** The access log of the upstream's `/cache/` location: one line per cache miss. */
const cacheLog = (dir: string): string => join(dir, 'upstream-cache.log');

/**
 * What a load generator loads: a URL, the headers of every request, and for tools/loadgen
 * (`via: 'loadgen'`; wrk otherwise) the client certificate to present and the CA of the server.
 */
interface Load {
  url: string;
  headers?: Readonly<Record<string, string>>;
  via?: 'wrk' | 'loadgen';
  tls?: { ca: string; cert?: string; key?: string };
}

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
    location = /catalog/items/check {
      default_type application/json;
      add_header X-Seen "$request_uri|$http_x_bench|$http_x_drop";
      return 200 '{"hello":"from the upstream"}';
    }
    location /cache/ {
      access_log ${cacheLog(dir)};
      default_type application/json;
      return 200 '{"hello":"from the upstream"}';
    }
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

/** The load generator binary, built (or found cached) by tools/build.sh. */
let loadgenBin = '';

function ensureLoadgen(): void {
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
function wrk(load: Load, opts: { seconds: number; connections: number; script?: string }): Result {
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
const ROUNDS = quick ? 1 : 2;

/** Saturation runs of every load, interleaved; the best run (requests/s) of each. */
function saturate(loads: readonly Load[]): Result[] {
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

function fmt(n: number, digits = 2): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function versionOf(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error !== undefined) return 'unknown';
  return (
    `${r.stdout}${r.stderr}`
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? 'unknown'
  );
}

/** A proxy at half of its own saturation rate: every paced run, and the one with the best p99. */
interface Half {
  target: number;
  best: Result;
  runs: readonly Result[];
}

/** Paces `load` at half of `saturated` requests/s. */
function halfOf(load: Load, saturated: Result, dir: string): Half {
  const target = saturated.rps / 2;
  console.log(`bench: ${load.url} at ${fmt(target, 0)} requests/s`);
  const runs = paced(load, target, dir);
  return { target, runs, best: runs.reduce((best, x) => (x.p99ms < best.p99ms ? x : best)) };
}

function halfLine(what: string, h: Half): string {
  return `${what}: target ${fmt(h.target, 0)} requests/s, ${h.best.connections} connections, achieved
${fmt(h.best.rps, 0)} requests/s; p50 ${fmt(h.best.p50ms)} ms, p99 **${fmt(h.best.p99ms)} ms** (best of
${h.runs.length} runs; p99 of each: ${h.runs.map((r) => `${fmt(r.p99ms)} ms`).join(', ')}).`;
}

function met(ok: boolean): string {
  return ok ? 'met' : 'missed';
}

function writeReport(f: {
  nginx: Result;
  gw: Result;
  token: Result;
  floor: Result;
  pump: Result;
  half: Half;
  tokenHalf: Half;
  protectedRun: Result;
  protectedHalf: Half;
  redisPerRequest: number;
  /** Redis commands and script calls per request while the protected case is saturated. */
  redisLoaded: { commandsPerRequest: number; scriptsPerRequest: number };
  jwt: Result;
  jwtHalf: Half;
  tokenLoadgen: Result;
  tokenTls: Result;
  tokenTlsHalf: Half;
  mtls: Result;
  mtlsHalf: Half;
  mix: Result;
  cache: Result;
  /** Upstream calls of the cache API during its runs (warm-up and measured): misses. */
  cacheMisses: number;
}): string {
  const {
    nginx,
    gw,
    token,
    floor,
    pump,
    half,
    tokenHalf,
    protectedRun,
    protectedHalf,
    redisPerRequest,
    redisLoaded,
  } = f;
  const { jwt, jwtHalf, tokenLoadgen, tokenTls, tokenTlsHalf, mtls, mtlsHalf, mix, cache, cacheMisses } = f;
  const mixRatio = mix.rps / gw.rps;
  const cacheRatio = cache.rps / gw.rps;
  const protectedRatio = protectedRun.rps / nginx.rps;
  const jwtRatio = jwt.rps / token.rps;
  const mtlsRatio = mtls.rps / token.rps;
  const mtlsTlsRatio = mtls.rps / tokenTls.rps;
  const rpsRatio = gw.rps / nginx.rps;
  const tokenRatio = token.rps / nginx.rps;
  const row = (name: string, r: Result): string =>
    `| ${name} | ${fmt(r.rps, 0)} | ${fmt(r.rps / nginx.rps)} | ${fmt(r.p50ms)} ms | ${fmt(r.p99ms)} ms |`;
  const section = `## Gateway

Proxying through the gateway against nginx as a reverse proxy, measured by \`make bench\`
(\`gateway/bench/run.ts\`) on ${new Date().toISOString().slice(0, 10)}. Same upstream for all (a
separate nginx answering \`GET /\` with a 29-byte JSON body), same load generator (wrk,
${WRK_THREADS} threads, ${CONNECTIONS} keep-alive connections, ${DURATION_S} s after a ${WARMUP_S} s
warm-up; ${ROUNDS} runs per case, interleaved, the best kept), everything on one machine:
${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, shared by wrk, the proxy
under test and the upstream. The gateway runs ${WORKERS} workers (\`--workers\`, default: the
number of cores), nginx ${WORKERS} worker processes, both with keep-alive upstream connections and
X-Forwarded-* headers set.

- **keyless**: an API with \`use_keyless: true\` and nothing else (an empty chain).
- **token**: an API with \`use_keyless: false\`, every request carrying the one key in
  \`Authorization\`: the compiled chain (auth token, key state, access rights) runs on the fast
  path, the session from the per-process cache.
- **protected**: the realistic case, on a second gateway with the Redis store
  (\`--store redis://\`, a redis-server of its own): the token as above, plus a key rate limit
  and a quota (set high enough never to refuse during the run: 1,000,000,000 per 60 s), checked
  in Redis on every request: the checks of the requests a gateway process has at one turn of its
  event loop go to Redis as one atomic script called by SHA, which reads each window and counter
  once, decides every check in order and writes each back once (identical checks, the
  requests of one key, travel as one run with a count, each key once). One request alone: one script
  call, ${fmt(redisPerRequest)} Redis commands counting those the script runs (${COUNTED_REQUESTS}
  requests one after the other, \`INFO stats\` before and after). Saturated (${CONNECTIONS}
  connections, ${DURATION_S} s): ${redisLoaded.scriptsPerRequest.toFixed(3)} script calls (round
  trips) and ${redisLoaded.commandsPerRequest.toFixed(2)} Redis commands per request.
- **JWT**: an API with \`enable_jwt\` and \`jwt_signing_method: rsa\`, its \`jwt_source\` the
  base64 of a PEM public key (RSA 2048) and a default policy; every request carries the same
  RS256 token (\`Authorization: Bearer\`), so the key is warm (parsed once, at load) and the
  identity's session comes from the cache; the gateway remembers a verified token by its hash
  until it expires (at most 5 minutes), so the signature is verified once, and the time claims
  and policies on every request.
- **mTLS**: wrk cannot present a client certificate, so this case runs with
  \`tools/loadgen\` (Go, HTTP/1.1 keep-alive, ${CONNECTIONS} connections, ${LOADGEN_THREADS} thread)
  against an HTTPS listener of the same gateway (\`--tls-cert\`/\`--tls-key\`, ECDSA P-256, an API
  with \`protocol: https\` and a \`listen_port\`): an API with \`use_keyless: true\` and static
  mutual TLS (\`use_mutual_tls_auth\`, \`client_certificates\` the one client certificate,
  ECDSA P-256, uploaded to \`/svc/certs\`). The TLS handshake happens once per connection.
- **token over HTTPS**: the token API, served on that HTTPS listener (on the fast path, as plain
  HTTP is, once the TLS handshake is done), loaded with \`tools/loadgen\` like the mTLS case:
  the like-for-like reference for mTLS. The token case on plain HTTP is also loaded with
  \`tools/loadgen\`, to tell the load generator's share from TLS's.
- **endpoint-feature mix**: a keyless API whose version is chosen per request by a header
  (\`version_data.not_versioned: false\`, \`definition: {location: header, key: x-api-version}\`,
  two versions, no default; every request carries \`x-api-version: v1\`), and in that version, on
  the loaded path \`/items/{id}\` (under \`strip_listen_path\`), a \`white_list\` entry, a
  \`transform_headers\` entry (adds \`x-bench\`, deletes \`x-drop\`, which every request
  carries) and a \`url_rewrites\` entry (\`/items/(\\w+)\` to \`/catalog/items/$1\`): every
  request runs all four. Checked before the run: the upstream sees the rewritten path, the added
  header and not the deleted one; a path outside the white list, a request without the version
  header and the other version (whose white list leaves the path out) get 403. Served on the fast
  path (\`fastPathServes\`: an http upstream and no middleware that reads the body; none of these
  does, a rewrite only with a \`payload_matches\` trigger).
- **cache hit**: a keyless API with \`cache_options\` (\`enable_cache\`,
  \`cache_all_safe_requests\`, \`cache_timeout: 3600\` so nothing expires during the run), in the
  memory of each gateway worker (the store is not Redis), warmed before the run until every
  worker answers from its cache (\`X-Svc-Cached-Response: 1\`): ${cacheMisses} upstream calls
  during its runs (the upstream's access log of that path). Also on the fast path (the cache
  middleware reads request heads only; a hit is answered from the chain).

| Proxy | Requests/s | / nginx keyless | p50 | p99 |
| --- | ---: | ---: | ---: | ---: |
${row('nginx (reverse proxy), keyless', nginx)}
${row('svc gateway, keyless', gw)}
${row('svc gateway, endpoint-feature mix (version by header, white list, header transform, URL rewrite)', mix)}
${row('svc gateway, cache hit (cache_all_safe_requests, memory store)', cache)}
${row('svc gateway, token (one key, Authorization header)', token)}
${row('svc gateway, protected (token + rate limit + quota, Redis store)', protectedRun)}
${row('svc gateway, JWT (RS256, one warm key, Authorization header)', jwt)}
${row('svc gateway, token, plain HTTP (tools/loadgen)', tokenLoadgen)}
${row('svc gateway, token over HTTPS (tools/loadgen)', tokenTls)}
${row('svc gateway, mTLS (static client certificate, HTTPS, tools/loadgen)', mtls)}
${row('Node floor: node:http + one undici dispatch, no gateway logic', floor)}
${row('Node byte pump: TCP piped to the upstream, no HTTP parsing', pump)}

Gateway keyless / Node floor: ${fmt(gw.rps / floor.rps)}; token / keyless: ${fmt(token.rps / gw.rps)};
endpoint-feature mix / keyless: ${fmt(mixRatio)}; cache hit / keyless: ${fmt(cacheRatio)};
JWT / token: ${fmt(jwtRatio)}; mTLS / token (plain HTTP, wrk): ${fmt(mtlsRatio)}; mTLS / token over
HTTPS (same listener, same tool): ${fmt(mtlsTlsRatio)}; token, tools/loadgen / wrk (plain HTTP):
${fmt(tokenLoadgen.rps / token.rps)}; token over HTTPS / plain HTTP (tools/loadgen):
${fmt(tokenTls.rps / tokenLoadgen.rps)}.

At half of its own saturation rate (wrk paced with a 2 ms delay between requests; tools/loadgen
paced at the rate, ${CONNECTIONS} connections):

- ${halfLine('keyless', half)}
- ${halfLine('token', tokenHalf)}
- ${halfLine('protected', protectedHalf)}
- ${halfLine('JWT', jwtHalf)}
- ${halfLine('token over HTTPS', tokenTlsHalf)}
- ${halfLine('mTLS', mtlsHalf)}

The Node floor is the ceiling of any proxy built on \`node:http\` and undici on this machine:
the gap between it and nginx is the cost of Node's HTTP stack (V8, the HTTP parser and
streams, per request), the gap between the gateway and the floor is the gateway's own work
(routing, the chain, header rules). The byte pump reads no HTTP at all, so it bounds any proxy
written in Node from above.

Targets:

- keyless requests/s at least half of nginx's: **${met(rpsRatio >= 0.5)}** (${fmt(rpsRatio * 100, 1)} %);
  p99 under 5 ms at half of its saturation: **${met(half.best.p99ms < 5)}** (${fmt(half.best.p99ms)} ms).
- token-authenticated requests/s at least 0.45 of nginx keyless: **${met(tokenRatio >= 0.45)}**
  (${fmt(tokenRatio * 100, 1)} %); p99 under 5 ms at half of its own saturation:
  **${met(tokenHalf.best.p99ms < 5)}** (${fmt(tokenHalf.best.p99ms)} ms).
- protected (token + rate limit + quota, Redis) requests/s at least 0.35 of nginx keyless:
  **${met(protectedRatio >= 0.35)}** (${fmt(protectedRatio * 100, 1)} %); p99 under 5 ms at half of its
  own saturation: **${met(protectedHalf.best.p99ms < 5)}** (${fmt(protectedHalf.best.p99ms)} ms).
- JWT (RS256, warm key) requests/s at least 0.8 of token-authenticated, same run:
  **${met(jwtRatio >= 0.8)}** (${fmt(jwtRatio * 100, 1)} %).
- mTLS requests/s at least 0.8 of token-authenticated, same run: against the token on plain
  HTTP with wrk (the target as written) **${met(mtlsRatio >= 0.8)}** (${fmt(mtlsRatio * 100, 1)} %);
  against the token over the same HTTPS listener with the same tool (like for like)
  **${met(mtlsTlsRatio >= 0.8)}** (${fmt(mtlsTlsRatio * 100, 1)} %).
- mix / keyless: ${fmt(mixRatio)} (target 0.8): **${met(mixRatio >= 0.8)}**; the endpoint-feature mix
  (version by header, white list, header transform, URL rewrite) against keyless, same run.
- cache hit / keyless: ${fmt(cacheRatio)} (target > 1): **${met(cacheRatio > 1)}**; a cache hit
  against keyless proxying, same run.

Load average before the run: ${loadBefore} (other work on the machine lowers every figure).
Versions: ${versionOf(process.execPath, ['--version'])} (gateway), ${versionOf('nginx', ['-v'])},
${versionOf('wrk', ['--version'])}, tools/loadgen on ${versionOf('go', ['version'])}.
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

/** Starts `node gateway/main.ts` on `port` with the bench's settings and waits until it is ready. */
async function startGatewayProcess(port: number, storeArgs: string[], label: string): Promise<void> {
  start(
    process.execPath,
    [
      join(root, 'gateway', 'main.ts'),
      ...['--secret', SECRET, '--host', '127.0.0.1', '--port', String(port), ...storeArgs],
      ...['--workers', String(WORKERS), '--log-level', 'warn'],
    ],
    label,
  );
  await waitFor(
    `the ${label}`,
    async () => ((await send({ port, path: '/ready' })).status === 200 ? true : undefined),
    20_000,
  );
}

/** A self-signed server certificate for 127.0.0.1 (EC P-256), made with openssl in `dir`. */
function serverCert(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost'],
      ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

/** GET over HTTPS on 127.0.0.1, presenting `client` (PEM) when given: the status and the body. */
function httpsGet(
  port: number,
  path: string,
  opts: { headers?: Record<string, string>; client?: { cert: string; key: string } } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        rejectUnauthorized: false,
        ...(opts.headers === undefined ? {} : { headers: opts.headers }),
        ...opts.client,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  ensureTools();
  ensureLoadgen();
  const dir = mkdtempSync(join(tmpdir(), 'svc-gw-bench-'));
  try {
    const [upstream, nginxPort, gatewayPort, floorPort, pumpPort, redisPort, protectedPort, tlsPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
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

    const server = serverCert(dir);
    await startGatewayProcess(
      gatewayPort,
      ['--data-dir', join(dir, 'data'), '--tls-cert', server.certFile, '--tls-key', server.keyFile],
      'gateway',
    );
    const auth = { 'x-svc-authorization': SECRET };
    const post = async (path: string, body: unknown): Promise<unknown> => {
      const r = await send({
        port: gatewayPort,
        method: 'POST',
        path,
        headers: auth,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      if (r.status !== 200) throw new Error(`POST ${path} failed: ${r.status} ${r.text}`);
      return r.json;
    };
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
    const keyed = {
      api_id: 'bench-token',
      name: 'bench-token',
      use_keyless: false,
      proxy: { listen_path: '/token/', strip_listen_path: true, target_url: `http://127.0.0.1:${upstream}` },
    };
    const addedKeyed = await send({
      port: gatewayPort,
      method: 'POST',
      path: '/svc/apis',
      headers: auth,
      body: JSON.stringify(keyed),
    });
    if (addedKeyed.status !== 200) throw new Error(`adding the keyed API failed: ${addedKeyed.text}`);
    const upstreamUrl = `http://127.0.0.1:${upstream}`;
    const https = { protocol: 'https', listen_port: tlsPort };
    // The token API again, on the HTTPS listener: the like-for-like reference of mTLS.
    await post('/svc/apis', {
      ...keyed,
      ...https,
      api_id: 'bench-token-tls',
      name: 'bench-token-tls',
      proxy: { listen_path: '/token-tls/', strip_listen_path: true, target_url: upstreamUrl },
    });
    // JWT: RS256 with a PEM public key, one token for the whole run (a warm key).
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await post('/svc/policies', {
      id: 'bench-jwt',
      name: 'bench-jwt',
      state: 'active',
      access_rights: { 'bench-jwt': { api_id: 'bench-jwt', versions: ['Default'] } },
    });
    await post('/svc/apis', {
      api_id: 'bench-jwt',
      name: 'bench-jwt',
      use_keyless: false,
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: Buffer.from(rsaPem).toString('base64'),
      jwt_default_policies: ['bench-jwt'],
      proxy: { listen_path: '/jwt/', strip_listen_path: true, target_url: upstreamUrl },
    });
    const jwtToken = await new SignJWT({ sub: 'bench-user' })
      .setProtectedHeader({ alg: 'RS256' })
      .sign(rsa.privateKey);
    // Static mutual TLS: one client certificate, uploaded, the API's only allowed one.
    const client = await makeCert('bench-client');
    const clientFiles = { cert: join(dir, 'client.crt'), key: join(dir, 'client.key') };
    writeFileSync(clientFiles.cert, client.cert);
    writeFileSync(clientFiles.key, client.key);
    const uploaded = (await post(`/svc/certs?org_id=${MTLS_ORG}`, client.cert)) as { id?: string };
    if (uploaded.id === undefined)
      throw new Error(`uploading the client certificate returned no ID: ${JSON.stringify(uploaded)}`);
    await post('/svc/apis', {
      ...https,
      api_id: 'bench-mtls',
      name: 'bench-mtls',
      org_id: MTLS_ORG,
      use_keyless: true,
      use_mutual_tls_auth: true,
      client_certificates: [uploaded.id],
      proxy: { listen_path: '/mtls/', strip_listen_path: true, target_url: upstreamUrl },
    });
    // The endpoint-feature mix: the version by a header; in it, on /items/{id}, a white list
    // entry, a request header transform and a URL rewrite, so every loaded request runs all four.
    const items = '/items/{id}';
    await post('/svc/apis', {
      api_id: 'bench-mix',
      name: 'bench-mix',
      use_keyless: true,
      proxy: { listen_path: '/mix/', strip_listen_path: true, target_url: upstreamUrl },
      definition: { location: 'header', key: 'x-api-version' },
      version_data: {
        not_versioned: false,
        default_version: '',
        versions: {
          v1: {
            name: 'v1',
            use_extended_paths: true,
            extended_paths: {
              white_list: [{ path: items, method_actions: { GET: { action: 'no_action' } } }],
              transform_headers: [
                { path: items, method: 'GET', add_headers: { 'x-bench': '1' }, delete_headers: ['x-drop'] },
              ],
              url_rewrites: [
                {
                  path: items,
                  method: 'GET',
                  match_pattern: '/items/(\\w+)',
                  rewrite_to: '/catalog/items/$1',
                },
              ],
            },
          },
          v2: { name: 'v2', use_extended_paths: true, extended_paths: { white_list: [{ path: '/other' }] } },
        },
      },
    });
    // The cache hit: every GET cached for longer than the run (the upstream's /cache/ is logged).
    await post('/svc/apis', {
      api_id: 'bench-cache',
      name: 'bench-cache',
      use_keyless: true,
      proxy: { listen_path: '/cache/', target_url: upstreamUrl },
      cache_options: {
        enable_cache: true,
        cache_all_safe_requests: true,
        cache_timeout: 3600,
        cache_response_codes: [200],
      },
    });
    const key = await send({
      port: gatewayPort,
      method: 'POST',
      path: `/svc/keys/${TOKEN}`,
      headers: auth,
      body: JSON.stringify({
        org_id: '',
        access_rights: {
          'bench-token': { api_id: 'bench-token', versions: ['Default'] },
          'bench-token-tls': { api_id: 'bench-token-tls', versions: ['Default'] },
        },
      }),
    });
    if (key.status !== 200) throw new Error(`adding the key failed: ${key.text}`);
    const reloaded = await send({ port: gatewayPort, path: '/svc/reload', headers: auth });
    if (reloaded.status !== 200) throw new Error(`reload failed: ${reloaded.text}`);

    // The protected case: a second gateway on a redis-server of its own.
    start(
      'redis-server',
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      'redis',
    );
    await waitFor('redis', () => {
      try {
        return execFileSync('redis-cli', ['-p', String(redisPort), 'ping'], { encoding: 'utf8' }).trim() ===
          'PONG'
          ? true
          : undefined;
      } catch {
        return undefined;
      }
    });
    await startGatewayProcess(
      protectedPort,
      ['--store', `redis://127.0.0.1:${redisPort}`],
      'gateway (redis)',
    );
    const protectedApi = {
      api_id: 'bench-protected',
      name: 'bench-protected',
      use_keyless: false,
      proxy: {
        listen_path: '/protected/',
        strip_listen_path: true,
        target_url: `http://127.0.0.1:${upstream}`,
      },
    };
    for (const [path, body] of [
      ['/svc/apis', protectedApi],
      [
        `/svc/keys/${PROTECTED_TOKEN}`,
        {
          rate: 1_000_000_000,
          per: 60,
          quota_max: 1_000_000_000,
          quota_renewal_rate: 86_400,
          access_rights: { 'bench-protected': { api_id: 'bench-protected', versions: ['Default'] } },
        },
      ],
    ] as const) {
      const r = await send({
        port: protectedPort,
        method: 'POST',
        path,
        headers: auth,
        body: JSON.stringify(body),
      });
      if (r.status !== 200) throw new Error(`${path} failed: ${r.text}`);
    }
    const reloadedRedis = await send({ port: protectedPort, path: '/svc/reload/group', headers: auth });
    if (reloadedRedis.status !== 200) throw new Error(`reload failed: ${reloadedRedis.text}`);
    const commands = (): number => {
      const info = execFileSync('redis-cli', ['-p', String(redisPort), 'info', 'stats'], {
        encoding: 'utf8',
      });
      return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN);
    };
    // Warm the session caches, then count the commands of COUNTED_REQUESTS requests.
    for (let i = 0; i < 20; i++) {
      await send({ port: protectedPort, path: '/protected/', headers: { Authorization: PROTECTED_TOKEN } });
    }
    const before = commands();
    for (let i = 0; i < COUNTED_REQUESTS; i++) {
      const r = await send({
        port: protectedPort,
        path: '/protected/',
        headers: { Authorization: PROTECTED_TOKEN },
      });
      if (r.status !== 200) throw new Error(`the protected API answers ${r.status}: ${r.text}`);
    }
    // One INFO call is itself a command.
    const redisPerRequest = (commands() - before - 1) / COUNTED_REQUESTS;
    start(
      process.execPath,
      [join(root, 'gateway', 'bench', 'byte-pump.ts'), String(pumpPort), String(upstream), String(WORKERS)],
      'byte pump',
    );
    await waitFor('the byte pump', async () =>
      (await send({ port: pumpPort, path: '/' })).status === 200 ? true : undefined,
    );
    const tlsBase = `https://127.0.0.1:${tlsPort}`;
    const loads: Record<
      | 'nginx'
      | 'gw'
      | 'token'
      | 'protected'
      | 'floor'
      | 'pump'
      | 'jwt'
      | 'tokenLoadgen'
      | 'tokenTls'
      | 'mtls'
      | 'mix'
      | 'cache',
      Load
    > = {
      nginx: { url: `http://127.0.0.1:${nginxPort}/` },
      gw: { url: `http://127.0.0.1:${gatewayPort}/` },
      token: { url: `http://127.0.0.1:${gatewayPort}/token/`, headers: { Authorization: TOKEN } },
      protected: {
        url: `http://127.0.0.1:${protectedPort}/protected/`,
        headers: { Authorization: PROTECTED_TOKEN },
      },
      floor: { url: `http://127.0.0.1:${floorPort}/` },
      pump: { url: `http://127.0.0.1:${pumpPort}/` },
      jwt: { url: `http://127.0.0.1:${gatewayPort}/jwt/`, headers: { Authorization: `Bearer ${jwtToken}` } },
      tokenLoadgen: {
        url: `http://127.0.0.1:${gatewayPort}/token/`,
        headers: { Authorization: TOKEN },
        via: 'loadgen',
      },
      tokenTls: {
        url: `${tlsBase}/token-tls/`,
        headers: { Authorization: TOKEN },
        via: 'loadgen',
        tls: { ca: server.certFile },
      },
      mtls: {
        url: `${tlsBase}/mtls/`,
        via: 'loadgen',
        tls: { ca: server.certFile, ...clientFiles },
      },
      mix: { url: `http://127.0.0.1:${gatewayPort}/mix/items/42`, headers: MIX_HEADERS },
      cache: { url: `http://127.0.0.1:${gatewayPort}/cache/` },
    };
    for (const load of Object.values(loads)) {
      const { port, pathname, protocol } = new URL(load.url);
      const r =
        protocol === 'https:'
          ? await httpsGet(Number(port), pathname, {
              headers: { ...load.headers },
              ...(load.tls?.cert === undefined ? {} : { client: { cert: client.cert, key: client.key } }),
            })
          : await send({ port: Number(port), path: pathname, headers: { ...load.headers } });
      if (r.status !== 200 || !r.text.includes('from the upstream'))
        throw new Error(`${load.url} does not proxy: ${r.status} ${r.text}`);
    }
    const refused = await send({ port: gatewayPort, path: '/token/' });
    if (refused.status !== 401) throw new Error(`the keyed API answers ${refused.status} without the key`);
    const noJwt = await send({
      port: gatewayPort,
      path: '/jwt/',
      headers: { Authorization: 'Bearer x.y.z' },
    });
    if (noJwt.status !== 403) throw new Error(`the JWT API answers ${noJwt.status} to a bad token`);
    const noCert = await httpsGet(tlsPort, '/mtls/');
    if (noCert.status !== 401) throw new Error(`the mTLS API answers ${noCert.status} without a certificate`);
    // The mix: the upstream sees the rewritten path, the added header and not the deleted one.
    const seen = await send({ port: gatewayPort, path: MIX_CHECK, headers: { ...MIX_HEADERS } });
    if (seen.status !== 200 || seen.headers['x-seen'] !== '/catalog/items/check|1|')
      throw new Error(
        `the mix API does not rewrite and transform: ${seen.status} x-seen ${String(seen.headers['x-seen'])}`,
      );
    for (const [what, path, headers] of [
      ['a path outside the white list', '/mix/orders', MIX_HEADERS],
      ['a request without the version header', '/mix/items/42', {}],
      ['the other version', '/mix/items/42', { ...MIX_HEADERS, 'x-api-version': 'v2' }],
    ] as const) {
      const r = await send({ port: gatewayPort, path, headers: { ...headers } });
      if (r.status !== 403) throw new Error(`the mix API answers ${r.status} to ${what}: ${r.text}`);
    }
    // The cache: fresh connections take the workers in turn; warm until each answers a hit.
    let hits = 0;
    for (let i = 0; hits < 2 * WORKERS; i++) {
      if (i >= 50 * WORKERS) throw new Error(`the cache API answers no hits (${hits} in a row)`);
      const r = await send({ port: gatewayPort, path: '/cache/', fresh: true });
      if (r.status !== 200 || !r.text.includes('from the upstream'))
        throw new Error(`the cache API does not proxy: ${r.status} ${r.text}`);
      hits = r.headers['x-svc-cached-response'] === '1' ? hits + 1 : 0;
    }
    const upstreamCalls = (): number =>
      existsSync(cacheLog(dir)) ? readFileSync(cacheLog(dir), 'utf8').split('\n').length - 1 : 0;
    const callsBefore = upstreamCalls();

    console.log(
      `bench: nginx, the gateway (keyless, endpoint-feature mix, cache hit, token, protected on Redis, JWT; token and mTLS over HTTPS with tools/loadgen), the Node floor and the byte pump, ${ROUNDS} x ${DURATION_S} s each, interleaved`,
    );
    const [nginx, gw, mix, cache, token, protectedRun, floor, pump, jwt, tokenLoadgen, tokenTls, mtls] =
      saturate([
        loads.nginx,
        loads.gw,
        loads.mix,
        loads.cache,
        loads.token,
        loads.protected,
        loads.floor,
        loads.pump,
        loads.jwt,
        loads.tokenLoadgen,
        loads.tokenTls,
        loads.mtls,
      ]) as [Result, Result, Result, Result, Result, Result, Result, Result, Result, Result, Result, Result];
    const cacheMisses = upstreamCalls() - callsBefore;
    if (cacheMisses > 0)
      console.warn(`bench: the cache API called its upstream ${cacheMisses} times under load`);
    // Redis under load: the protected case saturated again, Redis's counters read around it.
    const stats = (): { commands: number; scripts: number } => {
      const info = execFileSync('redis-cli', ['-p', String(redisPort), 'info', 'all'], { encoding: 'utf8' });
      return {
        commands: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN),
        scripts: Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0),
      };
    };
    const s0 = stats();
    const loaded = wrk(loads.protected, { seconds: DURATION_S, connections: CONNECTIONS });
    const s1 = stats();
    const loadedRequests = loaded.rps * DURATION_S;
    const redisLoaded = {
      commandsPerRequest: (s1.commands - s0.commands - 1) / loadedRequests,
      scriptsPerRequest: (s1.scripts - s0.scripts) / loadedRequests,
    };
    const half = halfOf(loads.gw, gw, dir);
    const tokenHalf = halfOf(loads.token, token, dir);
    const protectedHalf = halfOf(loads.protected, protectedRun, dir);
    const jwtHalf = halfOf(loads.jwt, jwt, dir);
    const tokenTlsHalf = halfOf(loads.tokenTls, tokenTls, dir);
    const mtlsHalf = halfOf(loads.mtls, mtls, dir);
    console.log(
      writeReport({
        nginx,
        gw,
        token,
        floor,
        pump,
        half,
        tokenHalf,
        protectedRun,
        protectedHalf,
        redisPerRequest,
        redisLoaded,
        jwt,
        jwtHalf,
        tokenLoadgen,
        tokenTls,
        tokenTlsHalf,
        mtls,
        mtlsHalf,
        mix,
        cache,
        cacheMisses,
      }),
    );
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
