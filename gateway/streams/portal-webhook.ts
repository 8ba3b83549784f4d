/**
 * `portal_webhook` outputs (ours, not Bento's). Where Bento runs (host.ts `LocalHost`: the
 * gateway process, or the primary with `--workers`), each one is translated into a Bento
 * `http_client` output that posts every message to this delivery endpoint: an HTTP server on a
 * loopback port of its own, authenticated by a bearer token made at start and known only to the
 * configurations sent to Bento. The endpoint delivers the message to every subscriber of its
 * event, read from the portal URL and refreshed, signs it with HMAC-SHA256 under the
 * subscriber's secret, retries each subscriber with capped backoff on its own, and answers Bento
 * (acknowledging the message) only once every subscriber has it or was given up on.
 *
 * The portal answers `GET <portal_url>` (with `Authorization: Bearer <secret>` when the output
 * has a secret) with JSON: `{"subscriptions": [{"id", "url", "secret", "events": [..]}]}` or the
 * array alone. A subscription without `events` receives every event; one without `secret` is
 * signed with the output's. Each delivery is a POST of the message body with:
 * - `Content-Type`: the one the message was published with (`MESSAGE_TYPE`);
 * - `X-Svc-Event`: the event type; `X-Svc-Delivery`: an ID, the same across retries;
 * - `X-Svc-Signature`: `sha256=<hex HMAC-SHA256 of the body under the subscriber's secret>`.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { replacePortalWebhooks, type PortalWebhook } from '../../schemas/rules/streams.ts';

/** Header names of a delivery. */
export const SIGNATURE_HEADER = 'x-svc-signature';
export const EVENT_HEADER = 'x-svc-event';
export const DELIVERY_HEADER = 'x-svc-delivery';

