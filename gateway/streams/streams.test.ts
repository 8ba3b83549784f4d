/**
 * Streams through the gateway on a real Bento (tools/build.sh) and real brokers started by the
 * tests: HTTP in -> SSE out with competing consumers, WebSocket out, Kafka (kfake), MQTT
 * (mosquitto), NATS (nats-server), broker fan-out, Bloblang; the write-time refusals; the chain
 * in front of streams; Bento killed and brought back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, useGateway, type InProcessGateway } from '../testing/harness.ts';
import {
  brokerMissing,
  openSse,
  sseRelay,
  addStreams,
  startKafka,
  startMosquitto,
  STREAMING,
  startNats,
  streamsDocument,
  type SseConsumer,
  type TestBroker,
} from './testing.ts';

async function publish(
  gw: InProcessGateway,
  path: string,
  body: string,
  headers: Record<string, string> = {},
) {
  return gw.request({ method: 'POST', path, body, headers });
}

/** Waits until `consumers` have received `n` events between them. */
function received(consumers: SseConsumer[], n: number): Promise<string[]> {
  return waitFor(
    `${n} events`,
    () => {
      const all = consumers.flatMap((c) => c.events);
      return all.length >= n ? all : undefined;
    },
    20_000,
  );
}

describe('streams', () => {
  const gw = useGateway({ argv: STREAMING });

  test('HTTP in -> SSE out: two consumers compete, each message reaches exactly one', async () => {
    await addStreams(gw(), streamsDocument('feed', { relay: sseRelay() }));
    const a = await openSse(gw().port, '/feed/sse');
    const b = await openSse(gw().port, '/feed/sse');
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const ids = Array.from({ length: 20 }, (_, i) => `msg-${i}`);
    for (const id of ids) {
      const res = await publish(gw(), '/feed/post', id);
      assert.equal(res.status, 200, res.text);
    }
    const all = await received([a, b], ids.length);
    assert.deepEqual([...all].sort(), [...ids].sort(), 'every message delivered once, none twice');
    assert.ok(
      a.events.length > 0 && b.events.length > 0,
      `both consumers served: ${a.events.length}/${b.events.length}`,
    );
    // Heartbeats are comments, not events.
    await waitFor('a heartbeat', () => a.comments > 0, 5_000);
    a.close();
    b.close();
  });

  test('a path that matches no stream continues to the upstream; a wrong verb is 405', async () => {
    const wrong = await gw().request({ method: 'GET', path: '/feed/post' });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.allow, 'POST');
    const other = await gw().request({ method: 'GET', path: '/feed/nothing-here' });
    assert.equal(other.status, 502, 'proxied to the (unreachable) upstream');
  });

  test('HTTP in -> WebSocket out', async () => {
    await addStreams(
      gw(),
      streamsDocument('wsfeed', {
        relay: {
          input: { http_server: { path: '/in' } },
          output: { http_server: { ws_path: '/ws', ws_message_type: 'text' } },
        },
      }),
    );
    const ws = new WebSocket(`ws://127.0.0.1:${gw().port}/wsfeed/ws`);
    const got: string[] = [];
    ws.addEventListener('message', (e) => {
      got.push(String(e.data));
    });
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => {
        resolve();
      });
      ws.addEventListener('error', () => {
        reject(new Error('websocket failed'));
      });
    });
    const res = await publish(gw(), '/wsfeed/in', 'hello ws');
    assert.equal(res.status, 200, res.text);
    await waitFor('the message on the WebSocket', () => got.includes('hello ws'), 10_000);
    ws.close();
  });

  test('Bloblang mapping and broker fan-out to two outputs', async () => {
    await addStreams(
      gw(),
      streamsDocument('fan', {
        split: {
          input: { http_server: { path: '/in' } },
          pipeline: { processors: [{ mapping: 'root.id = this.id\nroot.shout = this.text.uppercase()' }] },
          output: {
            broker: {
              pattern: 'fan_out',
              outputs: [
                // Each child gets its own paths (Bento's defaults would clash): '' turns one off.
                {
                  http_server: {
                    path: '',
                    ws_path: '',
                    stream_path: '/one',
                    stream_format: 'event_source',
                    heartbeat: '1s',
                  },
                },
                {
                  http_server: {
                    path: '',
                    ws_path: '',
                    stream_path: '/two',
                    stream_format: 'event_source',
                    heartbeat: '1s',
                  },
                },
              ],
            },
          },
        },
      }),
    );
    const one = await openSse(gw().port, '/fan/one');
    const two = await openSse(gw().port, '/fan/two');
    const res = await publish(gw(), '/fan/in', JSON.stringify({ id: 7, text: 'hi' }));
    assert.equal(res.status, 200, res.text);
    await received([one], 1);
    await received([two], 1);
    assert.deepEqual(JSON.parse(one.events[0] ?? ''), { id: 7, shout: 'HI' });
    assert.deepEqual(JSON.parse(two.events[0] ?? ''), { id: 7, shout: 'HI' });
    one.close();
    two.close();
  });

  test('a protected streams API refuses an unauthenticated publisher and subscriber', async () => {
    const doc = streamsDocument(
      'secure',
      { relay: sseRelay() },
      {
        server: {
          listenPath: { value: '/secure/', strip: true },
          authentication: { enabled: true, securitySchemes: { token: { enabled: true } } },
        },
      },
      {
        components: { securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization' } } },
        security: [{ token: [] }],
      },
    );
    await addStreams(gw(), doc);
    const sub = await openSse(gw().port, '/secure/sse');
    assert.equal(sub.status, 401);
    sub.close();
    const pub = await publish(gw(), '/secure/post', 'x');
    assert.equal(pub.status, 401);
    const bad = await publish(gw(), '/secure/post', 'x', { authorization: 'nope' });
    assert.equal(bad.status, 403);
  });

  test('refusals at write time name the stream path, with Bento message, line and column', async () => {
    const cases: { name: string; streams: Record<string, unknown>; expect: RegExp }[] = [
      {
        name: 'unknown connector',
        streams: { s: { input: { no_such_input: {} }, output: { drop: {} } } },
        expect: /x-svc-streaming\.streams\.s\.input.*no_such_input/,
      },
      {
        name: 'unknown field',
        streams: { s: { input: { http_server: { path: '/p', bogus: 1 } }, output: { drop: {} } } },
        expect: /x-svc-streaming\.streams\.s\.input\.http_server\.bogus: field bogus not recognised/,
      },
      {
        name: 'broken mapping',
        streams: {
          s: {
            input: { http_server: {} },
            pipeline: { processors: [{ mapping: 'root = this\nfoo bar' }] },
            output: { drop: {} },
          },
        },
        expect:
          /x-svc-streaming\.streams\.s\.pipeline\.processors\[0\]\.mapping: line 2 column 5: expected =/,
      },
      {
        name: 'an address of its own',
        streams: { s: { input: { http_server: { address: '0.0.0.0:9999' } }, output: { drop: {} } } },
        expect: /x-svc-streaming\.streams\.s\.input\.http_server\.address: the gateway serves/,
      },
    ];
    for (const c of cases) {
      const res = await gw().admin(
        'POST',
        '/svc/apis/oas',
        streamsDocument(`bad-${c.name.replaceAll(' ', '-')}`, c.streams),
      );
      assert.equal(res.status, 400, `${c.name}: ${res.text}`);
      assert.match(res.text, c.expect, c.name);
    }
  });

  test('Bento killed mid-stream: restarted, streams back, /ready says so', async () => {
    const before = gw().gw.streams.process?.pid;
    assert.ok(before !== undefined);
    process.kill(before, 'SIGKILL');
    await waitFor('bento down', () => gw().gw.streams.state !== 'up', 5_000);
    await waitFor(
      'bento back',
      () => gw().gw.streams.state === 'up' && gw().gw.streams.process?.pid !== before,
      15_000,
    );
    assert.equal(gw().gw.streams.restarts, 1);
    const ready = await gw().request({ method: 'GET', path: '/ready' });
    assert.equal(ready.status, 200);
    const c = await openSse(gw().port, '/feed/sse');
    const res = await publish(gw(), '/feed/post', 'after restart');
    assert.equal(res.status, 200, res.text);
    await received([c], 1);
    assert.deepEqual(c.events, ['after restart']);
    c.close();
  });

  test('deleting an API deletes its streams on Bento; unchanged streams are not restarted', async () => {
    const listed = async (): Promise<string[]> => {
      const p = gw().gw.streams.process;
      assert.ok(p !== undefined);
      return Object.keys(JSON.parse((await p.call('GET', '/streams')).body) as object).sort();
    };
    const uptime = async (id: string): Promise<number> => {
      const p = gw().gw.streams.process;
      assert.ok(p !== undefined);
      return (JSON.parse((await p.call('GET', `/streams/${id}`)).body) as { uptime: number }).uptime;
    };
    assert.ok((await listed()).includes('fan.split'));
    const feedUptime = await uptime('feed.relay');
    const del = await gw().admin('DELETE', '/svc/apis/oas/fan');
    assert.equal(del.status, 200);
    await gw().reload();
    assert.ok(!(await listed()).includes('fan.split'));
    assert.ok((await uptime('feed.relay')) >= feedUptime, 'feed.relay kept running');
  });
});

