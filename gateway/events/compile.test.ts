import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import { recordingLogger } from '../../lib/testing/log.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { Metrics, type EventOutcome } from '../metrics/metrics.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { chain } from '../routes/chain.ts';
import { useEcho } from '../testing/echo.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { compileEvents } from './compile.ts';
import { Cooldowns } from './cooldown.ts';
import { noEvents, type EventName, type GatewayEvent } from './events.ts';
import type { WebhookLimits } from './webhook.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

// --- a webhook receiver ----------------------------------------------------------------------------

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url: string;
  received: Received[];
  /** Requests waiting for an answer (`hang`). */
  hanging(): number;
  /** Answers every hanging request with 200. */
  release(): void;
  close(): Promise<void>;
}

/** A webhook receiver; `answer(n)` says what its n-th request (from 0) gets. */
async function startReceiver(answer: (n: number) => number | 'hang' = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  let hung: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = received.length;
      received.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const a = answer(n);
      if (a === 'hang') hung.push(res);
      else res.writeHead(a).end();
    });
  });
  return {
    url: `${await listenLocal(server)}/hook`,
    received,
    hanging: () => hung.filter((r) => !r.destroyed && !r.writableEnded).length,
    release: () => {
      for (const r of hung) if (!r.destroyed) r.writeHead(200).end();
      hung = [];
    },
    close: () => closeServer(server),
  };
}

// --- a middleware that fires events --------------------------------------------------------------------

/**
 * Compiles the API's event handlers and fires the event named by `x-fire` (message `x-message`)
 * on each request, as the limit middleware will through `ctx.emit`.
 */
function firing(opts: {
  metrics: Metrics;
  now?: () => number;
  limits?: Partial<WebhookLimits>;
}): GatewayMiddleware {
  return {
    name: 'test-fire-events',
    enabled: () => true,
    create: (api, deps) => {
      const events = compileEvents(api, {
        log: deps.log,
        now: opts.now ?? deps.now,
        metrics: opts.metrics,
        cooldowns: new Cooldowns(),
        webhookLimits: { backoffMs: 10, ...opts.limits },
      });
      return {
        handle: async (ctx, next) => {
          const name = ctx.headers['x-fire'];
          if (typeof name === 'string') {
            const message = ctx.headers['x-message'];
            events.emit({
              event: name as EventName,
              message: typeof message === 'string' ? message : 'Key quota limit exceeded',
              path: ctx.path,
              origin: ctx.clientIp,
              key: 'hashed-key-1',
              api_id: ctx.route.id,
              timestamp: new Date(0).toISOString(),
            });
          }
          await next();
          return undefined;
        },
        close: () => events.close(),
      };
    },
  };
}

/** The value of one sample of `metrics`, 0 when absent. */
async function sample(metrics: Metrics, event: EventName, outcome: EventOutcome): Promise<number> {
  const line = `svc_gateway_events_total{event="${event}",outcome="${outcome}"} `;
  const found = (await metrics.text()).split('\n').find((l) => l.startsWith(line));
  return found === undefined ? 0 : Number(found.slice(line.length));
}

const webhook = (meta: Record<string, unknown>): unknown => ({
  handler_name: 'eh_web_hook_handler',
  handler_meta: meta,
});

// --- through a gateway ------------------------------------------------------------------------------------

