/**
 * The webhook handler (`eh_web_hook_handler`): an event becomes an HTTP request to the
 * configured URL, delivered in the background. `handle` never waits: it checks the cooldown,
 * queues the delivery (or drops it when the queue is full) and returns; a few deliveries run at
 * once, each attempt bounded by a timeout, failures retried with exponential backoff. A slow or
 * dead webhook therefore costs the requests that fire events nothing but a queue entry.
 */
import { createHash } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { errorMessage } from '../../lib/errors.ts';
import { redactUrl, type Logger } from '../../lib/log.ts';
import type { TemplatePart, WebhookSettings } from '../../schemas/rules/event-handlers.ts';
import type { EventOutcome } from '../metrics/metrics.ts';
import type { Cooldowns } from './cooldown.ts';
import type { EventName, GatewayEvent } from './events.ts';

/** How deliveries are bounded; tests shorten them. */
export interface WebhookLimits {
  /** Milliseconds one attempt may take: connecting, the answer and its body. */
  timeoutMs: number;
  /** Attempts per delivery, the first included. */
  attempts: number;
  /** Milliseconds before the first retry; each further retry waits twice as long. */
  backoffMs: number;
  /** Deliveries waiting per webhook; beyond it new ones are dropped. */
  queueSize: number;
  /** Deliveries in progress at once per webhook. */
  concurrency: number;
}

/** The limits the gateway uses. */
export const WEBHOOK_LIMITS: Readonly<WebhookLimits> = {
  timeoutMs: 5_000,
  attempts: 3,
  backoffMs: 1_000,
  queueSize: 1_000,
  concurrency: 4,
};

/** Where a delivery's outcome is counted. */
export interface EventMetrics {
  event(name: EventName, outcome: EventOutcome): void;
}

/** What a webhook needs besides its settings. */
export interface WebhookDeps {
  apiId: string;
  log: Logger;
  /** Milliseconds since the epoch (cooldowns). */
  now: () => number;
  metrics?: EventMetrics | undefined;
  cooldowns: Cooldowns;
  /** The connection pool of the API's webhooks (created on first use). */
  dispatcher: () => Dispatcher;
  limits: Readonly<WebhookLimits>;
}

/** The answer of one attempt: delivered, worth another attempt, or refused for good. */
type Attempt = { ok: true } | { ok: false; retry: boolean; reason: string };

/** One configured webhook of one API. */
export class Webhook {
  readonly #s: WebhookSettings;
  readonly #deps: WebhookDeps;
  readonly #log: Logger;
  /** Identifies the handler's settings in cooldown keys. */
  readonly #identity: string;
  readonly #headers: Record<string, string>;
  /** Placeholder values are JSON-escaped when the body is JSON. */
  readonly #json: boolean;
  readonly #queue: GatewayEvent[] = [];
  readonly #running = new Set<Promise<void>>();
  /** Backoff waits, ended early by close(). */
  readonly #waits = new Set<() => void>();
  #closed = false;
  /** Whether the last event found the queue full (the drop is logged once per burst). */
  #full = false;

