/**
 * The fast path's client connections: one state machine per connection that reads request heads
 * (head-parser.ts), runs each request it serves as an exchange (exchange.ts), one after the
 * other (pipelined requests wait, buffered), keeps the connection alive between them, and hands
 * the connection with every byte read so far to node:http when a head is not for the fast path.
 */
import type { Socket } from 'node:net';
import { socketAddressOf, type ListenerInfo } from '../../pipeline/context.ts';
import type { ListenerKey } from '../../pipeline/router.ts';
import { Exchange, type ExchangeClient, type ExchangeShared, type Matched } from './exchange.ts';
import { headEnd, parseRequestHead, type ParsedHead } from './head-parser.ts';

/** Requests served and connections handed to node:http, for tests and diagnostics. */
export const fastPathStats = { requests: 0, handoffs: 0 };

/** Like the node:http listeners (listeners.ts). */
const CLIENT_KEEP_ALIVE_MS = 65_000;
/**
 * A connection the gateway closes keeps reading (and dropping) what the client still sends, up
 * to this long and this much: closing with unread bytes sends a reset, which can destroy the
 * answer before the client has read it.
 */
const LINGER_MS = 1_000;
const LINGER_BYTES = 1024 * 1024;

/** The listener a connection arrived on, as the fast path sees it. */
export interface FastListener {
  key: ListenerKey | 'control';
  admin: boolean;
  closing: boolean;
  /** Scheme and trust of forwarded headers, for the request context. */
  info: ListenerInfo;
  /** Connections served by the fast path now, so closing the listener can end them. */
  fastConnections: Set<FastConnectionHandle>;
}

/** What a listener can do to a fast-path connection. */
export interface FastConnectionHandle {
  /** Closes the connection now if no request is in flight; else after the current response. */
  closeIfIdle(): void;
  destroy(): void;
}

/** What a connection needs of its fast path (index.ts `FastPath`). */
export interface ConnectionOwner extends ExchangeShared {
  /** The route for a parsed head when the fast path serves it, or undefined. */
  routeFor(listener: FastListener, head: ParsedHead): Matched | undefined;
}

/**
 * Where a connection is: reading a head; running a request's chain (everything that arrives is
 * buffered, the socket paused); forwarding a request body; waiting for the response; closed.
 */
const ST = { head: 0, chain: 1, body: 2, wait: 3, closed: 4 } as const;
type ConnState = (typeof ST)[keyof typeof ST];

/** One client connection on the fast path. */
export class Connection implements FastConnectionHandle, ExchangeClient {
  readonly fp: ConnectionOwner;
  readonly socket: Socket;
  readonly listener: FastListener;
  readonly handoff: (socket: Socket) => void;
  /** The client address (the same for every request of the connection). */
  readonly peer: string;
  state: ConnState = ST.head;
  /** Bytes read and not consumed yet: the rest of a body, pipelined requests. */
  buf: Buffer | undefined;
  /** Request body bytes still to forward. */
  bodyLeft = 0;
  /** The request in flight (from its head to the end of its response). */
  exchange: Exchange | undefined;
  readonly onData = (chunk: Buffer): void => {
    this.#data(chunk);
  };
  readonly onClose = (): void => {
    this.state = ST.closed;
    this.listener.fastConnections.delete(this);
    this.exchange?.clientGone();
  };
  readonly onTimeout = (): void => {
    if (this.exchange === undefined) this.socket.destroy();
  };
  readonly onError = (): void => {
    // 'close' follows
  };
  /** The client sent FIN: close once the request in flight (if any) is done. */
  readonly onEnd = (): void => {
    this.ended = true;
    const ex = this.exchange;
    if (ex === undefined) this.socket.end();
    // A client that ends its side while a service's answer streams to it (an event stream
    // consumer going away, before its first message as after) is gone, as node:http takes it:
    // the call stops, so the stream hands its next message to another consumer instead of
    // writing it to a closed connection.
    else if (ex.ctx.upstream.service !== undefined && (ex.sent || ex.ctx.upstream.service.consumer === true))
      this.socket.destroy();
  };
  ended = false;
  /** Bytes dropped since the gateway closed its side. */
  lingered = 0;

  constructor(
    fp: ConnectionOwner,
    socket: Socket,
    listener: FastListener,
    handoff: (socket: Socket) => void,
  ) {
    this.fp = fp;
    this.socket = socket;
    this.listener = listener;
    this.handoff = handoff;
    this.peer = socketAddressOf(socket);
    listener.fastConnections.add(this);
    socket.setNoDelay(true);
    socket.setTimeout(CLIENT_KEEP_ALIVE_MS);
    socket.on('data', this.onData);
    socket.on('close', this.onClose);
    socket.on('timeout', this.onTimeout);
    socket.on('error', this.onError);
    socket.on('end', this.onEnd);
  }

  get closed(): boolean {
    return this.state === ST.closed;
  }

