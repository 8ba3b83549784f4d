/**
 * Publishes passed to Bento as batches (batch.ts, lib/bento/batching.ts).
 *
 * Through a gateway and its real Bento: publishes that arrive together are delivered each once,
 * with the metadata each would have had alone; a stream that could tell a batch apart never gets
 * one. Against a plain HTTP server in Bento's place: what a batch request carries, and that a
 * batch Bento does not take sends each of its publishes alone again.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { silentLogger } from '../../lib/log.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { RequestContext } from '../pipeline/context.ts';
import type { Route } from '../pipeline/router.ts';
import { useGateway } from '../testing/harness.ts';
import { batchPublish, batchStats, type Outcome } from './batch.ts';
import { openSse, sseOutput, streamsDocument } from './testing.ts';

/**
 * POSTs each body on a connection of its own, all written in one turn once every connection is
 * open (so they reach the gateway together); resolves with each answer's status line.
 */
async function publishTogether(
  port: number,
  path: string,
  bodies: string[],
  headers: Record<string, string> = {},
): Promise<string[]> {
  const sockets = await Promise.all(
    bodies.map(
      () =>
        new Promise<ReturnType<typeof connect>>((resolve, reject) => {
          const s = connect({ host: '127.0.0.1', port }, () => {
            resolve(s);
          });
          s.once('error', reject);
        }),
    ),
  );
  const answers = sockets.map(
    (s) =>
      new Promise<string>((resolve) => {
        let got = '';
        s.on('data', (c: Buffer) => {
          got += c.toString('latin1');
          if (got.includes('\r\n\r\n')) {
            resolve(got.slice(0, got.indexOf('\r\n')));
            s.destroy();
          }
        });
        s.once('close', () => {
          resolve(got.slice(0, got.indexOf('\r\n')));
        });
      }),
  );
  // The gateway accepts a connection after the client sees it open: let it take them all first.
  await new Promise((r) => setTimeout(r, 50));
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  sockets.forEach((s, i) => {
    const body = Buffer.from(bodies[i] ?? '');
    s.write(
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nuser-agent: batch-test\r\n${extra}content-length: ${body.length}\r\n\r\n${body.toString()}`,
    );
  });
  return Promise.all(answers);
}

describe('publishes batched through a gateway and its Bento', () => {
  const gw = useGateway({ argv: ['--streaming-enabled', '--workers', '1'] }, async (g) => {
    // A heartbeat: the response head comes at once, not with the first event.
    const sse = (path: string) => sseOutput(path, true);
    const res = await g.admin(
      'POST',
      '/svc/apis/oas',
      streamsDocument('batched', {
        // Reads metadata: each message says what Bento gave it.
        meta: {
          input: { http_server: { path: '/in', ws_path: '' } },
          pipeline: {
            processors: [
              {
                mapping: [
                  'root.body = this',
                  'root.type = metadata("Content-Type")',
                  'root.length = metadata("Content-Length")',
                  'root.agent = metadata("User-Agent")',
                  'root.marks = metadata().keys().filter(k -> k.lowercase().has_prefix("x-svc")).sort()',
                ].join('\n'),
              },
            ],
          },
          output: sse('/meta'),
        },
        // Asks for the batch: never gets one.
        sized: {
          input: { http_server: { path: '/sized', ws_path: '' } },
          pipeline: { processors: [{ mapping: 'root = { "body": this, "size": batch_size() }' }] },
          output: sse('/sizes'),
        },
      }),
    );
    assert.equal(res.status, 200, res.text);
    await g.reload();
  });

  test('publishes that arrive together are each delivered once, with the metadata each had alone', async () => {
    const sse = await openSse(gw().port, '/batched/meta');
    assert.equal(sse.status, 200);
    // One alone first: what a message's metadata is without batching.
    const alone = await publishTogether(gw().port, '/batched/in', ['{"n":-1}'], {
      'content-type': 'application/json',
    });
    assert.deepEqual(alone, ['HTTP/1.1 200 OK']);
    await waitFor('the lone message', () => sse.events.length === 1, 10_000);
    const before = { ...batchStats };
    const bodies: string[] = [];
    // Rounds until the gateway has seen publishes together (one turn of its loop): a round's
    // 40 connections almost always land in the same turn, but the test does not count on it.
    for (let round = 0; round < 10 && batchStats.messages === before.messages; round++) {
      const batch = Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ n: round * 100 + i, pad: 'x'.repeat(i) }),
      );
      bodies.push(...batch);
      const statuses = await publishTogether(gw().port, '/batched/in', batch, {
        'content-type': 'application/json',
        // A client's own batch marks are never taken for the gateway's.
        'x-svc-batch': '1',
        'x-svc-batch-content-type': 'text/forged',
      });
      assert.deepEqual(new Set(statuses), new Set(['HTTP/1.1 200 OK']));
    }
    assert.ok(batchStats.messages - before.messages >= 2, 'publishes went to Bento in batches');
    assert.equal(batchStats.failed, before.failed);
    // Counted on /metrics, by API and stream (this gateway's first batches).
    const metrics = (await gw().request({ method: 'GET', path: '/metrics' })).text;
    const series = (name: string): number =>
      Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    assert.equal(
      series('svc_gateway_stream_batched_messages_total\\{api_id="batched",stream="meta"\\}'),
      batchStats.messages - before.messages,
      metrics,
    );
    assert.equal(
      series('svc_gateway_stream_batches_total\\{api_id="batched",stream="meta",outcome="taken"\\}'),
      batchStats.batches - before.batches,
    );
    await waitFor(`${bodies.length + 1} events`, () => sse.events.length >= bodies.length + 1, 20_000);
    await new Promise((r) => setTimeout(r, 200));
    sse.close();
    const events = sse.events.map((e) => JSON.parse(e) as Record<string, unknown>);
    assert.equal(events.length, bodies.length + 1, 'no message twice');
    const [first, ...rest] = events;
    assert.deepEqual(first, {
      body: { n: -1 },
      type: 'application/json',
      length: '8',
      agent: 'batch-test',
      marks: [],
    });
    assert.deepEqual(
      rest.map((e) => JSON.stringify(e.body)).sort(),
      bodies.map((b) => JSON.stringify(JSON.parse(b))).sort(),
      'every message, once',
    );
    for (const e of rest) {
      const body = JSON.stringify(e.body).length;
      assert.deepEqual(
        { type: e.type, length: e.length, agent: e.agent, marks: e.marks },
        { type: 'application/json', length: String(body), agent: 'batch-test', marks: [] },
        JSON.stringify(e),
      );
    }
  });

  test('a stream whose mapping asks for the batch gets every publish alone', async () => {
    const sse = await openSse(gw().port, '/batched/sizes');
    const before = { ...batchStats };
    const bodies = Array.from({ length: 30 }, (_, i) => String(i));
    const statuses = await publishTogether(gw().port, '/batched/sized', bodies);
    assert.deepEqual(new Set(statuses), new Set(['HTTP/1.1 200 OK']));
    await waitFor('30 events', () => sse.events.length >= 30, 10_000);
    sse.close();
    assert.deepEqual(batchStats, before, 'no batch');
    for (const e of sse.events) assert.equal((JSON.parse(e) as { size: number }).size, 1, e);
  });
});

describe('batch requests, against an HTTP server in place of Bento', () => {
  let server: Server;
  let port: number;
  let status = 200;
  const seen: { headers: IncomingMessage['headers']; body: string; url: string }[] = [];
  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({
          headers: req.headers,
          body: Buffer.concat(chunks).toString('latin1'),
          url: req.url ?? '',
        });
        res.writeHead(status, { 'content-length': '0' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.close();
  });

  const ctx = (headers: Record<string, string>): RequestContext =>
    new RequestContext({
      method: 'POST',
      path: '/api/in',
      query: '?q=1',
      headers: { host: 'gw.example', ...headers },
      socketAddress: '10.1.2.3',
      route: {} as Route,
      listener: { protocol: 'http', trustForwarded: false },
      log: silentLogger(),
    });

  test('publishes of one turn with the same headers: one multipart request, each body a part', async () => {
    seen.length = 0;
    status = 200;
    const bodies = ['{"a":1}', 'two\r\n--not-a-boundary', ''];
    const outcomes = await Promise.all(
      bodies.map((b) =>
        batchPublish(
          ctx({ 'content-type': 'application/json', 'content-length': String(b.length) }),
          port,
          '/s.x/in',
          Buffer.from(b),
        ),
      ),
    );
    assert.deepEqual(outcomes, ['sent', 'sent', 'sent']);
    assert.equal(seen.length, 1);
    const req = seen[0];
    assert.ok(req !== undefined);
    assert.equal(req.url, '/s.x/in?q=1');
    assert.equal(req.headers['x-svc-batch'], '1');
    assert.equal(req.headers['x-svc-batch-content-type'], 'application/json');
    assert.equal(req.headers['x-forwarded-for'], '10.1.2.3');
    const boundary = /^multipart\/mixed; boundary=(.+)$/.exec(req.headers['content-type'] ?? '')?.[1];
    assert.ok(boundary !== undefined, req.headers['content-type']);
    const parts = req.body
      .split(`--${boundary}`)
      .slice(1, -1)
      .map((p) => p.slice('\r\n\r\n'.length, -2));
    assert.deepEqual(parts, bodies);
    assert.equal(req.body.endsWith(`--${boundary}--\r\n`), true);
  });

  test('publishes with different headers go in different batches; one alone is sent by the caller', async () => {
    seen.length = 0;
    const outcomes = await Promise.all([
      batchPublish(ctx({ 'x-k': 'a' }), port, '/s.x/in', Buffer.from('1')),
      batchPublish(ctx({ 'x-k': 'a' }), port, '/s.x/in', Buffer.from('2')),
      batchPublish(ctx({ 'x-k': 'b' }), port, '/s.x/in', Buffer.from('3')),
    ]);
    assert.deepEqual(outcomes, ['sent', 'sent', 'alone']);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.headers['x-k'], 'a');
  });

  test('a batch Bento refuses, or cannot take, sends each publish alone', async () => {
    status = 502;
    const refused = await Promise.all(
      [1, 2, 3].map((i) => batchPublish(ctx({}), port, '/s.x/in', Buffer.from(String(i)))),
    );
    assert.deepEqual(refused, ['alone', 'alone', 'alone']);
    status = 200;
    const closed = await freePort();
    const unreachable: Outcome[] = await Promise.all(
      [1, 2].map((i) => batchPublish(ctx({}), closed, '/s.x/in', Buffer.from(String(i)))),
    );
    assert.deepEqual(unreachable, ['alone', 'alone']);
    // The kept-alive connection still serves the next batch.
    const again = await Promise.all(
      [1, 2].map((i) => batchPublish(ctx({}), port, '/s.x/in', Buffer.from(String(i)))),
    );
    assert.deepEqual(again, ['sent', 'sent']);
  });
});
