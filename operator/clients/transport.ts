import { Agent, request, type Dispatcher } from 'undici';
import { InputError, SvcError, TransientError, errorMessage } from '../../lib/errors.ts';
import { certificateHint } from './certificate-hint.ts';
import { asPlainObject } from '../../lib/plain-object.ts';

/**
 * The HTTP transport both management clients (gateway.ts, dashboard.ts) use: one connection
 * pool with the connection's TLS choice and time-outs, JSON in and out, and the one mapping of
 * failures onto lib/errors.ts that ManagementClient promises. It does not retry: a
 * TransientError goes back to the work queue, which requeues with backoff (lib/k8s/workqueue.ts).
 */

/** What a transport talks to and how. */
export interface TransportOptions {
  /** The peer, for messages and error codes: `gateway` (OP_ERR_GATEWAY_*) or `dashboard` (OP_ERR_DASHBOARD_*). */
  peer: 'gateway' | 'dashboard';
  /** Base URL; trailing slashes are dropped. */
  url: string;
  /** The header carrying the credential and its value. */
  auth: { header: string; value: string };
  /** Accept any certificate from the peer (its connection's `insecureSkipVerify`). */
  insecureSkipVerify?: boolean | undefined;
  /** Time-out of connecting, of the response head and of the body of each call. */
  timeoutMs: number;
  /** The content type of a body given as a string when the call names none. */
  textType: string;
}

/** An HTTP method the management APIs take. */
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A call's answer: its status and its body, parsed when JSON (the text otherwise, undefined when empty). */
export interface CallResult {
  status: number;
  body: unknown;
}

/** One management peer over HTTP(S). */
export class ManagementTransport {
  readonly url: string;
  readonly #opts: TransportOptions;
  readonly #agent: Dispatcher;
  readonly #codes: {
    unreachable: string;
    unavailable: string;
    unauthorized: string;
    conflict: string;
    rejected: string;
  };

  constructor(opts: TransportOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.#opts = opts;
    this.#agent = new Agent({
      connections: 16,
      keepAliveTimeout: 30_000,
      connect: { rejectUnauthorized: opts.insecureSkipVerify !== true, timeout: opts.timeoutMs },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    const p = `OP_ERR_${opts.peer.toUpperCase()}`;
    this.#codes = {
      unreachable: `${p}_UNREACHABLE`,
      unavailable: `${p}_UNAVAILABLE`,
      unauthorized: `${p}_UNAUTHORIZED`,
      conflict: `${p}_CONFLICT`,
      rejected: `${p}_REJECTED`,
    };
  }

  /**
   * Calls `method path` with `body` (a string is sent as it is, anything else as JSON). A 2xx or
   * a status in `allowed` is returned; otherwise it throws: TransientError when unreachable, on
   * 429, 5xx and 409; SvcError on 401/403; InputError on any other refusal. Messages name the
   * path without its query (which may carry owner names).
   */
  async call(
    method: Method,
    path: string,
    body?: unknown,
    allowed: readonly number[] = [],
    contentType?: string,
  ): Promise<CallResult> {
    const { peer } = this.#opts;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.url}${path}`, {
        method,
        dispatcher: this.#agent,
        headers: {
          [this.#opts.auth.header]: this.#opts.auth.value,
          ...(body === undefined
            ? {}
            : {
                'content-type':
                  contentType ?? (typeof body === 'string' ? this.#opts.textType : 'application/json'),
              }),
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
    } catch (err) {
      throw new TransientError(
        this.#codes.unreachable,
        `${peer} ${this.url} unreachable: ${errorMessage(err)}${certificateHint(err)}`,
        { cause: err },
      );
    }
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: keep the text for the message.
    }
    const status = res.statusCode;
    if ((status >= 200 && status < 300) || allowed.includes(status)) return { status, body: parsed };
    const message = messageOf(parsed) ?? text.slice(0, 200);
    const what = `${peer} ${method} ${path.replace(/\?.*$/, '')}: ${status} ${message}`;
    if (status === 429 || status >= 500) throw new TransientError(this.#codes.unavailable, what, { status });
    if (status === 401 || status === 403) throw new SvcError(this.#codes.unauthorized, what, { status });
    if (status === 409) throw new TransientError(this.#codes.conflict, what, { status });
    throw new InputError(this.#codes.rejected, what, { status });
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/** The error message of a peer's JSON body: `message` (gateway, dashboard) or `Message` (dashboard). */
function messageOf(body: unknown): string | undefined {
  const b = asPlainObject(body);
  if (b === undefined) return undefined;
  if (typeof b.Message === 'string') return b.Message;
  if (typeof b.message === 'string') return b.message;
  return undefined;
}