/** The signature of `body` under `secret`, as `X-Svc-Signature` carries it. */
export function sign(body: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * The `Content-Type` Bento's `http_client` sends each message with: the one it was published
 * with (the `http_server` input keeps the request's headers as the message's metadata; another
 * input may carry it there too), else `application/octet-stream`. Without it Bento sends every
 * message as `application/octet-stream`.
 */
const MESSAGE_TYPE =
  '${! metadata("Content-Type").or(metadata("content-type")).or("application/octet-stream") }';

/** A subscriber as the portal lists it. */
export interface Subscription {
  id: string;
  url: string;
  secret?: string | undefined;
  /** Events it receives; every event when absent. */
  events?: string[] | undefined;
}

/** Delivery settings (tests shorten them). */
export interface DeliveryOptions {
  /** Attempts per subscriber and message before giving up on it. */
  attempts: number;
  /** First retry delay; doubles per attempt up to `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Time allowed for one POST to a subscriber. */
  timeoutMs: number;
  /** How old a portal's list of subscriptions may get before it is read again. */
  refreshMs: number;
}

export const DELIVERY_DEFAULTS: DeliveryOptions = {
  attempts: 5,
  backoffMs: 250,
  maxBackoffMs: 4_000,
  timeoutMs: 10_000,
  refreshMs: 10_000,
};

/** What became of deliveries, for metrics and tests. */
export interface DeliveryCounts {
  delivered: number;
  failed: number;
  retries: number;
}

function parseSubscriptions(body: unknown): Subscription[] {
  const list: unknown = Array.isArray(body)
    ? body
    : (body as { subscriptions?: unknown } | null)?.subscriptions;
  if (!Array.isArray(list)) throw new Error('the portal answered no subscriptions list');
  const out: Subscription[] = [];
  for (const raw of list) {
    const s = raw as Partial<Record<keyof Subscription, unknown>> | null;
    if (s === null || typeof s !== 'object' || typeof s.url !== 'string') continue;
    out.push({
      id: typeof s.id === 'string' ? s.id : s.url,
      url: s.url,
      secret: typeof s.secret === 'string' ? s.secret : undefined,
      events: Array.isArray(s.events)
        ? s.events.filter((e): e is string => typeof e === 'string')
        : undefined,
    });
  }
  return out;
}

interface Cached {
  at: number;
  subs: Subscription[];
  refreshing?: Promise<Subscription[]> | undefined;
}

/** The delivery endpoint of one node. */
export class PortalWebhooks {
  readonly #log: Logger;
  readonly #opts: DeliveryOptions;
  readonly #token = randomBytes(24).toString('hex');
  /** Outputs by key (`<stream id>/<n>`). */
  readonly #outputs = new Map<string, PortalWebhook>();
  readonly #portals = new Map<string, Cached>();
  #server: Server | undefined;
  #port = 0;
  readonly counts: DeliveryCounts = { delivered: 0, failed: 0, retries: 0 };

  constructor(opts: { log: Logger; delivery?: Partial<DeliveryOptions> | undefined }) {
    this.#log = opts.log.child({ part: 'portal-webhook' });
    this.#opts = { ...DELIVERY_DEFAULTS, ...opts.delivery };
  }

  /**
   * `config` (stream `streamId`) with its `portal_webhook` outputs turned into `http_client`
   * outputs to this endpoint (started on first use).
   */
  async translate(streamId: string, config: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!JSON.stringify(config).includes('"portal_webhook"')) return config;
    const port = await this.#listen();
    const out = replacePortalWebhooks(config, (settings, n) => {
      const key = `${streamId}/${n}`;
      this.#outputs.set(key, settings);
      return {
        http_client: {
          url: `http://127.0.0.1:${port}/deliver/${encodeURIComponent(key)}`,
          verb: 'POST',
          headers: { Authorization: `Bearer ${this.#token}`, 'Content-Type': MESSAGE_TYPE },
          // Other messages keep flowing while one waits on a slow subscriber.
          max_in_flight: 64,
          // The endpoint answers once every subscriber was served or given up on.
          timeout: '5m',
          retry_period: '1s',
          max_retry_backoff: '10s',
          retries: 10,
        },
      };
    });
    return out.config;
  }

  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  }

  #listen(): Promise<number> {
    if (this.#server !== undefined && this.#port !== 0) return Promise.resolve(this.#port);
    const server = createServer((req, res) => {
      void this.#serve(req, res);
    });
    this.#server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const addr = server.address();
        this.#port = typeof addr === 'object' && addr !== null ? addr.port : 0;
        resolve(this.#port);
      });
    });
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number, message: string): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message }));
    };
    const auth = Buffer.from(req.headers.authorization ?? '');
    const want = Buffer.from(`Bearer ${this.#token}`);
    if (auth.length !== want.length || !timingSafeEqual(auth, want)) {
      answer(401, 'unauthorised');
      return;
    }
    const m = /^\/deliver\/([^/?]+)$/.exec(req.url ?? '');
    const output = m === null ? undefined : this.#outputs.get(decodeURIComponent(m[1] ?? ''));
    if (req.method !== 'POST' || output === undefined) {
      answer(404, 'no such portal_webhook output');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let subs: Subscription[];
    try {
      subs = await this.#subscriptions(output);
    } catch (err) {
      // Nobody known to deliver to: not acknowledged, Bento tries again.
      answer(503, `subscriptions unavailable: ${errorMessage(err)}`);
      return;
    }
    const mine = subs.filter((s) => s.events === undefined || s.events.includes(output.event_type));
    const delivery = randomUUID();
    // The message's own (`MESSAGE_TYPE`); an empty one (metadata set to '') counts as none.
    const type = req.headers['content-type'];
    const contentType = type === '' ? undefined : type;
    // Every subscriber on its own: one failing never holds up the others' deliveries.
    await Promise.all(mine.map((s) => this.#deliver(s, output, body, delivery, contentType)));
    answer(200, `delivered to ${mine.length} subscriber(s)`);
  }

  async #subscriptions(output: PortalWebhook): Promise<Subscription[]> {
    const key = `${output.portal_url}\n${output.secret ?? ''}`;
    const cached = this.#portals.get(key);
    const fresh = cached !== undefined && Date.now() - cached.at < this.#opts.refreshMs;
    if (fresh) return cached.subs;
    const read = async (): Promise<Subscription[]> => {
      const res = await fetch(output.portal_url, {
        headers: {
          accept: 'application/json',
          ...(output.secret === undefined ? {} : { authorization: `Bearer ${output.secret}` }),
        },
        signal: AbortSignal.timeout(this.#opts.timeoutMs),
      });
      if (!res.ok) throw new Error(`the portal answered ${res.status}`);
      return parseSubscriptions(await res.json());
    };
    if (cached !== undefined) {
      // A stale list still serves while it is read again; a failed read keeps it.
      cached.refreshing ??= read()
        .then((subs) => {
          this.#portals.set(key, { at: Date.now(), subs });
          return subs;
        })
        .catch((err: unknown) => {
          this.#log.warn('reading webhook subscriptions failed', {
            portal_url: output.portal_url,
            error: errorMessage(err),
          });
          cached.refreshing = undefined;
          return cached.subs;
        });
      return cached.subs;
    }
    const subs = await read();
    this.#portals.set(key, { at: Date.now(), subs });
    return subs;
  }

  async #deliver(
    s: Subscription,
    output: PortalWebhook,
    body: Buffer,
    delivery: string,
    contentType: string | undefined,
  ): Promise<void> {
    const secret = s.secret ?? output.secret ?? '';
    const headers: Record<string, string> = {
      'content-type': contentType ?? 'application/octet-stream',
      [EVENT_HEADER]: output.event_type,
      [DELIVERY_HEADER]: delivery,
      [SIGNATURE_HEADER]: sign(body, secret),
    };
    let backoff = this.#opts.backoffMs;
    for (let attempt = 1; ; attempt++) {
      let why: string;
      try {
        const res = await fetch(s.url, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.timeout(this.#opts.timeoutMs),
        });
        await res.body?.cancel();
        if (res.status >= 200 && res.status < 300) {
          this.counts.delivered++;
          return;
        }
        why = `answered ${res.status}`;
      } catch (err) {
        why = errorMessage(err);
      }
      if (attempt >= this.#opts.attempts) {
        this.counts.failed++;
        this.#log.warn('webhook delivery given up', {
          subscription: s.id,
          event: output.event_type,
          attempts: attempt,
          error: why,
        });
        return;
      }
      this.counts.retries++;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, this.#opts.maxBackoffMs);
    }
  }
}
