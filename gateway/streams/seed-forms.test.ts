/**
 * The seed's stream forms not exercised elsewhere, through the gateway on a real Bento: an
 * `http_server` input's `timeout` (a publish nobody takes is answered when it runs out, not at
 * Bento's default 5 s), a `broker` input with `inputs` (every child input's publishes reach the
 * output; two inputs on their own paths are not refused for the WebSocket path Bento gives each
 * by default, in one stream or two), and `label` on an input and an output (the stream runs, and Bento's series on
 * `/metrics` carry the labels).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { openSse, sseOutput, streamsDocument } from './testing.ts';

/** An event-stream output on `path` and nothing else (no heartbeat). */
const sse = (path: string) => sseOutput(path);

describe('streams: the seed’s input timeout, broker inputs and labels', () => {
  let gw: InProcessGateway;
  /** POSTs `body` to `path` on a connection of its own; the status and how long it took. */
  const post = async (path: string, body: string): Promise<{ status: number; text: string; ms: number }> => {
    const t0 = performance.now();
    const r = await gw.request({ fresh: true, method: 'POST', path, body });
    return { status: r.status, text: r.text, ms: performance.now() - t0 };
  };
  const addStreams = async (doc: Record<string, unknown>): Promise<void> => {
    const res = await gw.admin('POST', '/svc/apis/oas', doc);
    assert.equal(res.status, 200, res.text);
  };

  before(async () => {
    gw = await startGateway({ argv: ['--streaming-enabled', '--workers', '1'] });
    await addStreams(
      streamsDocument('timed', {
        relay: { input: { http_server: { path: '/in', timeout: '1s' } }, output: sse('/sse') },
      }),
    );
    await addStreams(
      streamsDocument('brokered', {
        relay: {
          input: {
            broker: {
              inputs: [
                { http_server: { path: '/a' } },
                { http_server: { path: '/b', allowed_verbs: ['PUT'] } },
              ],
            },
          },
          output: sse('/sse'),
        },
        // Another stream of the API with an input on its own path: it, too, has Bento's default
        // ws_path (/post/ws), which neither asked for.
        direct: { input: { http_server: { path: '/c' } }, output: sse('/sse-c') },
      }),
    );
    await addStreams(
      streamsDocument('labelled', {
        relay: {
          input: { label: 'orders_in', http_server: { path: '/in' } },
          output: { label: 'orders_out', ...sse('/sse') },
        },
      }),
    );
    await gw.reload();
  });
  after(async () => {
    await gw.stop();
  });

  test('input timeout: a publish no consumer takes is answered 408 once the input’s timeout has run out', async () => {
    const refused = await post('/timed/in', 'nobody listens');
    assert.equal(refused.status, 408, refused.text);
    assert.ok(
      refused.ms >= 900 && refused.ms < 4_000,
      `answered after ${Math.round(refused.ms)} ms, not 5 s`,
    );
    // With a consumer the same input takes publishes at once.
    const opening = openSse(gw.port, '/timed/sse');
    const taken = await post('/timed/in', 'taken');
    assert.equal(taken.status, 200, taken.text);
    const c = await opening;
    await waitFor('the event', () => c.events.includes('taken'), 10_000);
    c.close();
  });

  test('broker input with inputs: publishes to each child input reach the output', async () => {
    const opening = openSse(gw.port, '/brokered/sse');
    const a = await post('/brokered/a', 'via a');
    assert.equal(a.status, 200, a.text);
    const c = await opening;
    const b = await gw.request({ fresh: true, method: 'PUT', path: '/brokered/b', body: 'via b' });
    assert.equal(b.status, 200, b.text);
    await waitFor('both events', () => c.events.length >= 2, 10_000);
    assert.deepEqual([...c.events].sort(), ['via a', 'via b']);
    const wrongVerb = await gw.request({ fresh: true, method: 'POST', path: '/brokered/b', body: 'x' });
    assert.equal(wrongVerb.status, 405, 'each child input keeps its own allowed_verbs');
    c.close();
    // The API's other stream, beside the broker's inputs.
    const openingC = openSse(gw.port, '/brokered/sse-c');
    const direct = await post('/brokered/c', 'via c');
    assert.equal(direct.status, 200, direct.text);
    const cc = await openingC;
    await waitFor('the other stream’s event', () => cc.events.includes('via c'), 10_000);
    cc.close();
  });

  test('two inputs that write the same path are refused, naming it', async () => {
    const res = await gw.admin(
      'POST',
      '/svc/apis/oas',
      streamsDocument('twice', {
        relay: {
          input: { broker: { inputs: [{ http_server: { path: '/in' } }, { http_server: { path: '/in' } }] } },
          output: sse('/sse'),
        },
      }),
    );
    assert.equal(res.status, 400, res.text);
    assert.match(
      res.text,
      /x-svc-streaming\.streams\.relay\.input\.broker\.inputs\[1\]\.http_server: \/in is already served by/,
    );
  });

  test('label on an input and an output: the stream runs and Bento’s series carry the labels', async () => {
    const opening = openSse(gw.port, '/labelled/sse');
    const r = await post('/labelled/in', 'labelled message');
    assert.equal(r.status, 200, r.text);
    const c = await opening;
    await waitFor('the event', () => c.events.includes('labelled message'), 10_000);
    c.close();
    const text = (await gw.request({ path: '/metrics' })).text;
    const series = (name: string, label: string): string | undefined =>
      text
        .split('\n')
        .find(
          (l) =>
            l.startsWith(`${name}{`) &&
            l.includes('api_id="labelled"') &&
            l.includes('stream="relay"') &&
            l.includes(`label="${label}"`),
        );
    assert.match(series('svc_bento_input_received', 'orders_in') ?? '', / 1$/, text.slice(-3000));
    assert.match(series('svc_bento_output_sent', 'orders_out') ?? '', / 1$/);
  });
});
