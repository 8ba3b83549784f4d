/**
 * `make bench-streams`: streams through the gateway against the same streams on Bento directly
 * (no gateway in front), in the same run. Two streams: HTTP in -> SSE out, and HTTP in -> Kafka
 * (kfake, tools/build.sh) -> SSE out. A publisher POSTs SVC_BENCH_STREAM_MESSAGES messages
 * (default 5,000), 32 in flight on kept-alive connections, each carrying its send time; one SSE
 * consumer takes them. Figures: messages per second (first send to last receipt) and end-to-end
 * latency p50/p99; written to the `## Streams` section of docs/benchmarks.md with the ratio of
 * gateway to direct (target: 0.8 or better).
 */
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bentoPath } from '../../lib/bento/binary.ts';
import { BentoProcess } from '../../lib/bento/process.ts';
import { silentLogger } from '../../lib/log.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { spawnGateway, type GatewayProcess } from '../../gateway/testing/harness.ts';
import { openSse, startKafka, streamsDocument, type TestBroker } from '../../gateway/streams/testing.ts';
import { writeSection } from './stack.ts';

const MESSAGES = Number(process.env.SVC_BENCH_STREAM_MESSAGES ?? 5000);
const IN_FLIGHT = 32;
/** Workers of the gateway under test (SVC_BENCH_STREAM_WORKERS, default 1: on a small machine the node's processes share the cores with Bento). */
const WORKERS = process.env.SVC_BENCH_STREAM_WORKERS ?? '1';
/** Rounds of each case on each side, interleaved; the best of each side counts. */
const ROUNDS = Number(process.env.SVC_BENCH_STREAM_ROUNDS ?? 3);

interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
}

const now = (): number => performance.timeOrigin + performance.now();

function post(agent: Agent, port: number, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(res.statusCode ?? 0);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** Publishes MESSAGES to `publish` and reads them from `subscribe` (both on `port`). */
async function run(port: number, publish: string, subscribe: string): Promise<Figures> {
  const consumer = await openSse(port, subscribe);
  if (consumer.status !== 200) throw new Error(`SSE ${subscribe}: ${consumer.status}`);
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  // Warm-up: the stream answers (and a Kafka consumer group has joined).
  await waitFor(
    `${subscribe} flowing`,
    async () => {
      await post(agent, port, publish, JSON.stringify({ warm: true, t: now() }));
      return consumer.events.length > 0;
    },
    60_000,
    300,
  );
  await new Promise((r) => setTimeout(r, 500));
  const skip = consumer.events.length;
  const start = now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < MESSAGES) {
        const i = next++;
        const status = await post(agent, port, publish, JSON.stringify({ i, t: now() }));
        if (status !== 200) throw new Error(`publish answered ${status}`);
      }
    }),
  );
  const latencies: number[] = [];
  const received = (): number => consumer.events.slice(skip).filter((e) => !e.includes('"warm"')).length;
  await waitFor(`${MESSAGES} messages`, () => received() >= MESSAGES, 120_000, 20);
  const end = now();
  consumer.events.forEach((e, i) => {
    if (i < skip) return;
    const m = JSON.parse(e) as { t: number; warm?: boolean };
    if (m.warm !== true) latencies.push((consumer.times[i] ?? end) - m.t);
  });
  consumer.close();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    perSecond: MESSAGES / ((end - start) / 1000),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
}

/**
 * The streams of one side. Each side has a topic and consumer group of its own: both Bentos run
 * all the while, and a shared group would split the topic's partitions between them (half the
 * messages consumed by the side not being measured).
 */
function streamsOf(kafka: TestBroker, side: 'direct' | 'gateway'): Record<string, unknown> {
  const topic = `bench-${side}`;
  const sse = (path: string) => ({
    http_server: { path: '', ws_path: '', stream_path: path, stream_format: 'event_source', heartbeat: '1s' },
  });
  return {
    http: { input: { http_server: { path: '/in', ws_path: '' } }, output: sse('/out') },
    kproduce: {
      input: { http_server: { path: '/kin', ws_path: '' } },
      output: { kafka: { addresses: [kafka.address], topic, max_in_flight: 64 } },
    },
    kconsume: {
      input: {
        kafka: {
          addresses: [kafka.address],
          topics: [topic],
          consumer_group: topic,
          start_from_oldest: false,
        },
      },
      output: sse('/kout'),
    },
  };
}

