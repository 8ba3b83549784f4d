/**
 * What is stored runs: a stream is checked at write time the way Bento will run it, on a real
 * gateway with a real Bento. The seed's forms run (an `http_client` output's `rate_limit` as a
 * duration, observed as at most one delivery per duration; a `kafka` input's `topic`, through a
 * real kfake broker), and a stream Bento would refuse when it is created (which its lint does not
 * see) is refused at write time with 400 naming the field.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { openSse, startKafka, streamsDocument, type TestBroker } from './testing.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

describe('streams are checked at write time as Bento runs them', () => {
  let gw: InProcessGateway;
  let receiver: Server;
  let receiverUrl = '';
  /** What the receiver got: body and arrival time (ms). */
  const deliveries: { body: string; at: number }[] = [];
  const brokers: TestBroker[] = [];

  before(async () => {
    gw = await startGateway({ argv: ['--streaming-enabled', '--workers', '1'] });
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        deliveries.push({ body, at: performance.now() });
        res.end('ok');
      });
    });
    receiverUrl = await listenLocal(receiver);
  });
  after(async () => {
    await gw.stop();
    await closeServer(receiver);
    for (const b of brokers) await b.stop();
  });

  test('http_client rate_limit as a duration (the seed): accepted, and at most one delivery a second', async () => {
    const doc = streamsDocument('paced', {
      out: {
        input: { http_server: { path: '/in' } },
        output: {
          http_client: { url: `${receiverUrl}/hook`, verb: 'POST', rate_limit: '1s' },
        },
      },
    });
    const res = await gw.admin('POST', '/svc/apis/oas', doc);
    assert.equal(res.status, 200, res.text);
    const reload = await gw.admin('GET', '/svc/reload');
    assert.deepEqual(reload.json, { status: 'ok', message: '' }, reload.text);
    const messages = ['p0', 'p1', 'p2', 'p3'];
    const answers = await Promise.all(
      messages.map((m) => gw.request({ fresh: true, method: 'POST', path: '/paced/in', body: m })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    await waitFor(
      'every message delivered',
      () => (deliveries.length >= messages.length ? true : undefined),
      20_000,
    );
    assert.deepEqual(deliveries.map((d) => d.body).sort(), messages);
    // Bento's local rate limit counts from its last refill, which starts when the stream is built:
    // the first message can come at the end of that first period and the second at the start of
    // the next. From the second delivery on, each waits a whole period.
    const gaps = deliveries.slice(1).map((d, i) => d.at - (deliveries[i]?.at ?? 0));
    for (const gap of gaps.slice(1)) {
      assert.ok(gap >= 900, `deliveries ${gaps.map(Math.round).join(', ')} ms apart`);
    }
  });

  test('a kafka input with topic (the seed) as well as topics: delivered from a real broker', async () => {
    const kafka = await startKafka(['seed-orders']);
    brokers.push(kafka);
    const doc = streamsDocument('ktopic', {
      produce: {
        input: { http_server: { path: '/in' } },
        output: { kafka: { addresses: [kafka.address], topic: 'seed-orders', client_id: 'gw' } },
      },
      consume: {
        input: {
          kafka: {
            addresses: [kafka.address],
            topic: 'seed-orders',
            consumer_group: 'seed-sse',
            start_from_oldest: true,
          },
        },
        output: { http_server: { stream_path: '/out', stream_format: 'event_source', heartbeat: '1s' } },
      },
    });
    const res = await gw.admin('POST', '/svc/apis/oas', doc);
    assert.equal(res.status, 200, res.text);
    const reload = await gw.admin('GET', '/svc/reload');
    assert.deepEqual(reload.json, { status: 'ok', message: '' }, reload.text);
    const c = await openSse(gw.port, '/ktopic/out');
    assert.equal(c.status, 200);
    for (const m of ['k1', 'k2']) {
      const r = await gw.request({ fresh: true, method: 'POST', path: '/ktopic/in', body: m });
      assert.equal(r.status, 200, r.text);
    }
    await waitFor('both messages through Kafka', () => (c.events.length >= 2 ? true : undefined), 30_000);
    assert.deepEqual(c.events, ['k1', 'k2']);
    c.close();
  });

  test('what Bento would refuse when creating the stream is refused at write time, naming the field', async () => {
    const cases: { name: string; stream: Record<string, unknown>; expect: RegExp }[] = [
      {
        name: 'a rate_limit naming nothing',
        stream: {
          input: { http_server: { path: '/in' } },
          output: { http_client: { url: 'http://127.0.0.1:1/x', rate_limit: 'nope' } },
        },
        expect:
          /x-svc-streaming\.streams\.s\.output\.http_client\.rate_limit: "nope" is neither a duration .* nor the label/,
      },
      {
        name: 'a rate limit Bento cannot build',
        stream: {
          rate_limit_resources: [{ label: 'slow', local: { count: 1, interval: '5x' } }],
          input: { http_server: { path: '/in', rate_limit: 'slow' } },
          output: { drop: {} },
        },
        expect: /x-svc-streaming\.streams\.s\.rate_limit_resources\[0\]: .*interval.*unknown unit "x"/,
      },
      {
        name: 'an input timeout that is no duration',
        stream: {
          input: { http_server: { path: '/in', timeout: '5x' } },
          output: { drop: {} },
        },
        expect:
          /x-svc-streaming\.streams\.s\.input\.http_server\.timeout: failed to parse 'timeout' as a duration string/,
      },
      {
        name: 'a processor naming a cache that does not exist in a broker output',
        stream: {
          input: { http_server: { path: '/in' } },
          output: {
            broker: {
              outputs: [
                { drop: {} },
                { drop: {}, processors: [{ cache: { resource: 'nowhere', operator: 'get', key: 'k' } }] },
              ],
            },
          },
        },
        expect:
          /x-svc-streaming\.streams\.s\.output\.broker\.outputs\[1\]\.processors\[0\].*cache resource 'nowhere' was not found/,
      },
      {
        name: 'a kafka input with topic and topics',
        stream: {
          input: { kafka: { addresses: ['127.0.0.1:1'], topic: 'a', topics: ['b'], consumer_group: 'g' } },
          output: { drop: {} },
        },
        expect: /x-svc-streaming\.streams\.s\.input\.kafka\.topic: give topic or topics, not both/,
      },
    ];
    for (const c of cases) {
      const id = `refused-${c.name.replaceAll(' ', '-').replaceAll('_', '-')}`;
      const res = await gw.admin('POST', '/svc/apis/oas', streamsDocument(id, { s: c.stream }));
      assert.equal(res.status, 400, `${c.name}: ${res.text}`);
      assert.match((res.json as { message: string }).message, c.expect, c.name);
      assert.equal((await gw.admin('GET', `/svc/apis/oas/${id}`)).status, 404, `${c.name}: not stored`);
    }
  });
});
