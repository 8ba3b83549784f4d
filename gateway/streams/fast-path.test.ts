/**
 * Stream endpoints on the connection-level fast path (server/fast-path/): publishes are served
 * there (not handed to node:http), messages arrive whole and in order, an
 * event stream outlives the upstream timeout, a consumer that closes its connection gets no more
 * (the next message goes to the next consumer), the chain in front still refuses, and Bento gone
 * is a 503 naming the stream as unavailable (then served again once the gateway restarted it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { addStreams, openSse, sseRelay, streamsDocument } from './testing.ts';

/** A short upstream timeout: an event stream idle longer than it must go on. */
const UPSTREAM_TIMEOUT_MS = 400;

/**
 * After a consumer closed its connection: Bento sees it gone a moment later, and a message sent
 * within that moment may go to the old consumer (and be lost there: Bento acknowledges it all the
 * same; consumers.test.ts waits for Bento instead). Each test opens its consumer once the one
 * before is gone.
 */
function consumerGone(): Promise<void> {
  return new Promise((r) => setTimeout(r, 300));
}

describe('streams on the fast path', () => {
  let gw: InProcessGateway;
  /** POSTs `body` to the stream's input on a connection of its own. */
  const post = (body: string) => gw.request({ fresh: true, method: 'POST', path: '/fast/post', body });
  /** The same, answered 200. */
  const publish = async (body: string): Promise<void> => {
    const res = await post(body);
    assert.equal(res.status, 200, res.text);
  };
  before(async () => {
    gw = await startGateway({
      argv: ['--streaming-enabled', '--workers', '1', '--upstream-timeout-ms', String(UPSTREAM_TIMEOUT_MS)],
    });
    // No heartbeat: nothing flows on the event stream between messages.
    await addStreams(gw, streamsDocument('fast', { relay: sseRelay(false) }));
  });
  after(async () => {
    await gw.stop();
  });

  test('publishes and an event stream are served on the fast path, every message delivered in order', async () => {
    const before = { ...fastPathStats };
    // Bento sends the head of an event stream with its first event.
    const opening = openSse(gw.port, '/fast/sse');
    const sent = Array.from({ length: 50 }, (_, i) => JSON.stringify({ i, text: `message ${i}` }));
    for (const body of sent) {
      await publish(body);
    }
    const sse = await opening;
    assert.equal(sse.status, 200);
    await waitFor('50 events', () => sse.events.length >= sent.length, 20_000);
    assert.deepEqual(sse.events, sent);
    sse.close();
    // The publishes (each on a new connection); the consumer may reuse a kept-alive connection
    // that node:http already has.
    assert.ok(fastPathStats.requests - before.requests >= sent.length, 'served on the fast path');
    assert.equal(fastPathStats.handoffs, before.handoffs, 'nothing handed to node:http');
  });

  test('an event stream idle longer than the upstream timeout still delivers', async () => {
    await consumerGone();
    const opening = openSse(gw.port, '/fast/sse');
    await publish('first');
    const sse = await opening;
    assert.equal(sse.status, 200);
    await new Promise((r) => setTimeout(r, UPSTREAM_TIMEOUT_MS * 3));
    await publish('late');
    await waitFor('the late event', () => sse.events.includes('late'), 10_000);
    sse.close();
  });

  test('a consumer that goes away: the next message goes to the consumer after it, not to the closed connection', async () => {
    await consumerGone();
    const o1 = openSse(gw.port, '/fast/sse');
    await publish('one');
    const first = await o1;
    await waitFor('one', () => first.events.includes('one'), 10_000);
    // The client closes its connection (FIN, as a browser tab closing): the gateway stops the call.
    first.close();
    const o2 = openSse(gw.port, '/fast/sse');
    await consumerGone();
    await publish('two');
    const second = await o2;
    await waitFor('two', () => second.events.includes('two'), 10_000);
    second.close();
    assert.deepEqual(first.events, ['one']);
  });

  test('a wrong verb is 405 and a path of no stream goes to the upstream (502 here)', async () => {
    const wrong = await gw.request({ method: 'GET', path: '/fast/post' });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.allow, 'POST');
    const other = await gw.request({ method: 'GET', path: '/fast/elsewhere' });
    assert.equal(other.status, 502);
  });

  test('Bento gone: a publish is 503 with Retry-After, on the fast path; served again once restarted', async () => {
    const pid = gw.gw.streams.process?.pid;
    assert.ok(pid !== undefined, 'Bento runs');
    const before = { ...fastPathStats };
    process.kill(pid, 'SIGKILL');
    // Sent at once: Bento's restart (a process start, then the streams posted again) takes far
    // longer than this request.
    const down = await post('lost');
    assert.equal(down.status, 503, down.text);
    assert.match(down.text, /The stream is not available right now/);
    assert.equal(down.headers['retry-after'], '1');
    assert.equal(fastPathStats.handoffs, before.handoffs, 'nothing handed to node:http');
    await waitFor(
      'Bento back',
      () => gw.gw.streams.state === 'up' && gw.gw.streams.process?.pid !== pid,
      20_000,
    );
    const opening = openSse(gw.port, '/fast/sse');
    await waitFor('a publish served again', async () => (await post('back')).status === 200, 20_000, 100);
    const sse = await opening;
    assert.equal(sse.status, 200);
    await waitFor('the event', () => sse.events.includes('back'), 10_000);
    sse.close();
  });
});
