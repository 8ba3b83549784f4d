import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'undici';
import { Dispatchers, UpstreamPinError } from './dispatchers.ts';
import { upstreamFailure } from './proxy.ts';

const timeouts = { connectTimeoutMs: 1000, timeoutMs: 1000 };

test('one agent per distinct upstream TLS configuration, closed by the last route releasing it', async () => {
  const d = new Dispatchers(timeouts);
  const a = d.acquire(undefined, { pins: ['b', 'a'] });
  const b = d.acquire(undefined, { pins: ['a', 'b', 'a'] });
  const c = d.acquire({ ssl_insecure_skip_verify: true }, { pins: ['a', 'b'] });
  assert.equal(a.dispatcher, b.dispatcher, 'same pins in another order: one agent');
  assert.notEqual(a.dispatcher, c.dispatcher, 'other transport settings: another agent');
  assert.notEqual(a.dispatcher, d.for(undefined), 'not the shared agent');
  const agent = a.dispatcher;
  assert.ok(agent instanceof Agent);
  await a.release();
  await a.release(); // twice is once
  assert.equal(agent.closed, false, 'still held by b');
  await b.release();
  assert.equal(agent.closed, true);
  const again = d.acquire(undefined, { pins: ['a', 'b'] });
  assert.notEqual(again.dispatcher, a.dispatcher, 'a closed agent is never handed out again');
  await d.close();
});

test('a pin mismatch is answered 502 with its own message', () => {
  const e = upstreamFailure(new UpstreamPinError('no match'));
  assert.equal(e.status, 502);
  assert.equal(e.message, "The upstream's certificate does not match the pinned public keys");
});
