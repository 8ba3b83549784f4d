/**
 * One request on the fast path, from its parsed head to the end of its response: its
 * `RequestContext` and compiled chain, then (when the chain lets it through) the exchange with
 * the upstream over a pooled socket (upstream-pool.ts): the request head written from the
 * context (upstream-request.ts), the body forwarded, and the upstream response relayed byte for
 * byte (its head read by upstream-response.ts and re-emitted by response-writer.ts with the
 * gateway's headers; its body up to where its framing ends it, upstream-response.ts `BodyEnd`),
 * with a retry on a pooled connection the upstream had closed, the hard timeout, backpressure
 * both ways, and the end: the upstream socket back to the pool or closed, the connection on.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { errorMessage } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { chainKind, internalFailure, runBefore, runChain, runSteps } from '../../pipeline/compose.ts';
import type { BeforeStep, Rejection, Step, SyncStep } from '../../pipeline/middleware.ts';
import {
  RequestContext,
  type BodyPeek,
  type ListenerInfo,
  type RequestObserver,
} from '../../pipeline/context.ts';
import type { GatewayError } from '../../pipeline/errors.ts';
import type { Route, RouteTable, Target } from '../../pipeline/router.ts';
import { upstreamFailure } from '../../upstream/proxy.ts';
import { addHeader, type ParsedHead } from './head-parser.ts';
import { errorResponse, relayedHead } from './response-writer.ts';
import { upstreamRequestHead } from './upstream-request.ts';
import { BodyEnd, readResponseHead, type ResponseHead } from './upstream-response.ts';
import {
  originOf,
  type Origin,
  type UpstreamConn,
  type UpstreamExchange,
  type UpstreamPool,
} from './upstream-pool.ts';

/** What a request head matched: the route, its upstream, and the table it was read from. */
export interface Matched {
  route: Route;
  target: Target;
  table: RouteTable;
}

/** What every exchange of one fast path shares (index.ts `FastPath`). */
export interface ExchangeShared {
  readonly opts: { readonly log: Logger; readonly observer?: RequestObserver | undefined };
  readonly pool: UpstreamPool;
}

/** The client connection, as the request in flight on it sees it (connection.ts `Connection`). */
export interface ExchangeClient {
  readonly fp: ExchangeShared;
  readonly socket: Socket;
  /** The client address. */
  readonly peer: string;
  readonly listener: { readonly closing: boolean; readonly info: ListenerInfo };
  /** Bytes read after the head and not consumed yet (the body, pipelined requests). */
  readonly buf: Buffer | undefined;
  /** The client ended its side of the connection. */
  readonly ended: boolean;
  /** The connection is closed or closing: nothing more is read from it as a request. */
  readonly closed: boolean;
  /** The request's chain runs: what arrives is buffered, not forwarded. */
  readonly chainRuns: boolean;
  /** The request body is being forwarded as it arrives (some of it is still to come). */
  readonly bodyFlows: boolean;
  /** The chain let the request through: the body bytes buffered so far (see connection.ts). */
  takeBody(length: number): Buffer | undefined;
  /** A refused request's body: true when it was all buffered and is dropped. */
  dropBody(length: number): boolean;
  /** The request in flight is over. */
  done(keepAlive: boolean): void;
}

const EMPTY = Buffer.alloc(0);

/**
 * One request on the fast path: its context and chain, then (when the chain lets it through) the
 * exchange with the upstream. It counts on its route table from its head to its end.
 */
