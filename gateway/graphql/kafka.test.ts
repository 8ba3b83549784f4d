/**
 * The data graph's Kafka sources end to end: a real Kafka-protocol broker (tools/kfake), the
 * gateway running Bento, messages produced to the topic (through a stream of another API, Bento's
 * `kafka` output), and subscribers over WebSocket (graphql-transport-ws) receiving each message as
 * a GraphQL payload of their selection; the consumer's stream deleted when the subscriber
 * completes; the write refused where the gateway runs no stream processor.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, useGateway, type InProcessGateway } from '../testing/harness.ts';
import { startKafka, streamsDocument, type TestBroker } from '../streams/testing.ts';
import { refusedUpgrade } from './testing.ts';

const SDL = `
type Product { name: String! price: Int! in_stock: Int! }
type Query { topProducts(first: Int): [Product] }
type Subscription { stock(name: String): Product! }
`;

/** The reference's sample (udg2/udg_kafka_example.yaml) as a classic API on `broker`. */
function kafkaApi(id: string, broker: string, group: string): Record<string, unknown> {
  return {
    api_id: id,
    name: id,
    use_keyless: true,
    active: true,
    proxy: { listen_path: `/${id}/`, target_url: '', strip_listen_path: true },
    version_data: {
      not_versioned: true,
      default_version: 'Default',
      versions: { Default: { name: 'Default' } },
    },
    graphql: {
      enabled: true,
      execution_mode: 'executionEngine',
      version: '2',
      schema: SDL,
      engine: {
        field_configs: [
          { type_name: 'Query', field_name: 'topProducts', path: ['topProducts'] },
          { type_name: 'Subscription', field_name: 'stock', path: ['stock'] },
        ],
        data_sources: [
          {
            kind: 'GraphQL',
            name: 'topProducts',
            root_fields: [{ type: 'Query', fields: ['topProducts'] }],
            config: { url: 'http://127.0.0.1:9/', method: 'POST', headers: {}, default_type_name: 'Product' },
          },
          {
            kind: 'Kafka',
            name: 'kafka-consumer-group',
            root_fields: [{ type: 'Subscription', fields: ['stock'] }],
            config: {
              broker_addresses: [broker],
              topics: ['test.topic.{{.arguments.name}}'],
              group_id: group,
              client_id: 'svc-kafka-{{.arguments.name}}',
            },
          },
        ],
      },
    },
  };
}

/** A graphql-transport-ws client: the messages received, and a way to send. */
interface Client {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  send(m: Record<string, unknown>): void;
  closed: Promise<{ code: number; reason: string }>;
}

async function openClient(port: number, path: string): Promise<Client> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, 'graphql-transport-ws');
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString()) as Record<string, unknown>));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.once('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
    });
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      resolve();
    });
    ws.once('error', reject);
  });
  return {
    ws,
    messages,
    send: (m) => {
      ws.send(JSON.stringify(m));
    },
    closed,
  };
}

