/**
 * `make bench-streams`: streams through the gateway against the same streams on Bento directly
 * (no gateway in front), in the same run. The two streams: HTTP in -> SSE out (messages
 * POSTed to the stream's input), and Kafka in -> SSE out (messages written to a kfake topic,
 * tools/build.sh, by a producer outside what is measured: a Bento of its own that the bench POSTs
 * to, the same for both sides); and a third, not a target, with both ends through the gateway:
 * HTTP in -> Kafka -> SSE out. A publisher POSTs SVC_BENCH_STREAM_MESSAGES messages (default
 * 5,000), 32 in flight on kept-alive connections, each carrying its send time; one SSE consumer
 * takes them. Figures: messages per second (first send to last receipt) and end-to-end latency
 * p50/p99; written to the `## Streams` section of docs/benchmarks.md with the ratio of gateway to
 * direct (target: 0.8 or better on the first two).
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
/**
 * Messages sent through each case on each side before the measured rounds, not measured: a
 * gateway in service has run its request path many times (V8 has optimised it), and so has the
 * bench's own publisher; a cold one is measured by neither side's figures.
 */
const WARMUP = Number(process.env.SVC_BENCH_STREAM_WARMUP ?? 20000);
/** Only the cases whose names start with this (SVC_BENCH_STREAM_ONLY, e.g. `Kafka`); all by default. */
const ONLY = process.env.SVC_BENCH_STREAM_ONLY ?? '';

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

/** An endpoint: a port and a path on it. */
type At = readonly [port: number, path: string];

/** Publishes `messages` to `publishAt` and reads them from `subscribeAt`. */
async function run(publishAt: At, subscribeAt: At, messages = MESSAGES): Promise<Figures> {
  const [port, publish] = publishAt;
  const subscribe = subscribeAt[1];
  const consumer = await openSse(subscribeAt[0], subscribe);
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
      while (next < messages) {
        const i = next++;
        const status = await post(agent, port, publish, JSON.stringify({ i, t: now() }));
        if (status !== 200) throw new Error(`publish answered ${status}`);
      }
    }),
  );
  const latencies: number[] = [];
  const received = (): number => consumer.events.slice(skip).filter((e) => !e.includes('"warm"')).length;
  await waitFor(`${messages} messages`, () => received() >= messages, 120_000, 20);
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
    perSecond: messages / ((end - start) / 1000),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
}

/** A stream's `kafka` input reading `topic` in a consumer group of its own. */
function kafkaInput(kafka: TestBroker, topic: string): Record<string, unknown> {
  return {
    kafka: { addresses: [kafka.address], topics: [topic], consumer_group: topic, start_from_oldest: false },
  };
}

/**
 * The streams of one side. Each side has topics and consumer groups of its own: all Bentos run
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
    kafka: { input: kafkaInput(kafka, `bench-in-${side}`), output: sse('/kafka') },
    kproduce: {
      input: { http_server: { path: '/kin', ws_path: '' } },
      output: { kafka: { addresses: [kafka.address], topic, max_in_flight: 64 } },
    },
    kconsume: { input: kafkaInput(kafka, topic), output: sse('/kout') },
  };
}

/**
 * The Kafka producer of the `Kafka in -> SSE out` case, outside what is measured and the same for
 * both sides: a Bento of its own whose streams write what is POSTed to them to each side's topic.
 */
function producerStreams(kafka: TestBroker): Record<string, unknown> {
  const to = (topic: string) => ({
    input: { http_server: { path: '/in', ws_path: '' } },
    output: { kafka: { addresses: [kafka.address], topic, max_in_flight: 64 } },
  });
  return { direct: to('bench-in-direct'), gateway: to('bench-in-gateway') };
}

