/**
 * Traffic analytics of a gateway in mode pro (or in mode ce with `analytics_dashboard_url`): a
 * request observer that keeps one record per
 * request (records.ts) in a bounded buffer, and sends the buffer to the dashboard in batches
 * (`POST /system/analytics`, with the node secret) every `analytics_flush_interval_ms`, or as
 * soon as a batch is full. Nothing waits on it: a request only pushes its record (or, with the
 * buffer full, counts it dropped); a batch the dashboard does not take (unreachable, refused) is
 * dropped too, counted, and the next one goes on. `analytics_sample_rate` keeps that fraction of
 * requests, and the dashboard weighs each record by its inverse.
 *
 * Cheap on the request path (issue 34 item 5): a request sampled out costs one random number; a
 * request kept writes a few numbers and references into the columns of record-buffer.ts. The
 * records are templated and serialised when their batch is sent, as columns with each string
 * named once (`content-type: application/vnd.svc.analytics-columns+json`,
 * schemas/rules/analytics-batch.ts; to a dashboard older than that format, which refuses it, in
 * the records format), over one kept-alive connection to the dashboard (node:http, not fetch and
 * its streams per call).
 *
 * `/metrics`: `svc_gateway_analytics_records_total{outcome}` (sent, dropped_buffer_full,
 * dropped_send_failed).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';
import { Counter, type Registry } from 'prom-client';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { TrackingCache } from '../metrics/tracking.ts';
import type { RequestContext, RequestObserver } from '../pipeline/context.ts';
import {
  ANALYTICS_COLUMNS_TYPE,
  recordsOfColumns,
  type AnalyticsColumns,
} from '../../schemas/rules/analytics-batch.ts';
import { RecordBuffer } from './record-buffer.ts';

/** The header of the node secret (store/pro/connection.ts sends the same). */
const NODE_SECRET_HEADER = 'x-svc-node-secret';
/** Records waiting that make a batch go at once (without waiting for the interval). */
export const BATCH_SIZE = 1000;
/**
 * Records per request to the dashboard at most (the dashboard takes 5000): when more than
 * BATCH_SIZE wait (the dashboard answering slower than the traffic comes), the next batch takes
 * them all, up to this, so a dashboard's time per batch (a transaction) drains more records.
 */
export const MAX_BATCH_SIZE = 5000;
/** A send longer than this is given up (its records counted dropped). */
const SEND_TIMEOUT_MS = 10_000;

/** What becomes of records (`svc_gateway_analytics_records_total{outcome}`). */
export const OUTCOMES = ['sent', 'dropped_buffer_full', 'dropped_send_failed'] as const;

type Counts = Record<(typeof OUTCOMES)[number], Counter.Internal | undefined>;

/** Options of the analytics of one process. */
export interface AnalyticsOptions {
  /** The dashboard's base URL. */
  url: string;
  nodeSecret: string;
  /** Fraction of requests recorded, in (0, 1]. */
  sampleRate: number;
  /** Records held at most while waiting to be sent. */
  bufferSize: number;
  flushIntervalMs: number;
  log: Logger;
  /** The registry of `/metrics` (metrics/metrics.ts), when metrics are on. */
  registry?: Registry | undefined;
  now?: () => number;
  random?: () => number;
}

/** The analytics of one gateway process (see the module comment). */
export class Analytics implements RequestObserver {
  readonly #opts: AnalyticsOptions;
  readonly #url: URL;
  readonly #agent: HttpAgent;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #tracking = new TrackingCache();
  readonly #counts: Counts;
  readonly #buffer: RecordBuffer;
  #sending: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #lastError = '';
  /** The dashboard took a batch in the records format after refusing columns (an older one). */
  #recordsFormat = false;

