/**
 * The gateway benchmark's report: the "Gateway" section of docs/benchmarks.md, written from the
 * figures of a run (what each case is, the table, the ratios, the paced runs, the targets).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { COUNTED_REQUESTS, WORKERS } from './cases.ts';
import {
  CONNECTIONS,
  DURATION_S,
  fmt,
  LOADGEN_THREADS,
  ROUNDS,
  root,
  WARMUP_S,
  WRK_THREADS,
  type Half,
  type Result,
} from './drivers.ts';
import { versionOf } from './processes.ts';
import type { TcpResult } from './tcp.ts';
import { analyticsLines, type AnalyticsOutcomes } from './analytics.ts';

/** 1-minute load average before the run: other work on the machine skews every figure. */
export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ')[0] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

function halfLine(what: string, h: Half): string {
  return `${what}: target ${fmt(h.target, 0)} requests/s, ${h.best.connections} connections, achieved
${fmt(h.best.rps, 0)} requests/s; p50 ${fmt(h.best.p50ms)} ms, p99 **${fmt(h.best.p99ms)} ms** (best of
${h.runs.length} runs; p99 of each: ${h.runs.map((r) => `${fmt(r.p99ms)} ms`).join(', ')}).`;
}

function met(ok: boolean): string {
  return ok ? 'met' : 'missed';
}

