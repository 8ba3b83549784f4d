import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inertStream } from './streams.ts';

const NOTHING = { inproc: 'svc_check_nothing' };

test('inertStream: inputs that reach outside Bento read a channel nobody writes to, keeping their processors', () => {
  const made = inertStream({
    input: {
      label: 'orders',
      broker: {
        inputs: [
          { kafka: { addresses: ['k:9092'] }, processors: [{ mapping: 'root = this' }] },
          { http_server: { path: '/in' } },
          { resource: 'shared' },
          { sequence: { inputs: [{ file: { paths: ['a'] } }] } },
          { read_until: { input: { amqp_0_9: { urls: ['amqp://x'] } }, check: 'true' } },
        ],
      },
    },
    pipeline: { processors: [{ log: { message: 'x' } }] },
    output: { drop: {} },
  });
  assert.deepEqual(made, {
    input: {
      label: 'orders',
      broker: {
        inputs: [
          { ...NOTHING, processors: [{ mapping: 'root = this' }] },
          { http_server: { path: '/in' } },
          { resource: 'shared' },
          { sequence: { inputs: [NOTHING] } },
          { read_until: { input: NOTHING, check: 'true' } },
        ],
      },
    },
    pipeline: { processors: [{ log: { message: 'x' } }] },
    output: { drop: {} },
  });
});

test('inertStream: outputs that reach outside Bento drop, through brokers, switches, fallbacks and retries', () => {
  const made = inertStream({
    input: { http_server: {} },
    output: {
      broker: {
        pattern: 'fan_out',
        outputs: [
          { http_client: { url: 'http://x' }, processors: [{ log: {} }] },
          { switch: { cases: [{ check: 'true', output: { kafka: {} } }, 'odd'] } },
          { fallback: [{ nats: {} }, { http_server: {} }] },
          { retry: { output: { redis_list: {} }, max_retries: 1 } },
          { resource: 'out' },
        ],
      },
    },
  });
  assert.deepEqual(made, {
    input: { http_server: {} },
    output: {
      broker: {
        pattern: 'fan_out',
        outputs: [
          { drop: {}, processors: [{ log: {} }] },
          { switch: { cases: [{ check: 'true', output: { drop: {} } }, 'odd'] } },
          { fallback: [{ drop: {} }, { http_server: {} }] },
          { retry: { output: { drop: {} }, max_retries: 1 } },
          { resource: 'out' },
        ],
      },
    },
  });
});

test('inertStream: what is no connector is left as it is', () => {
  assert.deepEqual(inertStream({ input: 'text', output: [1] }), { input: 'text', output: [1] });
});