  constructor(settings: WebhookSettings, deps: WebhookDeps) {
    this.#s = settings;
    this.#deps = deps;
    // No query value nor password: any of them may be a token.
    this.#log = deps.log.child({
      part: 'events',
      handler: 'webhook',
      target: redactUrl(settings.url, { allParams: true }),
      ...(settings.name === '' ? {} : { webhook: settings.name }),
    });
    this.#identity = createHash('sha256')
      .update(JSON.stringify([deps.apiId, settings.method, settings.url, settings.headers, settings.body]))
      .digest('base64url');
    const headers: Record<string, string> = { 'user-agent': 'svc-gateway-webhook' };
    if (settings.method !== 'GET') headers['content-type'] = 'application/json';
    for (const [name, value] of Object.entries(settings.headers)) headers[name.toLowerCase()] = value;
    this.#headers = headers;
    this.#json = (headers['content-type'] ?? '').toLowerCase().includes('json');
  }

  /** Takes an event: suppressed, dropped or queued, never waited for. */
  readonly handle = (event: GatewayEvent): void => {
    if (this.#closed) {
      this.#count(event, 'dropped');
      return;
    }
    if (this.#queue.length >= this.#deps.limits.queueSize) {
      this.#count(event, 'dropped');
      if (!this.#full) this.#log.warn('webhook queue full, dropping events', { event: event.event });
      this.#full = true;
      return;
    }
    this.#full = false;
    if (this.#s.cooldownSeconds > 0) {
      const key = `${this.#identity}\n${event.event}\n${event.key}\n${event.message}`;
      if (!this.#deps.cooldowns.claim(key, this.#deps.now(), this.#s.cooldownSeconds * 1000)) {
        this.#count(event, 'suppressed');
        return;
      }
    }
    this.#queue.push(event);
    this.#pump();
  };

  /**
   * Takes no more events; queued deliveries and pending retries are dropped; attempts in flight
   * finish (within their timeout). Resolves when none is left.
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const e of this.#queue.splice(0)) this.#count(e, 'dropped');
    for (const wake of this.#waits) wake();
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** The request body of an event: the template filled in, or the payload as JSON. */
  #body(event: GatewayEvent): string | undefined {
    if (this.#s.method === 'GET') return undefined;
    if (this.#s.body === undefined) return JSON.stringify(payloadOf(event));
    return render(this.#s.body, event, this.#json);
  }

  #pump(): void {
    while (this.#running.size < this.#deps.limits.concurrency && this.#queue.length > 0) {
      const event = this.#queue.shift();
      if (event === undefined) return;
      const run: Promise<void> = this.#deliver(event).finally(() => {
        this.#running.delete(run);
        this.#pump();
      });
      this.#running.add(run);
    }
  }

  async #deliver(event: GatewayEvent): Promise<void> {
    const { attempts, backoffMs } = this.#deps.limits;
    const body = this.#body(event);
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt(body);
      if (outcome.ok) {
        this.#count(event, 'delivered');
        this.#log.debug('webhook delivered', { event: event.event, attempt });
        return;
      }
      if (!outcome.retry || attempt >= attempts) {
        this.#count(event, 'failed');
        this.#log.warn('webhook delivery failed', {
          event: event.event,
          attempts: attempt,
          reason: outcome.reason,
        });
        return;
      }
      // Closed while the attempt ran, or during the backoff: the retry is dropped.
      if (!this.#closed) {
        this.#log.debug('webhook attempt failed, retrying', {
          event: event.event,
          attempt,
          reason: outcome.reason,
        });
        await this.#wait(backoffMs * 2 ** (attempt - 1));
      }
      if (this.#closed) {
        this.#count(event, 'dropped');
        return;
      }
    }
  }

  async #attempt(body: string | undefined): Promise<Attempt> {
    try {
      const res = await request(this.#s.url, {
        dispatcher: this.#deps.dispatcher(),
        method: this.#s.method,
        headers: this.#headers,
        body,
        signal: AbortSignal.timeout(this.#deps.limits.timeoutMs),
      });
      await res.body.dump().catch(() => undefined);
      const status = res.statusCode;
      if (status >= 200 && status < 300) return { ok: true };
      // Worth another attempt: the receiver is busy or broken for now.
      const retry = status === 408 || status === 429 || status >= 500;
      return { ok: false, retry, reason: `answered ${status}` };
    } catch (err) {
      const reason =
        err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
          ? `no answer within ${this.#deps.limits.timeoutMs} ms`
          : errorMessage(err);
      return { ok: false, retry: true, reason };
    }
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#waits.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#waits.add(wake);
    });
  }

  #count(event: GatewayEvent, outcome: EventOutcome): void {
    this.#deps.metrics?.event(event.event, outcome);
  }
}

/** The payload a webhook sends when it has no body template. */
function payloadOf(e: GatewayEvent): GatewayEvent {
  return {
    event: e.event,
    message: e.message,
    path: e.path,
    origin: e.origin,
    key: e.key,
    api_id: e.api_id,
    timestamp: e.timestamp,
  };
}

/** Fills a compiled template; `json` escapes each value as the inside of a JSON string. */
function render(parts: readonly TemplatePart[], event: GatewayEvent, json: boolean): string {
  let out = '';
  for (const part of parts) {
    if (typeof part === 'string') out += part;
    else {
      const value = event[part.field];
      out += json ? JSON.stringify(value).slice(1, -1) : value;
    }
  }
  return out;
}
