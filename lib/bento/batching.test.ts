/**
 * Which streams take their publishes as batches (lib/bento/batching.ts): only those where no
 * processor, mapping or output can tell a batch from messages sent one by one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BATCH_REPAIR, metadataSeen, takesBatches, withBatchRepair } from './batching.ts';

const sse = { http_server: { path: '', stream_path: '/out', stream_format: 'event_source' } };
const base = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  input: { http_server: { path: '/in' } },
  pipeline: { processors: [{ mapping: 'root = this' }] },
  output: sse,
  ...over,
});

describe('takesBatches', () => {
  test('an http_server input through per-message processors to an event stream, Kafka, NATS, MQTT, AMQP', () => {
    assert.equal(takesBatches(base()), true);
    for (const output of [
      { kafka: { addresses: ['k:9092'], topic: 't' } },
      { kafka_franz: { seed_brokers: ['k:9092'], topic: 't' } },
      { nats: { urls: ['nats://n'], subject: 's' } },
      { mqtt: { urls: ['tcp://m'], topic: 't' } },
      { amqp_0_9: { urls: ['amqp://a'], exchange: 'e' } },
      { broker: { pattern: 'fan_out', outputs: [sse, { drop: {} }] } },
      { ...sse, processors: [{ log: { message: 'out' } }] },
    ])
      assert.equal(takesBatches(base({ output })), true, JSON.stringify(output));
    const nested = [
      { switch: [{ check: 'this.a == 1', processors: [{ mapping: 'root.b = 2' }] }] },
      {
        branch: {
          request_map: 'root = this',
          processors: [{ mapping: 'root = 1' }],
          result_map: 'root.x = this',
        },
      },
      { try: [{ mapping: 'root = this' }] },
      { catch: [{ log: { message: 'failed' } }] },
      { for_each: [{ mapping: 'root = this' }] },
    ];
    for (const p of nested)
      assert.equal(takesBatches(base({ pipeline: { processors: [p] } })), true, JSON.stringify(p));
  });

  test('an output that shows a batch as one: http_server with its GET path, or a raw stream', () => {
    assert.equal(
      takesBatches(base({ output: { http_server: { stream_path: '/out', stream_format: 'event_source' } } })),
      false,
    );
    assert.equal(takesBatches(base({ output: { http_server: { path: '', stream_path: '/out' } } })), false);
    assert.equal(
      takesBatches(
        base({ output: { http_server: { path: '', stream_path: '/o', stream_format: 'raw_bytes' } } }),
      ),
      false,
    );
  });

  test('outputs that send a batch as one request, or pick one output per batch, or are unknown', () => {
    for (const output of [
      { http_client: { url: 'http://x' } },
      { portal_webhook: { event_type: 'e', portal_url: 'http://p' } },
      { broker: { pattern: 'round_robin', outputs: [sse, sse] } },
      { broker: { pattern: 'fan_out', outputs: [sse, { http_client: { url: 'http://x' } }] } },
      { switch: { cases: [{ output: sse }] } },
      { reject_errored: sse },
      { file: { path: '/tmp/x' } },
      { resource: 'out' },
    ])
      assert.equal(takesBatches(base({ output })), false, JSON.stringify(output));
  });

  test('processors that work on the batch, mappings that ask for it, answers and limits per request', () => {
    for (const p of [
      { archive: { format: 'json_array' } },
      { split: { size: 1 } },
      { group_by_value: { value: '${! this.k }' } },
      { sleep: { duration: '1s' } },
      { resource: 'shared' },
      { mapping: 'root.i = batch_index()' },
      { mapping: 'root.n = batch_size()' },
      { sync_response: {} },
      { switch: [{ check: 'true', processors: [{ archive: { format: 'lines' } }] }] },
      { branch: { processors: [{ workflow: {} }] } },
    ])
      assert.equal(takesBatches(base({ pipeline: { processors: [p] } })), false, JSON.stringify(p));
    assert.equal(takesBatches(base({ input: { http_server: { path: '/in', rate_limit: 'rl' } } })), false);
    assert.equal(takesBatches(base({ output: { sync_response: {} } })), false);
    assert.equal(takesBatches(base({ buffer: { memory: {} } })), false);
    assert.equal(
      takesBatches(
        base({ input: { http_server: { path: '/in' }, processors: [{ archive: { format: 'lines' } }] } }),
      ),
      false,
    );
  });

  test('inputs other than an http_server of its own', () => {
    assert.equal(
      takesBatches(base({ input: { broker: { inputs: [{ http_server: { path: '/in' } }] } } })),
      false,
    );
    assert.equal(takesBatches(base({ input: { kafka: { addresses: ['k'], topics: ['t'] } } })), false);
  });
});

describe('the metadata of a batched message', () => {
  test('repaired when a mapping reads metadata or an output sends it (Kafka, AMQP headers)', () => {
    assert.equal(metadataSeen(base()), false);
    assert.equal(
      metadataSeen(base({ pipeline: { processors: [{ mapping: 'root.t = meta("Content-Type")' }] } })),
      true,
    );
    assert.equal(metadataSeen(base({ pipeline: { processors: [{ mapping: 'root.t = @' }] } })), true);
    assert.equal(metadataSeen(base({ output: { kafka: { addresses: ['k'], topic: 't' } } })), true);
    assert.equal(
      metadataSeen(base({ output: { broker: { outputs: [sse, { amqp_0_9: { urls: ['amqp://a'] } }] } } })),
      true,
    );
    assert.equal(metadataSeen(base({ output: { nats: { urls: ['nats://n'], subject: 's' } } })), false);
  });

  test('the repair goes first among the input processors, the rest kept in order; none when unseen', () => {
    const own = { mapping: 'root.t = meta("Content-Type")' };
    const config = base({ input: { http_server: { path: '/in' }, processors: [own] } });
    const out = withBatchRepair(config);
    assert.deepEqual((out.input as { processors: unknown[] }).processors, [BATCH_REPAIR, own]);
    assert.deepEqual(
      (config.input as { processors: unknown[] }).processors,
      [own],
      'the given config untouched',
    );
    const plain = base();
    assert.equal(withBatchRepair(plain), plain);
  });
});