/** Writes the figures to docs/benchmarks.md and returns the section. */
export function writeReport(f: {
  /** The 1-minute load average before the run (`loadAverage`). */
  loadBefore: string;
  nginx: Result;
  gw: Result;
  token: Result;
  floor: Result;
  pump: Result;
  half: Half;
  tokenHalf: Half;
  protectedRun: Result;
  protectedHalf: Half;
  /** The protected case with analytics on (analytics.ts), and its records' outcomes. */
  protectedAnalytics: Result;
  analyticsOutcomes: AnalyticsOutcomes;
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
  /** redis-benchmark PING directly and through a `protocol: tcp` API. */
  tcp: { direct: TcpResult; gateway: TcpResult };
}): string {
  const tcpRatio = f.tcp.gateway.rps / f.tcp.direct.rps;
  const tcpRow = (name: string, r: TcpResult): string =>
    `| ${name} | ${fmt(r.rps, 0)} | ${fmt(r.rps / f.tcp.direct.rps)} | ${fmt(r.p50ms)} ms | ${fmt(r.p99ms)} ms |`;
  const mixRatio = f.mix.rps / f.gw.rps;
  const cacheRatio = f.cache.rps / f.gw.rps;
  const protectedRatio = f.protectedRun.rps / f.nginx.rps;
  const jwtRatio = f.jwt.rps / f.token.rps;
  const mtlsRatio = f.mtls.rps / f.token.rps;
  const mtlsTlsRatio = f.mtls.rps / f.tokenTls.rps;
  const rpsRatio = f.gw.rps / f.nginx.rps;
  const tokenRatio = f.token.rps / f.nginx.rps;
  const row = (name: string, r: Result): string =>
    `| ${name} | ${fmt(r.rps, 0)} | ${fmt(r.rps / f.nginx.rps)} | ${fmt(r.p50ms)} ms | ${fmt(r.p99ms)} ms |`;
  const section = `## Gateway

Proxying through the gateway against nginx as a reverse proxy, measured by \`make bench\`
(\`e2e/bench/gateway/\`) on ${new Date().toISOString().slice(0, 10)}. Same upstream for all (a
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
  call, ${fmt(f.redisPerRequest)} Redis commands counting those the script runs (${COUNTED_REQUESTS}
  requests one after the other, \`INFO stats\` before and after). Saturated (${CONNECTIONS}
  connections, ${DURATION_S} s): ${f.redisLoaded.scriptsPerRequest.toFixed(3)} script calls (round
  trips) and ${f.redisLoaded.commandsPerRequest.toFixed(2)} Redis commands per request.
- **protected with analytics on**: the protected case's API and key on a third gateway on the
  same Redis, sending a record of every request (sample rate 1) to a real dashboard (SQLite,
  \`--analytics-dashboard-url\`, batches every 2 s), measured interleaved with the protected case
  (analytics off) in the same run (e2e/bench/gateway/analytics.ts).
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
  worker answers from its cache (\`X-Svc-Cached-Response: 1\`): ${f.cacheMisses} upstream calls
  during its runs (the upstream's access log of that path). Also on the fast path (the cache
  middleware reads request heads only; a hit is answered from the chain).

| Proxy | Requests/s | / nginx keyless | p50 | p99 |
| --- | ---: | ---: | ---: | ---: |
${row('nginx (reverse proxy), keyless', f.nginx)}
${row('svc gateway, keyless', f.gw)}
${row('svc gateway, endpoint-feature mix (version by header, white list, header transform, URL rewrite)', f.mix)}
${row('svc gateway, cache hit (cache_all_safe_requests, memory store)', f.cache)}
${row('svc gateway, token (one key, Authorization header)', f.token)}
${row('svc gateway, protected (token + rate limit + quota, Redis store)', f.protectedRun)}
${row('svc gateway, protected with analytics on (records to a dashboard)', f.protectedAnalytics)}
${row('svc gateway, JWT (RS256, one warm key, Authorization header)', f.jwt)}
${row('svc gateway, token, plain HTTP (tools/loadgen)', f.tokenLoadgen)}
${row('svc gateway, token over HTTPS (tools/loadgen)', f.tokenTls)}
${row('svc gateway, mTLS (static client certificate, HTTPS, tools/loadgen)', f.mtls)}
${row('Node floor: node:http + one undici dispatch, no gateway logic', f.floor)}
${row('Node byte pump: TCP piped to the upstream, no HTTP parsing', f.pump)}

Gateway keyless / Node floor: ${fmt(f.gw.rps / f.floor.rps)}; token / keyless: ${fmt(f.token.rps / f.gw.rps)};
endpoint-feature mix / keyless: ${fmt(mixRatio)}; cache hit / keyless: ${fmt(cacheRatio)};
JWT / token: ${fmt(jwtRatio)}; mTLS / token (plain HTTP, wrk): ${fmt(mtlsRatio)}; mTLS / token over
HTTPS (same listener, same tool): ${fmt(mtlsTlsRatio)}; token, tools/loadgen / wrk (plain HTTP):
${fmt(f.tokenLoadgen.rps / f.token.rps)}; token over HTTPS / plain HTTP (tools/loadgen):
${fmt(f.tokenTls.rps / f.tokenLoadgen.rps)}.

${analyticsLines(f.protectedRun, f.protectedAnalytics, f.analyticsOutcomes)}

At half of its own saturation rate (wrk paced with a 2 ms delay between requests; tools/loadgen
paced at the rate, ${CONNECTIONS} connections):

- ${halfLine('keyless', f.half)}
- ${halfLine('token', f.tokenHalf)}
- ${halfLine('protected', f.protectedHalf)}
- ${halfLine('JWT', f.jwtHalf)}
- ${halfLine('token over HTTPS', f.tokenTlsHalf)}
- ${halfLine('mTLS', f.mtlsHalf)}

TCP proxying: a \`protocol: tcp\` API (its own \`listen_port\`, \`proxy.target_url:
tcp://127.0.0.1:<port>\`, nothing else) on the same gateway, piping each connection to a
redis-server of its own, against connecting to that redis-server directly; loaded by
redis-benchmark (\`PING\` as clients send it, a RESP array; ${CONNECTIONS} connections, one command
in flight on each; ${ROUNDS} runs each, interleaved, the best kept). Each command crosses the
gateway's byte pipe both ways (two more socket hops), nothing parsed.

| TCP | Commands/s | / direct | p50 | p99 |
| --- | ---: | ---: | ---: | ---: |
${tcpRow('redis-server, direct', f.tcp.direct)}
${tcpRow('svc gateway, tcp API (gateway/tcp/)', f.tcp.gateway)}

TCP API / direct: ${fmt(tcpRatio)}.

The Node floor is the ceiling of any proxy built on \`node:http\` and undici on this machine:
the gap between it and nginx is the cost of Node's HTTP stack (V8, the HTTP parser and
streams, per request), the gap between the gateway and the floor is the gateway's own work
(routing, the chain, header rules). The byte pump reads no HTTP at all, so it bounds any proxy
written in Node from above.

Targets:

- keyless requests/s at least half of nginx's: **${met(rpsRatio >= 0.5)}** (${fmt(rpsRatio * 100, 1)} %);
  p99 under 5 ms at half of its saturation: **${met(f.half.best.p99ms < 5)}** (${fmt(f.half.best.p99ms)} ms).
- token-authenticated requests/s at least 0.45 of nginx keyless: **${met(tokenRatio >= 0.45)}**
  (${fmt(tokenRatio * 100, 1)} %); p99 under 5 ms at half of its own saturation:
  **${met(f.tokenHalf.best.p99ms < 5)}** (${fmt(f.tokenHalf.best.p99ms)} ms).
- protected (token + rate limit + quota, Redis) requests/s at least 0.35 of nginx keyless:
  **${met(protectedRatio >= 0.35)}** (${fmt(protectedRatio * 100, 1)} %); p99 under 5 ms at half of its
  own saturation: **${met(f.protectedHalf.best.p99ms < 5)}** (${fmt(f.protectedHalf.best.p99ms)} ms).
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

Load average before the run: ${f.loadBefore} (other work on the machine lowers every figure).
Versions: ${versionOf(process.execPath, ['--version'])} (gateway), ${versionOf('nginx', ['-v'])},
${versionOf('wrk', ['--version'])}, ${versionOf('redis-server', ['--version'])}, tools/loadgen on ${versionOf('go', ['version'])}.
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