async function main(): Promise<void> {
  const kafka = await startKafka(['bench-direct', 'bench-gateway'], 2);
  const results: Record<string, { direct: Figures; gateway: Figures }> = {};
  // Direct: a Bento of our own, the streams posted to its API, its endpoints called as they are.
  const direct = new BentoProcess({ binary: bentoPath(), log: silentLogger() });
  let gw: GatewayProcess | undefined;
  try {
    await direct.up();
    for (const [name, config] of Object.entries(streamsOf(kafka, 'direct'))) {
      const r = await direct.call('POST', `/streams/bench.${name}`, JSON.stringify(config));
      if (r.status !== 200) throw new Error(`direct ${name}: ${r.body}`);
    }
    const dport = direct.port;

    const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-streams-'));
    gw = await spawnGateway([
      '--workers',
      WORKERS,
      '--streaming-enabled',
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
    ]);
    const res = await gw.admin(
      'POST',
      '/svc/apis/oas',
      streamsDocument('bench', streamsOf(kafka, 'gateway')),
    );
    if (res.status !== 200) throw new Error(`gateway API: ${res.text}`);
    await gw.reload();
    const gport = gw.port;
    // Both sides run ROUNDS times, interleaved (drift on a shared machine falls on both), and the
    // best round of each counts: the first rounds warm the gateway's JIT as a long-running
    // gateway is warm, which a Go Bento needs no time for.
    const cases = [
      [
        'HTTP in -> SSE out',
        () => run(dport, '/bench.http/in', '/bench.http/out'),
        () => run(gport, '/bench/in', '/bench/out'),
      ],
      [
        'HTTP in -> Kafka -> SSE out',
        () => run(dport, '/bench.kproduce/kin', '/bench.kconsume/kout'),
        () => run(gport, '/bench/kin', '/bench/kout'),
      ],
    ] as const;
    const best = (a: Figures | undefined, b: Figures): Figures =>
      a === undefined || b.perSecond > a.perSecond ? b : a;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, onDirect, onGateway] of cases) {
        const d = await onDirect();
        const g = await onGateway();
        results[name] = { direct: best(results[name]?.direct, d), gateway: best(results[name]?.gateway, g) };
      }
    }
  } finally {
    await direct.stop();
    await gw?.stop();
    await kafka.stop();
  }
  const f = (n: number, d = 0): string => n.toFixed(d);
  const rows = Object.entries(results).map(([name, { direct: d, gateway: g }]) => {
    const ratio = g.perSecond / d.perSecond;
    return `| ${name} | ${f(d.perSecond)} | ${f(g.perSecond)} | ${ratio.toFixed(2)} ${ratio >= 0.8 ? '(target met)' : '(below 0.8)'} | ${f(d.p50, 1)} / ${f(d.p99, 1)} | ${f(g.p50, 1)} / ${f(g.p99, 1)} |`;
  });
  const section = [
    '## Streams',
    '',
    `\`make bench-streams\` (e2e/bench/streams-bench.ts), ${new Date().toISOString().slice(0, 10)}: ${MESSAGES} messages POSTed ${IN_FLIGHT} in flight to one stream, read by one SSE consumer, through the gateway (\`--workers ${WORKERS}\`, the node's one Bento supervised by it) and on Bento directly (no gateway in front) in the same run, ${ROUNDS} rounds of each, interleaved, the best of each side kept (the first rounds warm the gateway's JIT). Kafka is kfake (tools/kfake). Through the gateway, publishes that arrive together go to Bento as one batch (docs/streams.md, \`Publishes sent to Bento together\`); the consumer has a connection of its own, as a browser's EventSource. Messages per second from the first send to the last receipt; latency from send to SSE receipt (ms). Target: through the gateway at 0.8 of direct or better.`,
    '',
    '| Stream | Direct msg/s | Gateway msg/s | Gateway / direct | Direct p50 / p99 ms | Gateway p50 / p99 ms |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`${section}\n`);
  await writeSection('Streams', section);
}

await main();