describe('event handlers on a gateway', () => {
  const echo = useEcho();

  /** A gateway with the firing middleware and one keyless API `a1` at /a/ with `events`. */
  async function gatewayWith(
    events: Record<string, unknown>,
    opts: Parameters<typeof firing>[0] & { log?: Logger },
  ): Promise<InProcessGateway> {
    const gw = await startGateway({
      chain: [firing(opts), ...chain],
      ...(opts.log ? { log: opts.log } : {}),
    });
    await gw.addApi(keyless('a1', '/a/', echo().url, { event_handlers: { events } }));
    await gw.reload();
    return gw;
  }

  const fire = (gw: InProcessGateway, event: string, message?: string) =>
    gw.request({
      path: '/a/orders',
      headers: { 'x-fire': event, ...(message === undefined ? {} : { 'x-message': message }) },
    });

  test('a webhook receives the payload as JSON, with its headers', async () => {
    const rx = await startReceiver();
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith(
      { QuotaExceeded: [webhook({ target_path: rx.url, header_map: { 'X-Hook': 'orders' } })] },
      { metrics },
    );
    try {
      assert.equal((await fire(gw, 'QuotaExceeded')).status, 200);
      await waitFor('the delivery', () => rx.received.length === 1, 5000);
      const got = rx.received[0];
      assert.equal(got?.method, 'POST');
      assert.equal(got.path, '/hook');
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['x-hook'], 'orders');
      assert.equal(got.headers['user-agent'], 'svc-gateway-webhook');
      assert.deepEqual(JSON.parse(got.body), {
        event: 'QuotaExceeded',
        message: 'Key quota limit exceeded',
        path: '/a/orders',
        origin: '127.0.0.1',
        key: 'hashed-key-1',
        api_id: 'a1',
        timestamp: '1970-01-01T00:00:00.000Z',
      });
      await waitFor(
        'the delivery counted',
        async () => (await sample(metrics, 'QuotaExceeded', 'delivered')) === 1,
      );
      // Events without handlers go nowhere.
      await fire(gw, 'AuthFailure');
      assert.equal(rx.received.length, 1);
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('a body template fills in the payload, JSON-escaped for JSON bodies and as is otherwise', async () => {
    const rx = await startReceiver();
    const gw = await gatewayWith(
      {
        KeyExpired: [
          webhook({
            target_path: rx.url,
            method: 'put',
            body_template: '{"kind": "{{.event}}", "text": "{{ .Meta.Message }}", "api": "{{.api_id}}"}',
          }),
          webhook({
            target_path: `${rx.url}/plain`,
            header_map: { 'Content-Type': 'text/plain' },
            body_template: '{{.Type}} at {{.path}} from {{.origin}}: {{.message}}',
          }),
          webhook({ target_path: `${rx.url}/get`, method: 'GET' }),
        ],
      },
      { metrics: new Metrics({ processMetrics: false }) },
    );
    try {
      await fire(gw, 'KeyExpired', 'Key has "expired"');
      await waitFor('three deliveries', () => rx.received.length === 3, 5000);
      const byPath = new Map(rx.received.map((r) => [r.path, r]));
      const json = byPath.get('/hook');
      assert.equal(json?.method, 'PUT');
      assert.deepEqual(JSON.parse(json.body), { kind: 'KeyExpired', text: 'Key has "expired"', api: 'a1' });
      const plain = byPath.get('/hook/plain');
      assert.equal(plain?.headers['content-type'], 'text/plain');
      assert.equal(plain.body, 'KeyExpired at /a/orders from 127.0.0.1: Key has "expired"');
      const get = byPath.get('/hook/get');
      assert.equal(get?.method, 'GET');
      assert.equal(get.body, '');
      assert.equal(get.headers['content-type'], undefined);
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('an identical delivery within the cooldown is suppressed', async () => {
    const rx = await startReceiver();
    const metrics = new Metrics({ processMetrics: false });
    let clock = Date.parse('2030-01-01T00:00:00Z');
    const gw = await gatewayWith(
      { QuotaExceeded: [webhook({ target_path: rx.url, event_timeout: 60 })] },
      { metrics, now: () => clock },
    );
    try {
      await fire(gw, 'QuotaExceeded');
      await fire(gw, 'QuotaExceeded'); // same event, key, API and message: suppressed
      assert.equal(await sample(metrics, 'QuotaExceeded', 'suppressed'), 1);
      await fire(gw, 'QuotaExceeded', 'another message'); // not identical
      clock += 59_000;
      await fire(gw, 'QuotaExceeded'); // still cooling down
      clock += 2_000;
      await fire(gw, 'QuotaExceeded'); // the cooldown is over
      await waitFor(
        'three deliveries',
        async () => (await sample(metrics, 'QuotaExceeded', 'delivered')) === 3,
      );
      assert.equal(await sample(metrics, 'QuotaExceeded', 'suppressed'), 2);
      assert.deepEqual(
        rx.received.map((r) => (JSON.parse(r.body) as GatewayEvent).message),
        ['Key quota limit exceeded', 'another message', 'Key quota limit exceeded'],
      );
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('a delivery answered 500 is retried with backoff until it succeeds', async () => {
    const rx = await startReceiver((n) => (n < 2 ? 500 : 204));
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith({ AuthFailure: [webhook({ target_path: rx.url })] }, { metrics });
    try {
      await fire(gw, 'AuthFailure');
      await waitFor('the delivery', async () => (await sample(metrics, 'AuthFailure', 'delivered')) === 1);
      assert.equal(rx.received.length, 3);
      assert.equal(new Set(rx.received.map((r) => r.body)).size, 1, 'every attempt sends the same body');
      assert.equal(await sample(metrics, 'AuthFailure', 'failed'), 0);
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('a client error is not retried', async () => {
    const rx = await startReceiver(() => 404);
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith({ AuthFailure: [webhook({ target_path: rx.url })] }, { metrics });
    try {
      await fire(gw, 'AuthFailure');
      await waitFor('the failure', async () => (await sample(metrics, 'AuthFailure', 'failed')) === 1);
      assert.equal(rx.received.length, 1);
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('a webhook that never answers does not slow requests', async () => {
    const rx = await startReceiver((n) => (n === 0 ? 'hang' : 200));
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith(
      { QuotaExceeded: [webhook({ target_path: rx.url })] },
      { metrics, limits: { timeoutMs: 30_000, concurrency: 1 } },
    );
    try {
      assert.equal((await fire(gw, 'QuotaExceeded', 'first')).status, 200);
      await waitFor('the webhook to hang', () => rx.hanging() === 1, 5000);
      // The webhook holds its delivery; requests firing more events are answered at once.
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        const res = await fire(gw, 'QuotaExceeded', `more ${i}`);
        assert.equal(res.status, 200);
        assert.ok(Date.now() - started < 1000, 'the request did not wait for the webhook');
      }
      assert.equal(rx.hanging(), 1, 'the webhook is still hanging (one delivery at a time)');
      rx.release();
      await waitFor(
        'the queued deliveries',
        async () => (await sample(metrics, 'QuotaExceeded', 'delivered')) === 6,
      );
    } finally {
      rx.release();
      await gw.stop();
      await rx.close();
    }
  });

  test('a webhook that times out or is down fails after its retries, the request unaffected', async () => {
    const rx = await startReceiver(() => 'hang');
    const dead = `http://127.0.0.1:${await freePort()}/hook`;
    const metrics = new Metrics({ processMetrics: false });
    const log = recordingLogger();
    const gw = await gatewayWith(
      {
        QuotaExceeded: [webhook({ target_path: rx.url })],
        KeyExpired: [webhook({ target_path: dead })],
      },
      { metrics, log, limits: { timeoutMs: 200, attempts: 2 } },
    );
    try {
      assert.equal((await fire(gw, 'QuotaExceeded')).status, 200);
      assert.equal((await fire(gw, 'KeyExpired')).status, 200);
      await waitFor(
        'both failures',
        async () =>
          (await sample(metrics, 'QuotaExceeded', 'failed')) === 1 &&
          (await sample(metrics, 'KeyExpired', 'failed')) === 1,
      );
      assert.equal(rx.received.length, 2, 'two attempts');
      const failures = log.lines.filter((l) => l.message === 'webhook delivery failed');
      assert.equal(failures.length, 2);
      const timedOut = failures.find((l) => l.fields.event === 'QuotaExceeded');
      assert.equal(timedOut?.fields.reason, 'no answer within 200 ms');
      assert.equal(timedOut.fields.attempts, 2);
      assert.equal(timedOut.fields.target, rx.url);
    } finally {
      rx.release();
      await gw.stop();
      await rx.close();
    }
  });

  test('handlers under RatelimitExceeded (the reference spelling) get RateLimitExceeded', async () => {
    const rx = await startReceiver();
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith({ RatelimitExceeded: [webhook({ target_path: rx.url })] }, { metrics });
    try {
      await fire(gw, 'RateLimitExceeded', 'Key Rate Limit Exceeded');
      await waitFor('the delivery', () => rx.received.length === 1, 5000);
      const body = JSON.parse(rx.received[0]?.body ?? '') as GatewayEvent;
      assert.equal(body.event, 'RateLimitExceeded');
      assert.equal(body.message, 'Key Rate Limit Exceeded');
    } finally {
      await gw.stop();
      await rx.close();
    }
  });

  test('the log handler logs each event with its fields', async () => {
    const log = recordingLogger();
    const metrics = new Metrics({ processMetrics: false });
    const gw = await gatewayWith(
      { AuthFailure: [{ handler_name: 'eh_log_handler', handler_meta: { prefix: 'orders-events' } }] },
      { metrics, log },
    );
    try {
      await fire(gw, 'AuthFailure', 'Authorization field missing');
      const line = log.lines.find((l) => l.message === 'gateway event');
      assert.equal(line?.level, 'info');
      assert.equal(line.fields.event, 'AuthFailure');
      assert.equal(line.fields.message, 'Authorization field missing');
      assert.equal(line.fields.path, '/a/orders');
      assert.equal(line.fields.origin, '127.0.0.1');
      assert.equal(line.fields.key_hash, 'hashed-key-1');
      assert.equal(line.fields.api_id, 'a1');
      assert.equal(line.fields.prefix, 'orders-events');
      assert.equal(await sample(metrics, 'AuthFailure', 'delivered'), 1);
    } finally {
      await gw.stop();
    }
  });
});

// --- compiled alone ---------------------------------------------------------------------------------------

describe('compileEvents', () => {
  const api = (events: Record<string, unknown>): GatewayApiDefinition => ({
    api_id: 'a1',
    name: 'a1',
    proxy: { listen_path: '/a/', target_url: 'http://127.0.0.1:1' },
    event_handlers: { events: events as NonNullable<GatewayApiDefinition['event_handlers']>['events'] },
  });
  const event = (message: string): GatewayEvent => ({
    event: 'QuotaExceeded',
    message,
    path: '/a/',
    origin: '127.0.0.1',
    key: 'k',
    api_id: 'a1',
    timestamp: new Date(0).toISOString(),
  });
  const deps = (metrics: Metrics, limits: Partial<WebhookLimits>) => ({
    log: recordingLogger(),
    now: Date.now,
    metrics,
    cooldowns: new Cooldowns(),
    webhookLimits: limits,
  });

  test('an API without handlers (or only empty or disabled ones) has none', () => {
    const m = new Metrics({ processMetrics: false });
    assert.equal(compileEvents(api({}), deps(m, {})), noEvents);
    assert.equal(
      compileEvents(
        api({ QuotaExceeded: [], BreakerTriggered: [], KeyExpired: [webhook({ disabled: true })] }),
        deps(m, {}),
      ),
      noEvents,
    );
  });

  test('a definition that breaks the rules does not compile', () => {
    assert.throws(
      () =>
        compileEvents(
          api({ QuotaExceeded: [webhook({ target_path: 'ftp://x' })] }),
          deps(new Metrics({ processMetrics: false }), {}),
        ),
      /event_handlers: event_handlers\.events\.QuotaExceeded\[0\]\.handler_meta\.target_path: Invalid value/,
    );
  });

  test('a full queue drops events; close drops the queued ones and lets the one in flight finish', async () => {
    const rx = await startReceiver(() => 'hang');
    const metrics = new Metrics({ processMetrics: false });
    const events = compileEvents(
      api({ QuotaExceeded: [webhook({ target_path: rx.url })] }),
      deps(metrics, { queueSize: 1, concurrency: 1 }),
    );
    try {
      events.emit(event('in flight'));
      events.emit(event('queued'));
      events.emit(event('dropped'));
      assert.equal(await sample(metrics, 'QuotaExceeded', 'dropped'), 1);
      await waitFor('the first delivery to hang', () => rx.hanging() === 1, 5000);
      const closed = events.close();
      assert.equal(await sample(metrics, 'QuotaExceeded', 'dropped'), 2);
      rx.release();
      await closed;
      assert.equal(await sample(metrics, 'QuotaExceeded', 'delivered'), 1);
      events.emit(event('after close'));
      assert.equal(await sample(metrics, 'QuotaExceeded', 'dropped'), 3);
      assert.equal(rx.received.length, 1);
    } finally {
      rx.release();
      await rx.close();
    }
  });

  test('close stops pending retries at once', async () => {
    const rx = await startReceiver(() => 503);
    const metrics = new Metrics({ processMetrics: false });
    const events = compileEvents(
      api({ QuotaExceeded: [webhook({ target_path: rx.url })] }),
      deps(metrics, { backoffMs: 60_000 }),
    );
    try {
      events.emit(event('retried later'));
      await waitFor('the first attempt', () => rx.received.length === 1, 5000);
      const started = Date.now();
      await events.close();
      assert.ok(Date.now() - started < 1000, 'close did not wait for the backoff');
      assert.equal(await sample(metrics, 'QuotaExceeded', 'dropped'), 1);
      assert.equal(rx.received.length, 1);
    } finally {
      await rx.close();
    }
  });
});