export class Exchange implements BodyPeek, UpstreamExchange {
  readonly conn: ExchangeClient;
  readonly ctx: RequestContext;
  /** The route's compiled middleware, in chain order. */
  readonly handlers: readonly Step[];
  readonly table: RouteTable;
  /** The route's upstream, or the one a middleware chose for this request (`#forward`). */
  target: Target;
  origin: Origin;
  readonly isHead: boolean;
  readonly contentLength: number;
  readonly hasLength: boolean;
  readonly keepAliveWanted: boolean;
  /** Middleware run around the upstream call: `last` of the chain resolves with `#resume`. */
  chained = false;
  /** Whether middleware ran, so the head they may have changed is checked before it is sent. */
  checkHead = false;
  #resume: (() => void) | undefined;
  /** The chain let the request through (the upstream call started). */
  forwarded = false;
  /** The request is over (`#complete` ran); `#end` ran. */
  #completed = false;
  #ended = false;
  /** What the client got (0: nothing, the connection was cut), and whether it goes on. */
  status = 0;
  /** The whole answer has been written. */
  answered = false;
  keepAlive = false;
  headText = '';
  up: UpstreamConn | undefined;
  reused = false;
  retried = false;
  /** Response bytes reached the upstream socket (no retry after that). */
  gotResponse = false;
  /** Something was written to the client. */
  sent = false;
  finished = false;
  /** Where the response's body ends; undefined while its head is still being read. */
  body: BodyEnd | undefined;
  /** Bytes of an incomplete response head. */
  upBuf: Buffer | undefined;
  pendingBody: Buffer | undefined;

  constructor(conn: ExchangeClient, head: ParsedHead, found: Matched) {
    this.conn = conn;
    this.table = found.table;
    this.target = found.target;
    this.origin = originOf(found.target);
    this.isHead = head.method === 'HEAD';
    this.contentLength = head.contentLength;
    this.hasLength = head.hasLength;
    this.keepAliveWanted = !head.close;
    this.handlers = found.route.handlers;
    this.ctx = new RequestContext({
      method: head.method,
      path: head.path,
      query: head.query,
      headers: head.headers,
      socketAddress: conn.peer,
      route: found.route,
      listener: conn.listener.info,
      log: conn.fp.opts.log,
      socket: conn.socket,
    });
    this.ctx.bodyPeek = this;
    this.table.enter();
    conn.fp.opts.observer?.onRequest?.(this.ctx);
  }

  /** The whole request body, when it is all buffered and the chain still runs (`RequestContext.bodyPeek`). */
  peekBody(): Buffer | undefined {
    if (!this.hasLength || this.forwarded || !this.conn.chainRuns) return undefined;
    const n = this.contentLength;
    if (n === 0) return EMPTY;
    const buf = this.conn.buf;
    return buf === undefined || buf.length < n ? undefined : buf.subarray(0, n);
  }

  /**
   * Runs the chain, then the upstream call; a route without middleware goes straight up, and one
   * whose steps are all synchronous runs them in a loop, then goes up, with no promise.
   */
  run(): void {
    const handlers = this.handlers;
    if (handlers.length === 0) {
      this.#forward();
      return;
    }
    const kind = chainKind(handlers);
    if (kind !== 'around') {
      this.checkHead = true;
      let refused: Rejection | undefined | Promise<Rejection | undefined>;
      try {
        refused =
          kind === 'sync'
            ? runSteps(handlers as readonly SyncStep[], this.ctx)
            : runBefore(handlers as readonly BeforeStep[], this.ctx);
      } catch (err) {
        this.#refuse(internalFailure(this.ctx, err));
        this.#end();
        return;
      }
      if (refused instanceof Promise) {
        // A step waits (on the store, on counters); the exchange goes on when it answers.
        refused.then(
          (r) => {
            this.#afterSteps(r);
          },
          (err: unknown) => {
            this.#afterSteps(undefined, err ?? new Error('step failed'));
          },
        );
        return;
      }
      this.#afterSteps(refused);
      return;
    }
    // The chain may wait (on the store). Meanwhile nothing more is parsed and nothing is lost:
    // bytes that arrive are buffered and pause the socket (`#data`), so a client that does not
    // pipeline costs no pause and resume (two syscalls) per request.
    this.chained = true;
    this.checkHead = true;
    const call = (): Promise<void> =>
      new Promise<void>((resolve) => {
        this.#resume = resolve;
        this.#forward();
      });
    // A middleware may make the call itself, the rest of the chain skipped (a stream endpoint).
    this.ctx.upstreamCall = call;
    void runChain(handlers, this.ctx, call).then(
      (refused) => {
        if (refused !== undefined) this.#refuse(refused.rejected);
        this.#end();
      },
      (err: unknown) => {
        this.#refuse(internalFailure(this.ctx, err));
        this.#end();
      },
    );
  }