describe('GraphQL: Kafka data source, subscriptions over graphql-transport-ws', () => {
  let kafka: TestBroker;
  let gw: InProcessGateway;
  before(async () => {
    kafka = await startKafka(['test.topic.apples', 'test.topic.pears'], 1);
    gw = await startGateway({ argv: ['--streaming-enabled', '--workers', '1'] });
    const producer = streamsDocument('producer', {
      apples: {
        input: { http_server: { path: '/apples' } },
        output: { kafka: { addresses: [kafka.address], topic: 'test.topic.apples' } },
      },
      pears: {
        input: { http_server: { path: '/pears' } },
        output: { kafka: { addresses: [kafka.address], topic: 'test.topic.pears' } },
      },
    });
    let res = await gw.admin('POST', '/svc/apis/oas', producer);
    assert.equal(res.status, 200, res.text);
    res = await gw.admin('POST', '/svc/apis', kafkaApi('udg', kafka.address, 'svc-test-group'));
    assert.equal(res.status, 200, res.text);
    await gw.reload();
  });
  after(async () => {
    await gw.stop();
    await kafka.stop();
  });

  const produce = async (topic: 'apples' | 'pears', value: unknown): Promise<void> => {
    const r = await gw.request({ method: 'POST', path: `/producer/${topic}`, body: JSON.stringify(value) });
    assert.equal(r.status, 200, r.text);
  };
  const ownStreams = async (): Promise<string[]> => {
    const r = await gw.gw.streams.process?.call('GET', '/streams');
    return Object.keys(JSON.parse(r?.body ?? '{}') as Record<string, unknown>).filter((id) =>
      id.startsWith('svc!'),
    );
  };

  test('messages produced to the topic reach the subscriber as GraphQL payloads of its selection', async () => {
    const c = await openClient(gw.port, '/udg/');
    assert.equal(c.ws.protocol, 'graphql-transport-ws');
    c.send({ type: 'connection_init' });
    await waitFor('connection_ack', () => c.messages.some((m) => m.type === 'connection_ack'), 5_000);
    c.send({
      id: 's1',
      type: 'subscribe',
      payload: {
        query: 'subscription S($n: String) { stock(name: $n) { name price } }',
        variables: { n: 'apples' },
      },
    });
    await waitFor('the consumer stream', async () => (await ownStreams()).length === 1, 10_000);
    // Another topic of the same source: its messages are not this subscription's.
    await produce('pears', { stock: { name: 'pears', price: 9, in_stock: 1 } });
    for (let i = 1; i <= 3; i++)
      await produce('apples', { stock: { name: 'apples', price: i, in_stock: 10 * i } });
    const next = (): Record<string, unknown>[] => c.messages.filter((m) => m.type === 'next');
    await waitFor('3 events', () => next().length >= 3, 60_000, 100);
    assert.deepEqual(
      next().map((m) => m.payload),
      [1, 2, 3].map((price) => ({ data: { stock: { name: 'apples', price } } })),
    );
    assert.ok(next().every((m) => m.id === 's1'));
    // The client completes: the gateway's consumer goes, and nothing more is sent for s1.
    c.send({ id: 's1', type: 'complete' });
    await waitFor('the consumer stream deleted', async () => (await ownStreams()).length === 0, 10_000);
    await produce('apples', { stock: { name: 'apples', price: 4, in_stock: 1 } });
    c.send({ type: 'ping' });
    await waitFor('pong', () => c.messages.some((m) => m.type === 'pong'), 5_000);
    assert.equal(next().length, 3);
    c.ws.close();
    await c.closed;
  });

  test('a message that is not JSON is an error of that event; the subscription goes on', async () => {
    const c = await openClient(gw.port, '/udg/');
    c.send({ type: 'connection_init' });
    await waitFor('connection_ack', () => c.messages.some((m) => m.type === 'connection_ack'), 5_000);
    c.send({
      id: 'p',
      type: 'subscribe',
      payload: { query: 'subscription { stock(name: "pears") { name } }' },
    });
    // The group's committed offset is after the first pears message (the previous test's
    // subscription on this group did not read pears: it consumed test.topic.apples only).
    const r = await gw.request({ method: 'POST', path: '/producer/pears', body: 'not json' });
    assert.equal(r.status, 200);
    await produce('pears', { stock: { name: 'pears', price: 2, in_stock: 2 } });
    const next = (): Record<string, unknown>[] => c.messages.filter((m) => m.type === 'next');
    await waitFor('3 events', () => next().length >= 3, 60_000, 100);
    const payloads = next().map((m) => m.payload as { data?: unknown; errors?: { message: string }[] });
    assert.deepEqual(payloads[0], { data: { stock: { name: 'pears' } } });
    assert.equal(payloads[1]?.errors?.[0]?.message, 'a Kafka message is not JSON');
    assert.deepEqual(payloads[2], { data: { stock: { name: 'pears' } } });
    c.ws.close();
    await c.closed;
    await waitFor('the consumer stream deleted', async () => (await ownStreams()).length === 0, 10_000);
  });

  test('protocol: an invalid query is an error message; subscribe before connection_init closes 4401', async () => {
    const c = await openClient(gw.port, '/udg/');
    c.send({ type: 'connection_init' });
    await waitFor('connection_ack', () => c.messages.some((m) => m.type === 'connection_ack'), 5_000);
    c.send({ id: 'x', type: 'subscribe', payload: { query: 'subscription { stock { nope } }' } });
    await waitFor('error', () => c.messages.some((m) => m.type === 'error'), 5_000);
    const err = c.messages.find((m) => m.type === 'error') as { id: string; payload: { message: string }[] };
    assert.equal(err.id, 'x');
    assert.match(err.payload[0]?.message ?? '', /Cannot query field "nope" on type "Product"/);
    c.ws.close();
    const d = await openClient(gw.port, '/udg/');
    d.send({ id: 'y', type: 'subscribe', payload: { query: 'subscription { stock { name } }' } });
    assert.deepEqual(await d.closed, { code: 4401, reason: 'Unauthorized' });
  });

  test('an upgrade without the graphql-transport-ws subprotocol is refused with 400', async () => {
    assert.equal((await refusedUpgrade(`ws://127.0.0.1:${gw.port}/udg/`)).status, 400);
  });
});

describe('GraphQL: Kafka data source on a gateway without streaming', () => {
  const gw = useGateway();

  test('the write is refused with 400 naming the source and why', async () => {
    const res = await gw().admin('POST', '/svc/apis', kafkaApi('udg', '127.0.0.1:9092', 'g'));
    assert.equal(res.status, 400);
    assert.match(
      res.text,
      /graphql\.engine\.data_sources\[1\]\.kind: Forbidden: a Kafka data source is consumed through the gateway's stream processor \(Bento\): streaming is disabled on this gateway/,
    );
  });
});