async function main(): Promise<void> {
  const kafka = await startKafka(['bench-direct', 'bench-gateway', 'bench-in-direct', 'bench-in-gateway'], 2);
  const results: Record<string, { direct: Figures; gateway: Figures; target: boolean }> = {};
  // Direct: a Bento of our own, the streams posted to its API, its endpoints called as they are.
  const direct = new BentoProcess({ binary: bentoPath(), log: silentLogger() });
  const producer = new BentoProcess({ binary: bentoPath(), log: silentLogger() });
  let gw: GatewayProcess | undefined;
  try {
    for (const [bento, streams] of [
      [direct, streamsOf(kafka, 'direct')],
      [producer, producerStreams(kafka)],
    ] as const) {
      await bento.up();
      for (const [name, config] of Object.entries(streams)) {
        const r = await bento.call('POST', `/streams/bench.${name}`, JSON.stringify(config));
        if (r.status !== 200) throw new Error(`Bento stream ${name}: ${r.body}`);
      }
    }
    const dport = direct.port;
    const pport = producer.port;

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
    // Both sides warm up (WARMUP messages each, not measured), then run ROUNDS times,
    // interleaved (drift on a shared machine falls on both), and the best round of each counts.
    // [name, on Bento directly, through the gateway, whether the 0.8 target applies]
    const cases = [
      [
        'HTTP in -> SSE out',
        (n?: number) => run([dport, '/bench.http/in'], [dport, '/bench.http/out'], n),
        (n?: number) => run([gport, '/bench/in'], [gport, '/bench/out'], n),
        true,
      ],
      [
        'Kafka in -> SSE out',
        (n?: number) => run([pport, '/bench.direct/in'], [dport, '/bench.kafka/kafka'], n),
        (n?: number) => run([pport, '/bench.gateway/in'], [gport, '/bench/kafka'], n),
        true,
      ],
      [
        'HTTP in -> Kafka -> SSE out (both ends through the gateway)',
        (n?: number) => run([dport, '/bench.kproduce/kin'], [dport, '/bench.kconsume/kout'], n),
        (n?: number) => run([gport, '/bench/kin'], [gport, '/bench/kout'], n),
        false,
      ],
    ] as const;
    const best = (a: Figures | undefined, b: Figures): Figures =>
      a === undefined || b.perSecond > a.perSecond ? b : a;
    if (WARMUP > 0)
      for (const [name, onDirect, onGateway] of cases) {
        if (!name.startsWith(ONLY)) continue;
        await onDirect(WARMUP);
        await onGateway(WARMUP);
      }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, onDirect, onGateway, target] of cases) {
        if (!name.startsWith(ONLY)) continue;
        const d = await onDirect();
        const g = await onGateway();
        results[name] = {
          direct: best(results[name]?.direct, d),
          gateway: best(results[name]?.gateway, g),
          target,
        };
      }
    }
  } finally {
    await direct.stop();
    await producer.stop();
    await gw?.stop();
    await kafka.stop();
  }
  const f = (n: number, d = 0): string => n.toFixed(d);
  const rows = Object.entries(results).map(([name, { direct: d, gateway: g, target }]) => {
    const ratio = g.perSecond / d.perSecond;
    const verdict = !target ? '(no target)' : ratio >= 0.8 ? '(target met)' : '(below 0.8)';
    return `| ${name} | ${f(d.perSecond)} | ${f(g.perSecond)} | ${ratio.toFixed(2)} ${verdict} | ${f(d.p50, 1)} / ${f(d.p99, 1)} | ${f(g.p50, 1)} / ${f(g.p99, 1)} |`;
  });
  const section = [
    '## Streams',
    '',
    `\`make bench-streams\` (e2e/bench/streams-bench.ts), ${new Date().toISOString().slice(0, 10)}: ${MESSAGES} messages POSTed ${IN_FLIGHT} in flight, read by one SSE consumer, through the gateway (\`--workers ${WORKERS}\`, the node's one Bento supervised by it) and on Bento directly (no gateway in front) in the same run, ${ROUNDS} rounds of each, interleaved, the best of each side kept, after ${WARMUP} messages through each side and case not measured (a gateway in service is warm: V8 has optimised its request path, as it has the bench's own publisher). Kafka is kfake (tools/kfake). \`Kafka in\`: the messages are POSTed to a producer outside what is measured (a Bento of its own writing them to the topic the stream reads, the same for both sides), so only the stream's consumer side passes through the gateway; the third row, not a target, has both the publish and the event stream through the gateway (HTTP in -> Kafka out on one stream, Kafka in -> SSE out on another). Through the gateway, publishes that arrive together go to Bento as one batch (docs/streams.md, \`Publishes sent to Bento together\`); the consumer has a connection of its own, as a browser's EventSource. Messages per second from the first send to the last receipt; latency from send to SSE receipt (ms). Target: through the gateway at 0.8 of direct or better, on the issue's two streams.`,
    '',
    '| Stream | Direct msg/s | Gateway msg/s | Gateway / direct | Direct p50 / p99 ms | Gateway p50 / p99 ms |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`${section}\n`);
  // Some cases only (SVC_BENCH_STREAM_ONLY): printed, not written over the whole section.
  if (ONLY === '') await writeSection('Streams', section);
}

await main();