  /**
   * After steps that act before the upstream call only: the call, or their refusal, or a 500 for
   * what a step threw (`failed`).
   */
  #afterSteps(refused: Rejection | undefined, failed?: unknown): void {
    try {
      if (failed === undefined && refused === undefined) {
        this.#forward();
        return;
      }
      this.#refuse(refused !== undefined ? refused.rejected : internalFailure(this.ctx, failed));
    } catch (err) {
      this.#refuse(internalFailure(this.ctx, err));
    }
    this.#end();
  }

  /** The last step of the chain: the upstream call with the context's (possibly changed) head. */
  #forward(): void {
    if (this.conn.closed || (this.conn.ended && this.ctx.upstream.service?.consumer === true)) {
      // The client went away while the chain ran (a consumer that ended its side is gone too).
      this.forwarded = true;
      this.finished = true;
      this.conn.socket.destroy();
      this.#complete(false);
      return;
    }
    const chosen = this.ctx.upstream.target;
    if (chosen !== undefined && chosen !== this.target) {
      this.target = chosen;
      this.origin = originOf(chosen);
    }
    // Built before anything moves: a head the chain made unsendable fails here, as a 500.
    this.headText = upstreamRequestHead(
      this.ctx,
      this.target,
      this.checkHead,
      this.hasLength,
      this.contentLength,
    );
    this.forwarded = true;
    this.pendingBody = this.conn.takeBody(this.contentLength);
    this.#start();
  }

  /** The chain refused the request (or threw): the answer node:http's respondError gives. */
  #refuse(error: GatewayError): void {
    const conn = this.conn;
    if (this.forwarded) {
      // A refusal after the upstream call answered: as node:http, cut the connection.
      conn.socket.destroy();
      this.keepAlive = false;
      return;
    }
    if (conn.closed) return;
    // An unread body must not be read as the next request, nor hold it up: dropped when it is all
    // here, else the connection closes after the answer.
    const keepAlive = conn.dropBody(this.contentLength) && this.keepAliveWanted && !conn.listener.closing;
    conn.socket.write(errorResponse(error, this.ctx.responseHeaders, keepAlive, this.isHead));
    this.status = error.status;
    this.answered = true;
    this.keepAlive = keepAlive;
  }

  /** The upstream exchange is over: the chain goes on, or the request ends. */
  #complete(keepAlive: boolean): void {
    if (this.#completed) return;
    this.#completed = true;
    if (this.#hardTimer !== undefined) clearTimeout(this.#hardTimer);
    this.keepAlive = keepAlive;
    if (this.chained) this.#resume?.();
    else this.#end();
  }

  /** The request is over: it leaves its table, the observer sees it, the connection goes on. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.table.leave();
    this.conn.fp.opts.observer?.onResponse?.(this.ctx, this.status);
    this.conn.done(this.keepAlive);
  }

  /** The request's hard timeout (`ctx.upstream.timeoutMs`), while the response has not begun. */
  #hardTimer: NodeJS.Timeout | undefined;

  #start(): void {
    const ms = this.ctx.upstream.timeoutMs;
    if (ms !== undefined && this.#hardTimer === undefined) {
      this.#hardTimer = setTimeout(() => {
        if (this.sent || this.finished) return;
        this.#fail(Object.assign(new Error('upstream hard timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }));
      }, ms);
    }
    const { conn, reused } = this.conn.fp.pool.get(this.origin, this.retried);
    this.reused = reused;
    if (this.ctx.upstream.service !== undefined && conn.connected && !conn.untimed) {
      // A service's answer (an event stream) lasts as long as its client stays.
      conn.untimed = true;
      conn.socket.setTimeout(0);
    }
    conn.exchange = this;
    this.up = conn;
    this.ctx.state.upstreamStartedAt = performance.now();
    const up = conn.socket;
    // One write per request head (with the body bytes that came with it): one syscall.
    const body = this.pendingBody;
    if (body === undefined) up.write(this.headText, 'latin1');
    else up.write(Buffer.concat([Buffer.from(this.headText, 'latin1'), body]));
    this.pendingBody = undefined;
  }

  /** Request body bytes from the client. */
  sendBody(chunk: Buffer): void {
    const up = this.up?.socket;
    if (up === undefined || this.finished) return;
    if (!up.write(chunk)) {
      const client = this.conn.socket;
      client.pause();
      up.once('drain', () => {
        if (this.conn.bodyFlows) client.resume();
      });
    }
  }

  #detach(): UpstreamConn | undefined {
    const up = this.up;
    if (up === undefined) return undefined;
    up.exchange = undefined;
    up.socket.removeAllListeners('drain');
    this.up = undefined;
    return up;
  }

  /**
   * The client connection closed: middleware waiting for something stop (`ctx.signal`), the
   * upstream call (if any) stops, the request ends.
   */
  clientGone(): void {
    if (!this.answered) this.ctx.clientGone();
    if (!this.forwarded || this.finished) return; // the chain is running: #forward sees it
    this.finished = true;
    const up = this.#detach()?.socket;
    // Closed (FIN), as node:http's path closes it: Bento takes either end of the connection as
    // the consumer gone. (A reset would not save a message Bento hands the connection in the
    // moment before it notices: it acknowledges that one whether or not its write fails.)
    up?.destroy();
    this.#complete(false);
  }

  upData(chunk: Buffer): void {
    this.gotResponse = true;
    if (this.body === undefined) {
      this.upBuf = this.upBuf === undefined ? chunk : Buffer.concat([this.upBuf, chunk]);
      this.#parseHead();
      return;
    }
    this.#body(chunk);
  }

  #parseHead(): void {
    const buf = this.upBuf;
    if (buf === undefined) return;
    const read = readResponseHead(buf);
    if (read instanceof Error) {
      this.#fail(read);
      return;
    }
    if ('more' in read) {
      this.upBuf = read.more;
      return;
    }
    this.upBuf = undefined;
    this.#respond(read.head, read.rest);
  }

  /** The upstream's response head: its head to the client, then its body (`rest` to begin with). */
  #respond(head: ResponseHead, rest: Buffer | undefined): void {
    const status = head.status;
    let upstreamClose = false;
    for (const v of head.connValues)
      for (const t of v.split(',')) if (t.trim().toLowerCase() === 'close') upstreamClose = true;
    const body = new BodyEnd(head, this.isHead);
    this.body = body;
    const framing = body.framing;
    this.upstreamReusable = !upstreamClose && framing !== 'close';
    const keepAlive =
      this.keepAliveWanted && framing !== 'close' && !this.conn.listener.closing && !this.conn.bodyFlows;
    this.clientKeepAlive = keepAlive;
    this.status = status;
    const plan = this.ctx.upstream;
    this.ctx.upstreamStatus = status;
    this.ctx.state.upstreamRespondedAt = performance.now();
    if (framing === 'length') this.ctx.state.responseBytes = Number(head.cl);
    plan.service?.opened?.(status);
    const tap = plan.tap;
    if (tap !== undefined) {
      const seen: IncomingHttpHeaders = {};
      for (const h of head.headers) addHeader(seen, h.lower, h.value);
      tap.start(status, seen, framing === 'chunked');
    }
    const out = relayedHead(
      head,
      this.ctx.responseHeaders,
      plan.removedResponseHeaders,
      framing === 'chunked',
      keepAlive,
      plan.appendedResponseHeaders,
    );
    this.sent = true;
    // The head goes out with the first body bytes, in one write.
    this.headOut = Buffer.from(out, 'latin1');
    if (body.ended) {
      this.#flushHead();
      if (rest !== undefined) this.upstreamReusable = false;
      this.#finish(true);
      return;
    }
    if (rest !== undefined) this.#body(rest);
    this.#flushHead();
  }

  headOut: Buffer | undefined;

  #flushHead(): void {
    const h = this.headOut;
    if (h === undefined) return;
    this.headOut = undefined;
    this.#write(h);
  }

  upstreamReusable = false;
  clientKeepAlive = false;

  #write(data: Buffer): void {
    const client = this.conn.socket;
    const h = this.headOut;
    let chunk = data;
    if (h !== undefined) {
      this.headOut = undefined;
      chunk = Buffer.concat([h, data]);
    }
    if (!client.write(chunk)) {
      const up = this.up?.socket;
      if (up === undefined) return;
      up.pause();
      client.once('drain', () => {
        up.resume();
      });
    }
  }

  /** Upstream body bytes to the client (and to the response tap, if any). */
  #relay(data: Buffer): void {
    this.ctx.upstream.tap?.data(data);
    this.#write(data);
  }

  /** Response bytes after the head: the body's go to the client, up to where it ends. */
  #body(chunk: Buffer): void {
    const body = this.body;
    if (this.finished || body === undefined) return;
    const n = body.take(chunk);
    if (n === -1) {
      this.#fail(new Error('malformed chunked upstream body'));
      return;
    }
    if (n > 0) this.#relay(n === chunk.length ? chunk : chunk.subarray(0, n));
    // Bytes after the body (or a body where none may be): the connection is not reused.
    if (n < chunk.length) this.upstreamReusable = false;
    if (body.ended) this.#finish(true);
  }

  upClosed(): void {
    if (this.finished) return;
    if (this.body?.framing === 'close') {
      this.upstreamReusable = false;
      this.#finish(false);
      return;
    }
    const err = new Error('upstream closed the connection') as Error & { code: string };
    err.code = 'ECONNRESET';
    this.#fail(err);
  }

  upFailed(err: unknown): void {
    this.#fail(err);
  }

  #fail(err: unknown): void {
    if (this.finished) return;
    const code = (err as { code?: unknown }).code;
    // A pooled connection the upstream closed meanwhile: once more on a new one, if nothing was
    // read from the client that can't be sent again.
    if (
      this.reused &&
      !this.retried &&
      !this.gotResponse &&
      this.contentLength === 0 &&
      code !== 'UND_ERR_HEADERS_TIMEOUT'
    ) {
      this.#detach()?.socket.destroy();
      this.retried = true;
      this.#start();
      return;
    }
    this.finished = true;
    this.#detach()?.socket.destroy();
    const client = this.conn.socket;
    if (this.sent || client.destroyed) {
      client.destroy();
      this.#complete(false);
      return;
    }
    const service = this.ctx.upstream.service;
    service?.opened?.(0);
    const error = service?.unavailable ?? upstreamFailure(err);
    this.ctx.log.warn('upstream call failed', { status: error.status, code, error: errorMessage(err) });
    const keepAlive = this.keepAliveWanted && !this.conn.listener.closing && !this.conn.bodyFlows;
    client.write(errorResponse(error, this.ctx.responseHeaders, keepAlive, this.isHead));
    this.status = error.status;
    this.answered = true;
    this.#complete(keepAlive);
  }

  #finish(clean: boolean): void {
    if (this.finished) return;
    this.finished = true;
    this.answered = true;
    if (clean) this.ctx.upstream.tap?.end();
    const up = this.#detach();
    if (up !== undefined) {
      if (clean && this.upstreamReusable) this.conn.fp.pool.give(up);
      else up.socket.destroy();
    }
    this.#complete(clean && this.clientKeepAlive);
  }
}