  constructor(opts: AnalyticsOptions) {
    this.#opts = opts;
    this.#url = new URL(`${opts.url.replace(/\/+$/, '')}/system/analytics`);
    // One send at a time: one connection, kept between batches.
    const agentOpts = { keepAlive: true, maxSockets: 1 };
    this.#agent = this.#url.protocol === 'https:' ? new HttpsAgent(agentOpts) : new HttpAgent(agentOpts);
    this.#buffer = new RecordBuffer(opts.bufferSize);
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    const counter =
      opts.registry === undefined
        ? undefined
        : new Counter({
            name: 'svc_gateway_analytics_records_total',
            help: 'Analytics records by outcome: sent to the dashboard, dropped because the buffer was full (analytics_buffer_size), dropped because the dashboard did not take their batch.',
            labelNames: ['outcome'],
            registers: [opts.registry],
          });
    this.#counts = Object.fromEntries(
      OUTCOMES.map((o) => {
        const c = counter?.labels(o);
        c?.inc(0);
        return [o, c];
      }),
    ) as Counts;
    this.#timer = setInterval(() => {
      this.#flush(this.#buffer.length);
    }, opts.flushIntervalMs);
    this.#timer.unref();
  }

  /** Records held now (for tests). */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** The request observer: notes when the request was routed (unless metrics did). */
  onRequest(ctx: RequestContext): void {
    ctx.state.startedAt ??= performance.now();
  }

  /** The request observer: keeps the request's record, unless sampled out or left out. */
  onResponse(ctx: RequestContext, status: number): void {
    if (this.#closed) return;
    const rate = this.#opts.sampleRate;
    if (rate < 1 && this.#random() >= rate) return;
    const tracking = this.#tracking.get(ctx.route);
    const endpoint = tracking === null ? '' : tracking(ctx);
    if (endpoint === undefined) return; // do_not_track
    if (!this.#buffer.push(ctx, status, endpoint, this.#now(), performance.now())) {
      this.#counts.dropped_buffer_full?.inc();
      return;
    }
    if (this.#buffer.length >= BATCH_SIZE && this.#sending === undefined) this.#flush(0);
  }

  /**
   * Sends the buffer while BATCH_SIZE records or more wait (each batch all of them, up to
   * MAX_BATCH_SIZE), and its first `due` records even when fewer wait (the interval's flush:
   * what was held when it began), one batch at a time; at most one send in flight. Records that come in meanwhile wait for a full batch or the next interval:
   * draining the buffer as fast as the dashboard answers would send batches of a few records,
   * each costing the gateway a request and the dashboard a transaction.
   */
  #flush(due: number): void {
    if (this.#sending !== undefined || this.#buffer.length === 0) return;
    this.#sending = this.#sendAll(due).finally(() => {
      this.#sending = undefined;
    });
  }

  async #sendAll(due: number): Promise<void> {
    let left = due;
    while (this.#buffer.length >= BATCH_SIZE || (left > 0 && this.#buffer.length > 0)) {
      const batch = this.#buffer.takeColumns(MAX_BATCH_SIZE, this.#opts.sampleRate);
      left -= batch.count;
      try {
        await this.#send(batch);
        this.#counts.sent?.inc(batch.count);
        if (this.#lastError !== '') this.#opts.log.info('analytics sent again');
        this.#lastError = '';
      } catch (err) {
        this.#counts.dropped_send_failed?.inc(batch.count);
        const message = errorMessage(err);
        // One line per kind of failure, not one per batch.
        if (message !== this.#lastError)
          this.#opts.log.warn('analytics batch dropped', { records: batch.count, error: message });
        this.#lastError = message;
        return;
      }
    }
  }

  /**
   * Sends a batch as columns; to a dashboard that refuses them (400 or 415: one older than the
   * format), sends it again in the records format, and keeps to that format from then on.
   */
  async #send(batch: AnalyticsColumns): Promise<void> {
    if (!this.#recordsFormat) {
      const body = Buffer.from(JSON.stringify(batch));
      const { status, text } = await this.#post(body, ANALYTICS_COLUMNS_TYPE);
      if (status === 200) return;
      if (status !== 400 && status !== 415)
        throw new Error(`the dashboard answered ${status}: ${text.slice(0, 200)}`);
      this.#opts.log.info('the dashboard does not take analytics as columns: sending records', {
        status,
        answer: text.slice(0, 200),
      });
    }
    const records = recordsOfColumns(batch);
    const body = Buffer.from(JSON.stringify({ sample_rate: batch.sample_rate, records }));
    const { status, text } = await this.#post(body, 'application/json');
    if (status !== 200) throw new Error(`the dashboard answered ${status}: ${text.slice(0, 200)}`);
    this.#recordsFormat = true;
  }

  /** POSTs a batch to the dashboard: its status and body, or an error (unreachable, timed out). */
  #post(body: Buffer, contentType: string): Promise<{ status: number; text: string }> {
    const url = this.#url;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, {
        method: 'POST',
        agent: this.#agent,
        headers: {
          [NODE_SECRET_HEADER]: this.#opts.nodeSecret,
          'content-type': contentType,
          'content-length': body.length,
        },
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`no answer from the dashboard within ${SEND_TIMEOUT_MS} ms`));
      }, SEND_TIMEOUT_MS);
      timer.unref();
      const fail = (err: Error): void => {
        clearTimeout(timer);
        reject(err);
      };
      req.on('error', fail);
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('close', () => {
          if (!res.complete) fail(new Error('the dashboard closed the connection mid-answer'));
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.end(body);
    });
  }

  /** Sends what is left (once), then stops. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    if (this.#sending !== undefined) await this.#sending;
    this.#flush(this.#buffer.length);
    if (this.#sending !== undefined) await this.#sending;
    this.#agent.destroy();
  }
}

/**
 * The analytics the configuration asks for: on in mode pro (`dashboard_url` and `node_secret`),
 * and in mode ce with `analytics_dashboard_url` (and `node_secret`), unless `analytics_enabled`
 * is false; undefined otherwise.
 */
export function analyticsOf(
  config: Pick<
    GatewayConfig,
    | 'dashboard_url'
    | 'node_secret'
    | 'analytics_enabled'
    | 'analytics_sample_rate'
    | 'analytics_buffer_size'
    | 'analytics_flush_interval_ms'
    | 'analytics_dashboard_url'
  >,
  log: Logger,
  registry: Registry | undefined,
): Analytics | undefined {
  const url = config.dashboard_url ?? config.analytics_dashboard_url;
  if (!config.analytics_enabled || url === undefined || config.node_secret === undefined) return undefined;
  return new Analytics({
    url,
    nodeSecret: config.node_secret,
    sampleRate: config.analytics_sample_rate,
    bufferSize: config.analytics_buffer_size,
    flushIntervalMs: config.analytics_flush_interval_ms,
    log: log.child({ part: 'analytics' }),
    registry,
  });
}