  get chainRuns(): boolean {
    return this.state === ST.chain;
  }

  get bodyFlows(): boolean {
    return this.state === ST.body;
  }

  closeIfIdle(): void {
    if (this.#waiting() && this.buf === undefined) this.#close();
  }

  destroy(): void {
    this.socket.destroy();
  }

  #data(chunk: Buffer): void {
    if (this.state === ST.closed) {
      this.lingered += chunk.length;
      if (this.lingered > LINGER_BYTES) this.socket.destroy();
      return;
    }
    if (this.state === ST.body) {
      const ex = this.exchange;
      if (ex === undefined) return;
      const n = Math.min(this.bodyLeft, chunk.length);
      this.bodyLeft -= n;
      ex.sendBody(n === chunk.length ? chunk : chunk.subarray(0, n));
      if (n < chunk.length) this.#keep(chunk.subarray(n));
      if (this.bodyLeft === 0) this.#bodyDone();
      return;
    }
    this.#keep(chunk);
    if (this.state === ST.head) this.next();
    else this.socket.pause();
  }

  #keep(chunk: Buffer): void {
    this.buf = this.buf === undefined ? chunk : Buffer.concat([this.buf, chunk]);
  }

  #bodyDone(): void {
    this.state = ST.wait;
    if (this.buf !== undefined) this.socket.pause();
  }

  /** Parses and serves the next buffered request head, if complete. */
  next(): void {
    const buf = this.buf;
    if (buf === undefined || this.state !== ST.head) return;
    const end = headEnd(buf);
    if (end === -1) return;
    const head = end >= 0 ? parseRequestHead(buf.toString('latin1', 0, end)) : undefined;
    const found = head === undefined ? undefined : this.fp.routeFor(this.listener, head);
    if (head === undefined || found === undefined) {
      this.#handOff();
      return;
    }
    fastPathStats.requests++;
    // Whatever follows the head (body, pipelined requests) stays buffered while the chain runs.
    this.buf = buf.length > end + 4 ? buf.subarray(end + 4) : undefined;
    this.state = ST.chain;
    const ex = new Exchange(this, head, found);
    this.exchange = ex;
    ex.run();
  }

  /**
   * The chain let the request through: the body bytes buffered so far, to send with the head.
   * The rest of the body is forwarded as it arrives.
   */
  takeBody(length: number): Buffer | undefined {
    this.bodyLeft = length;
    const rest = this.buf;
    let first: Buffer | undefined;
    if (rest !== undefined && length > 0) {
      const n = Math.min(length, rest.length);
      first = rest.subarray(0, n);
      this.bodyLeft -= n;
      this.buf = n < rest.length ? rest.subarray(n) : undefined;
    }
    if (this.bodyLeft > 0) {
      this.state = ST.body;
      this.socket.resume();
    } else {
      this.state = ST.wait;
      if (this.buf !== undefined) this.socket.pause();
    }
    return first;
  }

  /**
   * A refused request's body is never read: true when it is all buffered (it is dropped and the
   * connection can go on), false when some is still to come (the connection must close).
   */
  dropBody(length: number): boolean {
    if (length === 0) return true;
    const buf = this.buf;
    if (buf === undefined || buf.length < length) return false;
    this.buf = buf.length > length ? buf.subarray(length) : undefined;
    return true;
  }

  /** Called when the request in flight is over (answered, failed, or the client went away). */
  done(keepAlive: boolean): void {
    this.exchange = undefined;
    if (this.state === ST.closed) return;
    if (!keepAlive || this.listener.closing || this.state === ST.body) {
      this.#close();
      return;
    }
    this.state = ST.head;
    this.socket.resume();
    this.next();
    // A client that half-closed gets the answers to what it sent, then the connection ends.
    if (this.ended && this.#waiting()) this.socket.end();
  }

  /** Ends the connection after what was written; reads and drops what still comes (LINGER_MS). */
  #close(): void {
    this.state = ST.closed;
    this.listener.fastConnections.delete(this);
    this.buf = undefined;
    const s = this.socket;
    s.end();
    s.setTimeout(LINGER_MS);
    s.resume();
  }

  /** No request in flight: waiting for the next head. */
  #waiting(): boolean {
    return this.exchange === undefined && this.state === ST.head;
  }

  #handOff(): void {
    fastPathStats.handoffs++;
    const s = this.socket;
    this.state = ST.closed;
    this.listener.fastConnections.delete(this);
    s.removeListener('data', this.onData);
    s.removeListener('close', this.onClose);
    s.removeListener('timeout', this.onTimeout);
    s.removeListener('error', this.onError);
    s.removeListener('end', this.onEnd);
    s.setTimeout(0);
    s.pause();
    if (this.buf !== undefined) s.unshift(this.buf);
    this.buf = undefined;
    this.handoff(s);
    s.resume();
  }
}
