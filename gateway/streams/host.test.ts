/**
 * Keeping Bento's streams equal to the desired set, on a real Bento: a change to an API that
 * touches only a stream's rate limits (node-wide resources on Bento, outside the stream's text)
 * reaches the running stream; and after Bento dies, `/ready` says ready only once the streams are
 * back on the new process, never while it answers but runs nothing yet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { send } from '../testing/client.ts';
import { streamingWithArrivals, streamsDocument } from './testing.ts';

describe('streams host: what Bento runs follows the APIs', () => {
  const s = streamingWithArrivals();

  /** Publishes `n` messages at once to `/rl/in`; the span of their arrivals at the server, in ms. */
  async function burst(prefix: string, n: number): Promise<number> {
    s.server.arrivals.length = 0;
    const bodies = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    const answers = await Promise.all(
      bodies.map((b) => s.gw.request({ method: 'POST', path: '/rl/in', body: b })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    assert.deepEqual(s.server.arrivals.map((a) => a.body).sort(), bodies.sort());
    const times = s.server.arrivals.map((a) => a.at).sort((x, y) => x - y);
    return (times.at(-1) ?? 0) - (times[0] ?? 0);
  }

  test('a change of rate limits alone updates the running stream', async () => {
    const doc = (count: number): Record<string, unknown> =>
      streamsDocument('rl', {
        out: {
          input: { http_server: { path: '/in' } },
          output: {
            http_client: { url: `${s.server.url}/hook`, verb: 'POST', rate_limit: 'gate', max_in_flight: 8 },
          },
          rate_limit_resources: [{ label: 'gate', local: { count, interval: '1s' } }],
        },
      });
    let res = await s.gw.admin('POST', '/svc/apis/oas', doc(2));
    assert.equal(res.status, 200, res.text);
    await s.gw.reload();
    // Two a second: four messages span at least one full interval.
    const slow = await burst('s', 4);
    assert.ok(slow >= 900, `4 messages at 2/s arrived within ${slow} ms`);
    // Only the rate limit changes: the stream's own configuration is the same text.
    res = await s.gw.admin('PUT', '/svc/apis/oas/rl', doc(1000));
    assert.equal(res.status, 200, res.text);
    await s.gw.reload();
    const fast = await burst('f', 6);
    assert.ok(fast < 800, `6 messages at 1000/s took ${fast} ms: the old limit of 2/s still applies`);
  });

  test('after Bento dies, /ready says ready only once the streams are back', async () => {
    // Many streams, so that putting them back takes a while after the new process answers.
    const names = Array.from({ length: 24 }, (_, i) => `s${i}`);
    const streams = Object.fromEntries(
      names.map((n) => [n, { input: { http_server: { path: `/${n}`, ws_path: '' } }, output: { drop: {} } }]),
    );
    const res = await s.gw.admin('POST', '/svc/apis/oas', streamsDocument('many', streams));
    assert.equal(res.status, 200, res.text);
    await s.gw.reload();
    const last = `/many/${names.at(-1) ?? ''}`;
    assert.equal((await s.gw.request({ method: 'POST', path: last, body: 'x' })).status, 200);
    const host = s.gw.gw.streams.process;
    const pid = host?.pid;
    assert.ok(host !== undefined && pid !== undefined);
    process.kill(pid, 'SIGKILL');
    await waitFor('Bento seen down', () => s.gw.gw.streams.state !== 'up', 5_000, 1);
    // From here on, every 200 of /ready must find every stream on Bento and served.
    let notReady = 0;
    const deadline = Date.now() + 30_000;
    for (;;) {
      assert.ok(Date.now() < deadline, 'the gateway did not get ready again within 30 s');
      const ready = await send({ port: s.gw.port, path: '/ready', fresh: true });
      if (ready.status !== 200) {
        assert.equal(ready.status, 503, ready.text);
        notReady++;
        await new Promise((r) => setImmediate(r));
        continue;
      }
      const listed = await host.call('GET', '/streams');
      const running = Object.keys(JSON.parse(listed.body) as Record<string, unknown>);
      assert.equal(
        running.filter((id) => id.startsWith('many.')).length,
        names.length,
        `/ready said 200 with ${running.length} of ${names.length} streams back on Bento`,
      );
      const r = await s.gw.request({ method: 'POST', path: last, body: 'after' });
      assert.equal(r.status, 200, `/ready said 200 but ${last} answered ${r.status}: ${r.text}`);
      break;
    }
    assert.ok(notReady > 0, '/ready said not ready while Bento was restarting');
    assert.notEqual(host.pid, pid);
    assert.equal(s.gw.gw.streams.restarts, 1);
  });
});
