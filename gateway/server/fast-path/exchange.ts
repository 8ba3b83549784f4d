/**
 * One request on the fast path, from its parsed head to the end of its response: its
 * `RequestContext` and compiled chain, then (when the chain lets it through) the exchange with
 * the upstream over a pooled socket (upstream-pool.ts): the request head written from the
 * context, the body forwarded, and the upstream response relayed byte for byte (its head, read
 * by upstream-response.ts, re-emitted with the gateway's headers; its body by its framing:
 * Content-Length, chunked, close-delimited, none).
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
import {
  addedResponseHeaders,
  connectionTokens,
  relaysResponseHeader,
  upstreamRequestHeaders,
} from '../../upstream/headers.ts';
import { upstreamFailure, upstreamPathOf } from '../../upstream/proxy.ts';
import { addHeader, BAD_TARGET, BAD_VALUE, TOKEN, type ParsedHead } from './head-parser.ts';
import { connectionLines, errorResponse, headerLines, httpDate } from './response-writer.ts';
import { ChunkedEnd, readResponseHead, type ResponseHead } from './upstream-response.ts';
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

const R = { head: 0, length: 1, chunked: 2, close: 3, none: 4 } as const;
type RespMode = (typeof R)[keyof typeof R];

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
  mode: RespMode = R.head;
  upBuf: Buffer | undefined;
  left = 0;
  /** Where a chunked response's body ends (set for a chunked response). */
  chunks: ChunkedEnd | undefined;
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
    this.headText = this.#upstreamHead();
    this.forwarded = true;
    this.pendingBody = this.conn.takeBody(this.contentLength);
    this.#start();
  }

  /**
   * The upstream request head, from the context: the path with the context's query, and the
   * headers by the rules of upstream/headers.ts (the same function node:http uses). The body's
   * framing is the client's Content-Length, whatever the chain did to the headers.
   */
  #upstreamHead(): string {
    const ctx = this.ctx;
    const route = ctx.route;
    const target = this.target;
    // Middleware may have changed the head: what they wrote is checked before it is sent.
    const check = this.checkHead;
    const path = upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstream.path);
    if (check && BAD_TARGET.test(path)) throw new Error('the chain left an invalid request target');
    const headers = upstreamRequestHeaders(ctx, target.host, route.api.proxy.preserve_host_header === true);
    let out = `${ctx.upstream.method ?? ctx.method} ${path} HTTP/1.1\r\n`;
    // Every name and every value, each run together, for one check of each (not one per header).
    let names = '';
    let values = '';
    for (const name in headers) {
      if (name === 'content-length') continue;
      const v = headers[name];
      if (v === undefined) continue;
      if (typeof v === 'string') {
        out += `${name}: ${v}\r\n`;
        if (check) values += v;
      } else {
        for (const x of v) {
          out += `${name}: ${x}\r\n`;
          if (check) values += x;
        }
      }
      if (check) names += name;
    }
    if (check && ((names !== '' && !TOKEN.test(names)) || BAD_VALUE.test(values))) {
      throw new Error('the chain left a header that cannot be sent');
    }
    if (this.hasLength) out += `content-length: ${String(this.contentLength)}\r\n`;
    return `${out}\r\n`;
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
    if (this.mode === R.head) {
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

  #respond(head: ResponseHead, rest: Buffer | undefined): void {
    const { status, reason, headers, te, cl, connValues, date } = head;
    let upstreamClose = false;
    for (const v of connValues)
      for (const t of v.split(',')) if (t.trim().toLowerCase() === 'close') upstreamClose = true;
    const extra = connValues.length === 0 ? undefined : connectionTokens(connValues);
    let mode: RespMode;
    if (this.isHead || status === 204 || status === 304) mode = R.none;
    else if (te !== undefined) mode = /(^|,)\s*chunked\s*$/i.test(te) ? R.chunked : R.close;
    else if (cl !== undefined) mode = R.length;
    else mode = R.close;
    this.mode = mode;
    if (mode === R.chunked) this.chunks = new ChunkedEnd();
    this.left = cl === undefined ? 0 : Number(cl);
    this.upstreamReusable = !upstreamClose && mode !== R.close;
    const keepAlive =
      this.keepAliveWanted && mode !== R.close && !this.conn.listener.closing && !this.conn.bodyFlows;
    this.clientKeepAlive = keepAlive;
    this.status = status;
    this.ctx.upstreamStatus = status;
    this.ctx.upstream.service?.opened?.(status);
    const tap = this.ctx.upstream.tap;
    if (tap !== undefined) {
      const seen: IncomingHttpHeaders = {};
      for (const h of headers) addHeader(seen, h.lower, h.value);
      tap.start(status, seen, mode === R.chunked);
    }
    const added = this.ctx.responseHeaders;
    let out = `HTTP/1.1 ${String(status)} ${reason}\r\n`;
    let vary: string[] | undefined;
    for (const h of headers) {
      if (h.lower === 'vary' && extra?.has('vary') !== true) (vary ??= []).push(h.value);
      if (!relaysResponseHeader(h.lower, extra, added, this.ctx.upstream.removedResponseHeaders)) continue;
      out += `${h.raw}: ${h.value}\r\n`;
    }
    out += headerLines(
      vary === undefined
        ? added
        : addedResponseHeaders(added, vary, this.ctx.upstream.removedResponseHeaders),
    );
    if (mode === R.chunked) out += 'transfer-encoding: chunked\r\n';
    if (!date) out += `date: ${httpDate()}\r\n`;
    out += connectionLines(keepAlive);
    this.sent = true;
    // The head goes out with the first body bytes, in one write.
    this.headOut = Buffer.from(out, 'latin1');
    if (mode === R.none || (mode === R.length && this.left === 0)) {
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

  #body(chunk: Buffer): void {
    if (this.finished) return;
    switch (this.mode) {
      case R.length: {
        const n = Math.min(this.left, chunk.length);
        this.left -= n;
        if (n > 0) this.#relay(n === chunk.length ? chunk : chunk.subarray(0, n));
        if (n < chunk.length) this.upstreamReusable = false;
        if (this.left === 0) this.#finish(true);
        return;
      }
      case R.chunked: {
        const end = this.chunks?.scan(chunk) ?? -2;
        if (end === -2) {
          this.#fail(new Error('malformed chunked upstream body'));
          return;
        }
        if (end === -1) {
          this.#relay(chunk);
          return;
        }
        this.#relay(end === chunk.length ? chunk : chunk.subarray(0, end));
        if (end < chunk.length) this.upstreamReusable = false;
        this.#finish(true);
        return;
      }
      case R.close:
        this.#relay(chunk);
        return;
      default:
        this.upstreamReusable = false;
        return;
    }
  }

  upClosed(): void {
    if (this.finished) return;
    if (this.mode === R.close) {
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