describe('streams with brokers', () => {
  let gw: InProcessGateway;
  const brokers: TestBroker[] = [];
  before(async () => {
    gw = await startGateway({ argv: STREAMING });
  });
  after(async () => {
    await gw.stop();
    for (const b of brokers) await b.stop();
  });

  /** A round trip through a broker: POST -> broker -> SSE. */
  async function roundTrip(
    id: string,
    out: Record<string, unknown>,
    inp: Record<string, unknown>,
    messages: string[],
  ) {
    await addStreams(
      gw,
      streamsDocument(id, {
        produce: { input: { http_server: { path: '/in' } }, output: out },
        // The heartbeat sends the response head before the first message.
        consume: {
          input: inp,
          output: { http_server: { stream_path: '/out', stream_format: 'event_source', heartbeat: '1s' } },
        },
      }),
    );
    const c = await openSse(gw.port, `/${id}/out`);
    assert.equal(c.status, 200);
    // The consumer may join after the first message went by (MQTT, NATS keep nothing): send
    // until the first one arrives, then the rest.
    await waitFor(
      `first message through ${id}`,
      async () => {
        const res = await publish(gw, `/${id}/in`, 'probe');
        assert.equal(res.status, 200, res.text);
        return c.events.length > 0;
      },
      30_000,
      500,
    );
    const start = c.events.length;
    for (const m of messages) assert.equal((await publish(gw, `/${id}/in`, m)).status, 200);
    const sent = (): string[] => c.events.slice(start).filter((e) => e !== 'probe');
    await waitFor(
      `${messages.length} messages through ${id}`,
      () => sent().length >= messages.length,
      20_000,
    );
    assert.deepEqual(sent(), messages);
    c.close();
  }

  test('Kafka (kfake): HTTP in -> Kafka out, Kafka in (consumer group) -> SSE out', async () => {
    const kafka = await startKafka(['orders']);
    brokers.push(kafka);
    await roundTrip(
      'kafka',
      {
        kafka: {
          addresses: [kafka.address],
          topic: 'orders',
          client_id: 'gw',
          partitioner: 'murmur2_hash',
          key: 'k',
        },
      },
      {
        kafka: {
          addresses: [kafka.address],
          topics: ['orders'],
          consumer_group: 'sse',
          start_from_oldest: true,
        },
      },
      ['k1', 'k2', 'k3'],
    );
  });

  test('MQTT (mosquitto) round trip', async () => {
    assert.equal(brokerMissing('mosquitto'), undefined);
    const mqtt = await startMosquitto();
    brokers.push(mqtt);
    await roundTrip(
      'mqtt',
      { mqtt: { urls: [`tcp://${mqtt.address}`], topic: 'events', client_id: 'gw-out' } },
      { mqtt: { urls: [`tcp://${mqtt.address}`], topics: ['events'], client_id: 'gw-in' } },
      ['m1', 'm2'],
    );
  });

  test('NATS (nats-server) round trip', async () => {
    assert.equal(brokerMissing('nats-server'), undefined);
    const nats = await startNats();
    brokers.push(nats);
    await roundTrip(
      'nats',
      { nats: { urls: [`nats://${nats.address}`], subject: 'events' } },
      { nats: { urls: [`nats://${nats.address}`], subject: 'events' } },
      ['n1', 'n2'],
    );
  });
});

describe('streams disabled', () => {
  test('an API with streams is refused at write time, saying why', async () => {
    const gw = await startGateway({ argv: ['--workers', '1'] });
    try {
      const res = await gw.admin(
        'POST',
        '/svc/apis/oas',
        streamsDocument('off', { s: { input: { http_server: {} }, output: { drop: {} } } }),
      );
      assert.equal(res.status, 400);
      assert.match(res.text, /x-svc-streaming: streaming is disabled on this gateway/);
      const missing = await startGateway({
        argv: [...STREAMING, '--streaming-bento-path', '/nonexistent/bento'],
      });
      try {
        const r2 = await missing.admin(
          'POST',
          '/svc/apis/oas',
          streamsDocument('nobento', { s: { input: { http_server: {} }, output: { drop: {} } } }),
        );
        assert.equal(r2.status, 400);
        assert.match(r2.text, /Bento\) is not installed at \/nonexistent\/bento/);
      } finally {
        await missing.stop();
      }
    } finally {
      await gw.stop();
    }
  });
});
