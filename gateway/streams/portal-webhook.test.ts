/**
 * `portal_webhook` through the gateway on a real Bento: subscriptions read from a portal started
 * by the test, each message delivered to every subscriber of its event with a valid HMAC-SHA256
 * signature, a failing subscriber retried with backoff and given up on without holding up the
 * others, and the message acknowledged to the publisher only once that is over; each delivery
 * carries the content type its message was published with.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import {
  DELIVERY_DEFAULTS,
  DELIVERY_HEADER,
  EVENT_HEADER,
  SIGNATURE_HEADER,
  sign,
} from './portal-webhook.ts';
import { streamsDocument } from './testing.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

interface Hit {
  at: number;
  body: string;
  headers: IncomingMessage['headers'];
}

async function listen(handler: (req: IncomingMessage, body: string) => number | object): Promise<{
  server: Server;
  url: string;
}> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const out = handler(req, Buffer.concat(chunks).toString('utf8'));
      if (typeof out === 'number') {
        res.writeHead(out);
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out));
      }
    });
  });
  return { server, url: await listenLocal(server) };
}

describe('portal_webhook', () => {
  let gw: InProcessGateway;
  const servers: Server[] = [];
  const hits = new Map<string, Hit[]>();
  let portalAuth: string | undefined;
  let subsUrl = '';
  let late = false;
  before(async () => {
    const subscriber = await listen((req, body) => {
      const name = (req.url ?? '/').slice(1);
      const list = hits.get(name) ?? [];
      list.push({ at: Date.now(), body, headers: req.headers });
      hits.set(name, list);
      return name === 'broken' ? 500 : 204;
    });
    servers.push(subscriber.server);
    subsUrl = subscriber.url;
    const portal = await listen((req) => {
      portalAuth = req.headers.authorization;
      return {
        subscriptions: [
          { id: 'a', url: `${subsUrl}/a`, secret: 'secret-a', events: ['order.created'] },
          { id: 'b', url: `${subsUrl}/b`, secret: 'secret-b', events: ['order.created', 'order.paid'] },
          { id: 'broken', url: `${subsUrl}/broken`, secret: 'secret-c', events: ['order.created'] },
          { id: 'other', url: `${subsUrl}/other`, secret: 'secret-d', events: ['order.paid'] },
          { id: 'typed', url: `${subsUrl}/typed`, secret: 'secret-t', events: ['order.typed'] },
          ...(late ? [{ id: 'late', url: `${subsUrl}/late`, secret: 'secret-e' }] : []),
        ],
      };
    });
    servers.push(portal.server);
    gw = await startGateway({ argv: ['--streaming-enabled', '--workers', '1'] });
    const res = await gw.admin(
      'POST',
      '/svc/apis/oas',
      streamsDocument('orders', {
        created: {
          input: { http_server: { path: '/in' } },
          output: {
            portal_webhook: {
              event_type: 'order.created',
              portal_url: `${portal.url}/subscriptions`,
              secret: 'portal-secret',
            },
          },
        },
        typed: {
          input: { http_server: { path: '/typed', ws_path: '' } },
          output: {
            portal_webhook: { event_type: 'order.typed', portal_url: `${portal.url}/subscriptions` },
          },
        },
        // A processor may say what the message has become.
        retyped: {
          input: { http_server: { path: '/retyped', ws_path: '' } },
          pipeline: { processors: [{ mutation: 'meta "Content-Type" = "application/vnd.order+json"' }] },
          output: {
            portal_webhook: { event_type: 'order.typed', portal_url: `${portal.url}/subscriptions` },
          },
        },
      }),
    );
    assert.equal(res.status, 200, res.text);
    await gw.reload();
  });
  after(async () => {
    try {
      await stopAll(gw);
    } finally {
      for (const s of servers) await closeServer(s);
    }
  });

  test('every subscriber of the event gets each message, signed; a failing one holds nobody up', async () => {
    const messages = ['{"order":1}', '{"order":2}', '{"order":3}'];
    const started = Date.now();
    const answers = await Promise.all(
      messages.map(async (m) => {
        const r = await gw.request({ method: 'POST', path: '/orders/in', body: m });
        return { body: m, status: r.status, at: Date.now() };
      }),
    );
    for (const a of answers) assert.equal(a.status, 200);
    assert.equal(portalAuth, 'Bearer portal-secret', 'the portal is asked with the output secret');
    for (const [name, secret] of [
      ['a', 'secret-a'],
      ['b', 'secret-b'],
    ] as const) {
      const got = hits.get(name) ?? [];
      assert.deepEqual(got.map((h) => h.body).sort(), [...messages].sort(), `${name} got every message once`);
      for (const h of got) {
        assert.equal(h.headers[SIGNATURE_HEADER], sign(h.body, secret), `${name}: signature verifies`);
        assert.notEqual(h.headers[SIGNATURE_HEADER], sign(h.body, 'secret-c'));
        assert.equal(h.headers[EVENT_HEADER], 'order.created');
        assert.ok(typeof h.headers[DELIVERY_HEADER] === 'string');
        // Delivered at once, not after the failing subscriber's retries.
        assert.ok(h.at - started < 2_000, `${name} served in ${h.at - started} ms`);
      }
    }
    assert.equal(hits.get('other'), undefined, 'a subscriber of another event gets nothing');
    // The failing subscriber was tried the documented number of times per message, with the
    // same delivery ID and a valid signature, and the publisher's answer waited for it.
    const broken = hits.get('broken') ?? [];
    assert.equal(broken.length, messages.length * DELIVERY_DEFAULTS.attempts);
    for (const h of broken) assert.equal(h.headers[SIGNATURE_HEADER], sign(h.body, 'secret-c'));
    const byDelivery = new Map<string, Hit[]>();
    for (const h of broken) {
      const id = String(h.headers[DELIVERY_HEADER]);
      byDelivery.set(id, [...(byDelivery.get(id) ?? []), h]);
    }
    assert.equal(byDelivery.size, messages.length);
    for (const tries of byDelivery.values()) {
      const gaps = tries.slice(1).map((h, i) => h.at - (tries[i]?.at ?? 0));
      for (let i = 1; i < gaps.length; i++)
        assert.ok((gaps[i] ?? 0) >= (gaps[i - 1] ?? 0) * 1.5, `backoff grows: ${gaps.join(', ')}`);
    }
    for (const a of answers) {
      const lastTry = Math.max(...broken.filter((h) => h.body === a.body).map((h) => h.at));
      assert.ok(a.at >= lastTry, 'acknowledged once the failing subscriber was given up on');
    }
  });

  test('subscriptions are read again: a new subscriber gets messages after the refresh', async () => {
    late = true;
    // The list read first is kept for DELIVERY_DEFAULTS.refreshMs; then read again.
    await waitFor(
      'the new subscriber served',
      async () => {
        await gw.request({ method: 'POST', path: '/orders/in', body: '{"order":"late"}' });
        return (hits.get('late') ?? []).length > 0;
      },
      DELIVERY_DEFAULTS.refreshMs + 15_000,
      1_000,
    );
    const got = hits.get('late')?.[0];
    assert.equal(got?.headers[SIGNATURE_HEADER], sign(got?.body ?? '', 'secret-e'));
  });

  test('a subscriber gets each message with the content type it was published with', async () => {
    const cases = [
      { path: '/orders/typed', body: '{"order":"json"}', type: 'application/json', want: 'application/json' },
      {
        path: '/orders/typed',
        body: 'plain words, ünïcödé',
        type: 'text/plain; charset=utf-8',
        want: 'text/plain; charset=utf-8',
      },
      // None given: an HTTP body of unknown type (RFC 9110 §8.3).
      { path: '/orders/typed', body: 'some bytes', type: undefined, want: 'application/octet-stream' },
      {
        path: '/orders/retyped',
        body: '{"order":"retyped"}',
        type: 'application/json',
        want: 'application/vnd.order+json',
      },
    ];
    for (const c of cases) {
      const res = await gw.request({
        method: 'POST',
        path: c.path,
        body: c.body,
        headers: c.type === undefined ? {} : { 'content-type': c.type },
      });
      assert.equal(res.status, 200, res.text);
      // Acknowledged once delivered: the subscriber has it.
      const got = (hits.get('typed') ?? []).filter((h) => h.body === c.body);
      assert.equal(got.length, 1, `${c.body}: delivered once`);
      const headers = got[0]?.headers ?? {};
      assert.equal(headers['content-type'], c.want, `${c.body}: content type`);
      assert.equal(headers[SIGNATURE_HEADER], sign(c.body, 'secret-t'), `${c.body}: signature`);
      assert.equal(headers[EVENT_HEADER], 'order.typed');
      assert.equal(headers['content-length'], String(Buffer.byteLength(c.body)));
    }
  });

  test('refused at write time when its settings are wrong', async () => {
    const res = await gw.admin(
      'POST',
      '/svc/apis/oas',
      streamsDocument('badhook', {
        s: { input: { http_server: {} }, output: { portal_webhook: { event_type: 'x', portal: 'y' } } },
      }),
    );
    assert.equal(res.status, 400);
    assert.match(
      res.text,
      /x-svc-streaming\.streams\.s\.output\.portal_webhook\.portal: field portal not recognised/,
    );
    assert.match(res.text, /portal_webhook\.portal_url: required/);
  });
});
