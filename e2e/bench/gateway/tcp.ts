/**
 * The TCP row of the gateway benchmark: a `protocol: tcp` API (gateway/tcp/) piping its port to a
 * redis-server of its own, loaded by redis-benchmark (`PING` as clients send it, a RESP array;
 * CONNECTIONS connections, one command in flight on each) through the gateway and directly,
 * interleaved, the best of each kept: what the gateway's byte pipe costs against a direct
 * connection.
 */
import { execFileSync } from 'node:child_process';
import { waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import { auth } from './cases.ts';
import { CONNECTIONS, DURATION_S, ROUNDS } from './drivers.ts';
import { start } from './processes.ts';

/** One redis-benchmark run. */
export interface TcpResult {
  rps: number;
  p50ms: number;
  p99ms: number;
}

/** The TCP case's ports: its redis-server, and the API's port on the gateway. */
export interface TcpPorts {
  redis: number;
  listen: number;
}

/** PINGs per run: about DURATION_S seconds at the rate this machine reached (~20,000/s). */
const REQUESTS = DURATION_S * 20_000;

/**
 * Starts the TCP case's redis-server and stores, on the gateway at `gatewayPort`, the API that
 * pipes `ports.listen` to it (reloaded); checks that a PING through the gateway gets PONG.
 */
export async function addTcpCase(gatewayPort: number, ports: TcpPorts): Promise<void> {
  start(
    'redis-server',
    ['--port', String(ports.redis), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    'redis (tcp case)',
  );
  const ping = (port: number): true | undefined => {
    try {
      return execFileSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).trim() === 'PONG'
        ? true
        : undefined;
    } catch {
      return undefined;
    }
  };
  await waitFor('redis (tcp case)', () => ping(ports.redis));
  const res = await send({
    port: gatewayPort,
    method: 'POST',
    path: '/svc/apis',
    headers: auth,
    body: JSON.stringify({
      api_id: 'bench-tcp',
      name: 'bench-tcp',
      protocol: 'tcp',
      listen_port: ports.listen,
      proxy: { target_url: `tcp://127.0.0.1:${ports.redis}` },
    }),
  });
  if (res.status !== 200) throw new Error(`the TCP API was refused: ${res.status} ${res.text}`);
  const reloaded = await send({ port: gatewayPort, path: '/svc/reload', headers: auth });
  if (reloaded.status !== 200) throw new Error(`reload failed: ${reloaded.text}`);
  // Every worker opens the port at its reload: PONG through it before anything is measured.
  await waitFor('PONG through the TCP API', () => ping(ports.listen));
}

/** One redis-benchmark run of `PING` (the RESP array form) against `port`. */
function pingRun(port: number, requests: number): TcpResult {
  const out = execFileSync(
    'redis-benchmark',
    [
      ...['-h', '127.0.0.1', '-p', String(port)],
      ...['-c', String(CONNECTIONS), '-n', String(requests), '-t', 'ping_mbulk', '--csv'],
    ],
    { encoding: 'utf8' },
  );
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  const row = out
    .split('\n')
    .find((l) => l.startsWith('"PING_MBULK"'))
    ?.split(',')
    .map((c) => Number(c.replaceAll('"', '')));
  const [, rps, , , p50, , p99] = row ?? [];
  if (rps === undefined || p50 === undefined || p99 === undefined || Number.isNaN(rps))
    throw new Error(`unreadable redis-benchmark output:\n${out}`);
  return { rps, p50ms: p50, p99ms: p99 };
}

/** Direct and through the gateway, interleaved after a warm-up of each; the best run of each. */
export function tcpRuns(ports: TcpPorts): { direct: TcpResult; gateway: TcpResult } {
  const warm = Math.max(1000, REQUESTS / 10);
  pingRun(ports.redis, warm);
  pingRun(ports.listen, warm);
  const direct: TcpResult[] = [];
  const gateway: TcpResult[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    direct.push(pingRun(ports.redis, REQUESTS));
    gateway.push(pingRun(ports.listen, REQUESTS));
  }
  const best = (rs: TcpResult[]): TcpResult => rs.reduce((b, x) => (x.rps > b.rps ? x : b));
  return { direct: best(direct), gateway: best(gateway) };
}
