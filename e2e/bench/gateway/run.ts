/**
 * `make bench-gateway` (part of `make bench`): proxying through the gateway against nginx as a
 * reverse proxy, in one run, with the same upstream (an nginx answering a small JSON body) and
 * the same load generator (wrk; tools/loadgen where a client certificate is needed, and for the
 * token case over the same HTTPS listener, for a like-for-like ratio). The cases are in
 * cases.ts; the drivers in drivers.ts; nginx in nginx.ts; the report, the "Gateway" section of
 * docs/benchmarks.md, in report.ts. The Node floor (node-floor.ts) and the byte pump
 * (byte-pump.ts) bound what a Node proxy can do on the same machine. TCP proxying (a `protocol:
 * tcp` API) is measured against a direct connection with redis-benchmark (tcp.ts).
 *
 * Then the gateway at 10,000 APIs against 1 (scale-proxy.ts: its own gateways, after these).
 *
 * Measurements: saturation (fixed connections, 10 s each after a warm-up) for each, then the
 * gateway cases at half of their own saturation rate (wrk paced by a Lua `delay()`, loadgen by its
 * `-rate`), for their p99. `--quick` runs 2-second measurements to check the script itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import {
  addCases,
  startProtectedOnRedis,
  checkCases,
  loadsOf,
  redisCommandsPerRequest,
  serverCert,
  startGatewayProcess,
  WORKERS,
  type Ports,
} from './cases.ts';
import {
  CONNECTIONS,
  DURATION_S,
  ensureLoadgen,
  halfOf,
  ROUNDS,
  saturate,
  wrk,
  type Result,
} from './drivers.ts';
import { ensureTools, startNginx } from './nginx.ts';
import { start, stopAll } from './processes.ts';
import { loadAverage, writeReport } from './report.ts';
import { addTcpCase, tcpRuns } from './tcp.ts';
import { settledOutcomes, startAnalyticsCase } from './analytics.ts';

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  ensureTools();
  ensureLoadgen();
  const dir = mkdtempSync(join(tmpdir(), 'svc-gw-bench-'));
  try {
    const ports: Ports = {
      upstream: await freePort(),
      nginx: await freePort(),
      gateway: await freePort(),
      floor: await freePort(),
      pump: await freePort(),
      redis: await freePort(),
      protected: await freePort(),
      tls: await freePort(),
    };
    await startNginx(dir, { workers: 1, listen: ports.upstream });
    await startNginx(dir, { workers: WORKERS, listen: ports.nginx, upstream: ports.upstream });
    const node = (file: string, port: number): string[] => [
      join(import.meta.dirname, file),
      String(port),
      String(ports.upstream),
      String(WORKERS),
    ];
    start(process.execPath, node('node-floor.ts', ports.floor), 'node floor');
    await waitFor('the node floor', async () =>
      (await send({ port: ports.floor, path: '/' })).status === 200 ? true : undefined,
    );

    const server = serverCert(dir);
    await startGatewayProcess(
      ports.gateway,
      ['--data-dir', join(dir, 'data'), '--tls-cert', server.certFile, '--tls-key', server.keyFile],
      'gateway',
    );
    const made = await addCases(ports, dir, server);
    const tcpPorts = { redis: await freePort(), listen: await freePort() };
    await addTcpCase(ports.gateway, tcpPorts);

    // The protected case: a second gateway on a redis-server of its own.
    const redisPort = ports.redis;
    await startProtectedOnRedis(ports);
    const redisPerRequest = await redisCommandsPerRequest(ports);
    // The protected case again with analytics on: a third gateway on the same Redis.
    const analytics = await startAnalyticsCase(redisPort, dir);
    start(process.execPath, node('byte-pump.ts', ports.pump), 'byte pump');
    await waitFor('the byte pump', async () =>
      (await send({ port: ports.pump, path: '/' })).status === 200 ? true : undefined,
    );
    const loads = loadsOf(ports, made);
    const upstreamCalls = await checkCases(loads, ports, made, dir);
    const callsBefore = upstreamCalls();

    console.log(
      `bench: nginx, the gateway (keyless, endpoint-feature mix, cache hit, token, protected on Redis with analytics off and on, JWT; token and mTLS over HTTPS with tools/loadgen), the Node floor and the byte pump, ${ROUNDS} x ${DURATION_S} s each, interleaved`,
    );
    const [
      nginx,
      gw,
      mix,
      cache,
      token,
      protectedRun,
      protectedAnalytics,
      floor,
      pump,
      jwt,
      tokenLoadgen,
      tokenTls,
      mtls,
    ] = saturate([
      loads.nginx,
      loads.gw,
      loads.mix,
      loads.cache,
      loads.token,
      loads.protected,
      analytics.load,
      loads.floor,
      loads.pump,
      loads.jwt,
      loads.tokenLoadgen,
      loads.tokenTls,
      loads.mtls,
    ]) as [
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
      Result,
    ];
    const analyticsOutcomes = await settledOutcomes(analytics);
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
    console.log('bench: TCP proxying (redis-benchmark PING), direct and through a tcp API, interleaved');
    const tcp = tcpRuns(tcpPorts);
    console.log(
      writeReport({
        loadBefore,
        nginx,
        gw,
        token,
        floor,
        pump,
        half,
        tokenHalf,
        protectedRun,
        protectedHalf,
        protectedAnalytics,
        analyticsOutcomes,
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
        tcp,
      }),
    );
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  // The 10,000-API rows (scale-proxy.ts), once the processes above are gone.
  execFileSync(process.execPath, [join(import.meta.dirname, 'scale-proxy.ts'), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
}

await main();
