/**
 * Faults on a real Bento and a real Kafka broker (kfake): Bento killed mid-stream loses no Kafka
 * message (the consumer group resumes from the committed offset, redelivering what was not
 * acknowledged); an output down for 5 s while 1,000 messages arrive from Kafka gets all 1,000
 * afterwards; 1,000 SSE consumers that connect and go away leave nothing behind.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import {
  addStreams,
  openSse,
  sseRelay,
  startKafka,
  streamsDocument,
  STREAMING,
  type TestBroker,
} from './testing.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

/** A local HTTP receiver: records bodies, answers `status()` (503 while "down"), after `delayMs`. */
async function receiver(opts: { status: () => number; delayMs?: number }): Promise<{
  url: string;
  bodies: string[];
  server: Server;
}> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      setTimeout(() => {
        const status = opts.status();
        if (status === 200) bodies.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(status);
        res.end();
      }, opts.delayMs ?? 0);
    });
  });
  return {
    url: await listenLocal(server),
    bodies,
    server,
  };
}

/** Publishes `bodies` through the gateway, `concurrency` at a time. */
async function publishAll(
  gw: InProcessGateway,
  path: string,
  bodies: string[],
  concurrency = 16,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++] ?? '';
        const r = await gw.request({ method: 'POST', path, body });
        assert.equal(r.status, 200, r.text);
      }
    }),
  );
}

describe('stream faults', () => {
  let gw: InProcessGateway;
  let kafka: TestBroker;
  const servers: Server[] = [];
  before(async () => {
    kafka = await startKafka(['killed', 'down'], 2);
    gw = await startGateway({ argv: STREAMING });
  });
  after(async () => {
    try {
      await stopAll(gw, kafka);
    } finally {
      for (const s of servers) await closeServer(s);
    }
  });

  function kafkaToHttp(id: string, topic: string, url: string): Record<string, unknown> {
    return streamsDocument(id, {
      produce: {
        input: { http_server: { path: '/in' } },
        output: { kafka: { addresses: [kafka.address], topic, max_in_flight: 64 } },
      },
      consume: {
        input: {
          kafka: {
            addresses: [kafka.address],
            topics: [topic],
            consumer_group: `${id}-group`,
            start_from_oldest: true,
            checkpoint_limit: 64,
          },
        },
        output: {
          http_client: {
            url,
            verb: 'POST',
            max_in_flight: 16,
            retries: 3,
            retry_period: '200ms',
            max_retry_backoff: '1s',
          },
        },
      },
    });
  }

  test('Bento killed mid-stream: restarted, and every Kafka message still delivered', async () => {
    const sink = await receiver({ status: () => 200, delayMs: 10 });
    servers.push(sink.server);
    const res = await gw.admin('POST', '/svc/apis/oas', kafkaToHttp('killed', 'killed', sink.url));
    assert.equal(res.status, 200, res.text);
    await gw.reload();
    const bodies = Array.from({ length: 300 }, (_, i) => `k-${i}`);
    await publishAll(gw, '/killed/in', bodies);
    await waitFor('some consumed', () => sink.bodies.length >= 30, 20_000);
    const pid = gw.gw.streams.process?.pid;
    assert.ok(pid !== undefined);
    process.kill(pid, 'SIGKILL');
    assert.ok(sink.bodies.length < bodies.length, `killed mid-stream (${sink.bodies.length} delivered)`);
    await waitFor(
      'Bento back',
      () => gw.gw.streams.state === 'up' && gw.gw.streams.process?.pid !== pid,
      20_000,
    );
    await waitFor('every message', () => bodies.every((b) => sink.bodies.includes(b)), 40_000, 200);
    // At least once: what was consumed but not committed comes again; nothing is missing.
    assert.deepEqual([...new Set(sink.bodies)].sort(), [...bodies].sort());
  });

  test('the output down for 5 s while 1,000 messages arrive from Kafka: all delivered after', async () => {
    let downUntil = Date.now() + 5_000;
    const sink = await receiver({ status: () => (Date.now() < downUntil ? 503 : 200) });
    servers.push(sink.server);
    const res = await gw.admin('POST', '/svc/apis/oas', kafkaToHttp('down', 'down', sink.url));
    assert.equal(res.status, 200, res.text);
    await gw.reload();
    downUntil = Date.now() + 5_000;
    const bodies = Array.from({ length: 1000 }, (_, i) => `d-${i}`);
    await publishAll(gw, '/down/in', bodies, 32);
    assert.ok(Date.now() < downUntil || sink.bodies.length < bodies.length, 'the output was down meanwhile');
    await waitFor('all 1,000 delivered', () => new Set(sink.bodies).size >= bodies.length, 90_000, 250);
    assert.deepEqual([...new Set(sink.bodies)].sort(), [...bodies].sort());
  });

  test('1,000 SSE connect/disconnect cycles leak nothing', async () => {
    await addStreams(gw, streamsDocument('cycles', { relay: sseRelay() }));
    const sockets = (): number =>
      (process as unknown as { _getActiveHandles(): unknown[] })
        ._getActiveHandles()
        .filter((h) => h?.constructor.name === 'Socket').length;
    // Warm up one cycle, then count.
    (await openSse(gw.port, '/cycles/sse', { connection: 'close' })).close();
    await new Promise((r) => setTimeout(r, 200));
    const baseline = sockets();
    for (let i = 0; i < 1000; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, () => openSse(gw.port, '/cycles/sse', { connection: 'close' })),
      );
      for (const c of batch) {
        assert.equal(c.status, 200);
        c.close();
      }
    }
    await waitFor('sockets closed', () => sockets() <= baseline + 2, 15_000, 100);
    // No consumer left behind on Bento: a new one receives every message (an orphan would take
    // its round-robin share).
    const c = await openSse(gw.port, '/cycles/sse');
    const ids = Array.from({ length: 20 }, (_, i) => `c-${i}`);
    for (const id of ids) {
      const r = await gw.request({ method: 'POST', path: '/cycles/post', body: id });
      assert.equal(r.status, 200, r.text);
    }
    await waitFor('every message to the one consumer', () => c.events.length >= ids.length, 15_000);
    assert.deepEqual(c.events, ids);
    c.close();
    const text = (await gw.request({ method: 'GET', path: '/metrics' })).text;
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('svc_gateway_stream_connections_total{') &&
          l.includes('endpoint="/sse"') &&
          l.includes('outcome="ok"') &&
          l.includes('api_id="cycles"'),
      );
    assert.ok(line !== undefined && Number(line.split(' ').at(-1)) >= 1001, line);
  });
});
