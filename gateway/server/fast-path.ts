/**
 * The connection-level fast path of plain-HTTP listeners. It reads request heads straight off the
 * socket and serves the routes `fastPathServes` (routes/compile.ts) admitted when they compiled:
 * an http upstream and no middleware that reads the body. For each request it builds a
 * `RequestContext` from the head, runs the route's compiled chain (the same handlers node:http
 * runs), and, when the chain lets the request through, sends it to the upstream over a pooled raw
 * socket; the response comes back byte for byte (its framing parsed only to find the end).
 * Anything else - another route, the management API, HTTP/1.0, a head this parser finds odd -
 * hands the connection, with every byte read so far, to the listener's node:http server for the
 * rest of its life, so node:http decides (and answers 400 to what it finds malformed). See
 * docs/design/gateway.md.
 */
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import {
  chainKind,
  errorBody,
  internalFailure,
  runBefore,
  runChain,
  runSteps,
  withoutBody,
  type BeforeStep,
  type Rejection,
  type SyncStep,
} from '../pipeline/compose.ts';
import {
  RequestContext,
  socketAddressOf,
  type BodyPeek,
  type ListenerInfo,
  type RequestObserver,
} from '../pipeline/context.ts';
import type { GatewayError } from '../pipeline/errors.ts';
import type { ListenerKey, Route, RouteTable, Target } from '../pipeline/router.ts';
import { normalizeHost } from '../pipeline/router.ts';
import { splitTarget } from '../pipeline/url.ts';
import {
  addedResponseHeaders,
  connectionTokens,
  relaysResponseHeader,
  upstreamRequestHeaders,
} from '../upstream/headers.ts';
import { upstreamFailure, upstreamPathOf } from '../upstream/proxy.ts';

/** Requests served and connections handed to node:http, for tests and diagnostics. */
export const fastPathStats = { requests: 0, handoffs: 0 };

/** node:http's default maxHeaderSize: a longer head goes to node:http (which answers 431). */
const MAX_HEAD = 16_384;
/** Idle upstream connections are closed after this (undici's keepAliveTimeout in dispatchers.ts). */
const UPSTREAM_IDLE_MS = 4_000;
const MAX_IDLE_PER_ORIGIN = 1_024;
/** Like the node:http listeners (listeners.ts). */
const CLIENT_KEEP_ALIVE_MS = 65_000;
/**
 * A connection the gateway closes keeps reading (and dropping) what the client still sends, up
 * to this long and this much: closing with unread bytes sends a reset, which can destroy the
 * answer before the client has read it.
 */
const LINGER_MS = 1_000;
const LINGER_BYTES = 1024 * 1024;

const METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
// eslint-disable-next-line no-control-regex
const BAD_TARGET = /[\x00-\x20\x7f]/;
const DIGITS = /^\d{1,15}$/;

/** What the fast path needs from the gateway. */
export interface FastPathOptions {
  /** The route table serving now (read once per request head). */
  table: () => RouteTable;
  /** Whether the management API owns `path` on a listener that serves it. */
  adminOwns: (path: string) => boolean;
  connectTimeoutMs: number;
  timeoutMs: number;
  log: Logger;
  /** Sees every request served here, as node:http's requests (server/gateway.ts). */
  observer?: RequestObserver | undefined;
}

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

interface Header {
  lower: string;
  raw: string;
  value: string;
}

interface ParsedHead {
  method: string;
  path: string;
  query: string;
  /** Lower-case names, repeated headers joined as node:http joins them (`addHeader`). */
  headers: IncomingHttpHeaders;
  host: string;
  /** Body length (0 without Content-Length). */
  contentLength: number;
  /** Whether the client sent Content-Length (forwarded as it came, even 0). */
  hasLength: boolean;
  close: boolean;
}

/**
 * Headers of which node:http keeps the first when repeated (lib/_http_incoming.js,
 * `matchKnownFields`); `set-cookie` is a list, `cookie` joined with `; `, others with `, `.
 * Middleware see the same `ctx.headers` on both entrances.
 */
const FIRST_WINS = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'referer',
  'host',
  'authorization',
  'proxy-authorization',
  'if-modified-since',
  'if-unmodified-since',
  'from',
  'location',
  'max-forwards',
  'retry-after',
  'etag',
  'last-modified',
  'server',
  'age',
  'expires',
]);

function addHeader(headers: IncomingHttpHeaders, name: string, value: string): void {
  const had = headers[name];
  if (had === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
  else if (FIRST_WINS.has(name)) return;
  else if (typeof had !== 'string') had.push(value);
  else headers[name] = `${had}${name === 'cookie' ? '; ' : ', '}${value}`;
}

/** A header value without the optional whitespace around it (SP and HTAB only, as llhttp). */
function owsTrimmed(line: string, from: number): string {
  let a = from;
  let b = line.length;
  while (a < b && (line.charCodeAt(a) === 32 || line.charCodeAt(a) === 9)) a++;
  while (b > a && (line.charCodeAt(b - 1) === 32 || line.charCodeAt(b - 1) === 9)) b--;
  return line.slice(a, b);
}

/**
 * Parses a request head (without its final CRLF CRLF). Undefined when the request is not for the
 * fast path, or when anything about it is unusual: node:http then decides.
 */
function parseRequestHead(text: string): ParsedHead | undefined {
  const lines = text.split('\r\n');
  const first = lines[0] ?? '';
  const sp1 = first.indexOf(' ');
  const sp2 = first.lastIndexOf(' ');
  if (sp1 <= 0 || sp2 === sp1) return undefined;
  const method = first.slice(0, sp1);
  const target = first.slice(sp1 + 1, sp2);
  if (!METHODS.has(method) || first.slice(sp2 + 1) !== 'HTTP/1.1') return undefined;
  if (target.charCodeAt(0) !== 47 || BAD_TARGET.test(target)) return undefined;
  const headers: IncomingHttpHeaders = {};
  let host: string | undefined;
  let contentLength = -1;
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const raw = line.slice(0, colon);
    if (!TOKEN.test(raw)) return undefined;
    const value = owsTrimmed(line, colon + 1);
    if (BAD_VALUE.test(value)) return undefined;
    const lower = raw.toLowerCase();
    switch (lower) {
      case '__proto__':
        return undefined;
      case 'host':
        if (host !== undefined) return undefined;
        host = value;
        break;
      case 'content-length':
        if (contentLength !== -1 || !DIGITS.test(value)) return undefined;
        contentLength = Number(value);
        break;
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
        return undefined;
      case 'connection':
        for (const t of value.split(',')) {
          const token = t.trim().toLowerCase();
          if (token === 'close') close = true;
          else if (token === 'upgrade') return undefined;
        }
        break;
      default:
        break;
    }
    addHeader(headers, lower, value);
  }
  // HTTP/1.1 requires Host; node:http answers 400 without one.
  if (host === undefined) return undefined;
  const { path, query } = splitTarget(target);
  return {
    method,
    path,
    query,
    headers,
    host,
    contentLength: Math.max(contentLength, 0),
    hasLength: contentLength !== -1,
    close,
  };
}

/**
 * Header lines for fields the gateway adds (the context's response headers, an error's headers).
 * A name or value that could not be sent as it is (line breaks, control characters) is left out,
 * where node:http would throw.
 */
function headerLines(fields: Readonly<Record<string, string>>): string {
  let out = '';
  for (const name in fields) {
    const value = fields[name] ?? '';
    if (TOKEN.test(name) && !BAD_VALUE.test(value)) out += `${name}: ${value}\r\n`;
  }
  return out;
}

/**
 * The answer to a refusal or an upstream failure, as node:http's `respondError` writes it: the
 * error's status, the context's response headers, the error's headers, `{"error": message}` as
 * JSON; no body for HEAD.
 */
function errorResponse(
  error: GatewayError,
  added: Readonly<Record<string, string>>,
  keepAlive: boolean,
  head: boolean,
): string {
  const body = errorBody(error);
  const status = error.status;
  // A reply (GatewayError.reply) brings its own content type, if any.
  const type = error.replyBody === undefined ? 'content-type: application/json\r\n' : '';
  const empty = withoutBody(status);
  return (
    `HTTP/1.1 ${String(status)} ${STATUS_CODES[status] ?? ''}\r\n${headerLines({ ...added, ...error.headers })}` +
    `${type}${empty ? '' : `content-length: ${String(error.replyLength ?? Buffer.byteLength(body))}\r\n`}` +
    `date: ${httpDate()}\r\n${connectionLines(keepAlive)}${head || empty ? '' : body}`
  );
}

function connectionLines(keepAlive: boolean): string {
  return keepAlive ? 'connection: keep-alive\r\nkeep-alive: timeout=65\r\n\r\n' : 'connection: close\r\n\r\n';
}

let dateCache = '';
let dateSecond = 0;
function httpDate(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateCache = new Date(s * 1000).toUTCString();
  }
  return dateCache;
}

interface Origin {
  key: string;
  host: string;
  port: number;
}
const origins = new WeakMap<Target, Origin>();
function originOf(target: Target): Origin {
  let o = origins.get(target);
  if (o === undefined) {
    const u = new URL(target.origin);
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    o = { key: `${host}:${u.port || '80'}`, host, port: Number(u.port || '80') };
    origins.set(target, o);
  }
  return o;
}

/**
 * One upstream connection. Its listeners are attached once and dispatch to the exchange using
 * it, or drop it when it is idle in the pool; its timeout is set once (connect, then response).
 */
class UpstreamConn {
  readonly socket: Socket;
  readonly origin: Origin;
  readonly pool: UpstreamPool;
  exchange: Exchange | undefined;
  connected = false;
  idleSince = 0;
  /** Its idle timeout is off (a service call of the gateway's own, `ServiceCall`). */
  untimed = false;

  constructor(pool: UpstreamPool, origin: Origin, timeouts: { connectMs: number; responseMs: number }) {
    this.pool = pool;
    this.origin = origin;
    const s = connect({ host: origin.host, port: origin.port });
    this.socket = s;
    s.setNoDelay(true);
    s.setTimeout(timeouts.connectMs);
    s.once('connect', () => {
      this.connected = true;
      this.untimed = this.exchange?.ctx.serviceCall !== undefined;
      s.setTimeout(this.untimed ? 0 : timeouts.responseMs);
    });
    s.on('data', (chunk: Buffer) => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upData(chunk);
    });
    const closed = (): void => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upClosed();
    };
    s.on('end', closed);
    s.on('close', closed);
    s.on('error', (err: Error) => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upFailed(err);
    });
    s.on('timeout', () => {
      if (this.exchange === undefined) {
        this.drop();
        return;
      }
      const err = new Error('upstream timeout') as Error & { code: string };
      err.code = this.connected ? 'UND_ERR_HEADERS_TIMEOUT' : 'UND_ERR_CONNECT_TIMEOUT';
      this.exchange.upFailed(err);
    });
  }

  drop(): void {
    this.pool.remove(this);
    this.socket.destroy();
  }
}

/** Keep-alive connections to http upstreams, per origin. */
class UpstreamPool {
  readonly #idle = new Map<string, UpstreamConn[]>();
  readonly #timeouts: { connectMs: number; responseMs: number };
  #closed = false;

  constructor(timeouts: { connectMs: number; responseMs: number }) {
    this.#timeouts = timeouts;
  }

  /** An idle connection to `o` (reused: true), or a new one. */
  get(o: Origin, fresh: boolean): { conn: UpstreamConn; reused: boolean } {
    const list = fresh ? undefined : this.#idle.get(o.key);
    const now = Date.now();
    while (list !== undefined && list.length > 0) {
      const c = list.pop();
      if (c === undefined) break;
      if (c.socket.destroyed || !c.socket.writable || now - c.idleSince > UPSTREAM_IDLE_MS) {
        c.socket.destroy();
        continue;
      }
      return { conn: c, reused: true };
    }
    return { conn: new UpstreamConn(this, o, this.#timeouts), reused: false };
  }

  give(c: UpstreamConn): void {
    c.exchange = undefined;
    let list = this.#idle.get(c.origin.key);
    if (list === undefined) {
      list = [];
      this.#idle.set(c.origin.key, list);
    }
    if (this.#closed || list.length >= MAX_IDLE_PER_ORIGIN) {
      c.socket.destroy();
      return;
    }
    c.socket.resume();
    if (c.untimed) {
      c.untimed = false;
      c.socket.setTimeout(this.#timeouts.responseMs);
    }
    c.idleSince = Date.now();
    list.push(c);
  }

  remove(c: UpstreamConn): void {
    const list = this.#idle.get(c.origin.key);
    const i = list?.indexOf(c) ?? -1;
    if (i !== -1) list?.splice(i, 1);
  }

  close(): void {
    this.#closed = true;
    for (const list of this.#idle.values()) for (const c of list) c.socket.destroy();
    this.#idle.clear();
  }
}

/** What a request head matched: the route, its upstream, and the table it was read from. */
interface Matched {
  route: Route;
  target: Target;
  table: RouteTable;
}

/** The fast path of one gateway process. */
export class FastPath {
  readonly opts: FastPathOptions;
  readonly pool: UpstreamPool;

  constructor(opts: FastPathOptions) {
    this.opts = opts;
    this.pool = new UpstreamPool({ connectMs: opts.connectTimeoutMs, responseMs: opts.timeoutMs });
  }

  /** Serves a new connection of `listener`; `handoff` gives it to the listener's node:http server. */
  serve(socket: Socket, listener: FastListener, handoff: (socket: Socket) => void): void {
    new Connection(this, socket, listener, handoff);
  }

  /** Frees the upstream pool. */
  close(): void {
    this.pool.close();
  }

  /** The route for a parsed head when the fast path serves it, or undefined. */
  routeFor(listener: FastListener, head: ParsedHead): Matched | undefined {
    if (listener.admin && this.opts.adminOwns(head.path)) return undefined;
    const key: ListenerKey = listener.key === 'control' ? 'main' : listener.key;
    const table = this.opts.table();
    const route = table.match(key, normalizeHost(head.host), head.path);
    // The one rule, decided when the route compiled (routes/compile.ts fastPathServes); it
    // implies an http target.
    if (route?.fastPath !== true || route.target === undefined) return undefined;
    return { route, target: route.target, table };
  }
}

/**
 * Where a connection is: reading a head; running a request's chain (everything that arrives is
 * buffered, the socket paused); forwarding a request body; waiting for the response; closed.
 */
const ST = { head: 0, chain: 1, body: 2, wait: 3, closed: 4 } as const;
type ConnState = (typeof ST)[keyof typeof ST];

/** One client connection on the fast path. */
class Connection implements FastConnectionHandle {
  readonly fp: FastPath;
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
    else if (ex.ctx.serviceCall !== undefined && (ex.sent || ex.ctx.serviceCall.consumer === true))
      this.socket.destroy();
  };
  ended = false;
  /** Bytes dropped since the gateway closed its side. */
  lingered = 0;

  constructor(fp: FastPath, socket: Socket, listener: FastListener, handoff: (socket: Socket) => void) {
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
    const end = buf.indexOf('\r\n\r\n');
    if (end === -1) {
      if (buf.length > MAX_HEAD) this.#handOff();
      return;
    }
    const head = end <= MAX_HEAD ? parseRequestHead(buf.toString('latin1', 0, end)) : undefined;
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

const EMPTY = Buffer.alloc(0);

const R = { head: 0, length: 1, chunked: 2, close: 3, none: 4 } as const;
type RespMode = (typeof R)[keyof typeof R];

/**
 * One request on the fast path: its context and chain, then (when the chain lets it through) the
 * exchange with the upstream. It counts on its route table from its head to its end.
 */
class Exchange implements BodyPeek {
  readonly conn: Connection;
  readonly ctx: RequestContext;
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
  /** Chunked scanning: 0 size digits, 4 rest of the size line, 1 data, 2 CRLF, 3 trailers. */
  cState = 0;
  cSize = 0;
  cLine = 0;
  pendingBody: Buffer | undefined;

  constructor(conn: Connection, head: ParsedHead, found: Matched) {
    this.conn = conn;
    this.table = found.table;
    this.target = found.target;
    this.origin = originOf(found.target);
    this.isHead = head.method === 'HEAD';
    this.contentLength = head.contentLength;
    this.hasLength = head.hasLength;
    this.keepAliveWanted = !head.close;
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
    if (!this.hasLength || this.forwarded || this.conn.state !== ST.chain) return undefined;
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
    const handlers = this.ctx.route.handlers;
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
    if (this.conn.state === ST.closed || (this.conn.ended && this.ctx.serviceCall?.consumer === true)) {
      // The client went away while the chain ran (a consumer that ended its side is gone too).
      this.forwarded = true;
      this.finished = true;
      this.conn.socket.destroy();
      this.#complete(false);
      return;
    }
    const chosen = this.ctx.upstreamTarget;
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
    const path = upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstreamPath);
    if (check && BAD_TARGET.test(path)) throw new Error('the chain left an invalid request target');
    const headers = upstreamRequestHeaders(ctx, target.host, route.api.proxy.preserve_host_header === true);
    let out = `${ctx.upstreamMethod ?? ctx.method} ${path} HTTP/1.1\r\n`;
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
    if (conn.state === ST.closed) return;
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

  /** The request's hard timeout (`ctx.upstreamTimeoutMs`), while the response has not begun. */
  #hardTimer: NodeJS.Timeout | undefined;

  #start(): void {
    const ms = this.ctx.upstreamTimeoutMs;
    if (ms !== undefined && this.#hardTimer === undefined) {
      this.#hardTimer = setTimeout(() => {
        if (this.sent || this.finished) return;
        this.#fail(Object.assign(new Error('upstream hard timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }));
      }, ms);
    }
    const { conn, reused } = this.conn.fp.pool.get(this.origin, this.retried);
    this.reused = reused;
    if (this.ctx.serviceCall !== undefined && conn.connected && !conn.untimed) {
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
        if (this.conn.state === ST.body) client.resume();
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
    for (;;) {
      const buf = this.upBuf;
      if (buf === undefined) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > 65_536) this.#fail(new Error('upstream response head too large'));
        return;
      }
      const lines = buf.toString('latin1', 0, end).split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
      if (m === null) {
        this.#fail(new Error('malformed upstream status line'));
        return;
      }
      const status = Number(m[1]);
      const rest = buf.length > end + 4 ? buf.subarray(end + 4) : undefined;
      if (status < 200) {
        if (status === 101) {
          this.#fail(new Error('unexpected 101 from upstream'));
          return;
        }
        this.upBuf = rest;
        continue; // informational: the final response follows
      }
      this.upBuf = undefined;
      this.#respond(status, m[2] ?? '', lines, rest);
      return;
    }
  }

  #respond(status: number, reason: string, lines: string[], rest: Buffer | undefined): void {
    const headers: Header[] = [];
    const connValues: string[] = [];
    let te: string | undefined;
    let cl: string | undefined;
    let date = false;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] ?? '';
      const colon = line.indexOf(':');
      if (colon <= 0) {
        this.#fail(new Error('malformed upstream header'));
        return;
      }
      const raw = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      const lower = raw.toLowerCase();
      if (lower === 'connection') connValues.push(value);
      else if (lower === 'transfer-encoding') te = te === undefined ? value : `${te}, ${value}`;
      else if (lower === 'content-length') {
        if ((cl !== undefined && cl !== value) || !DIGITS.test(value)) {
          this.#fail(new Error('invalid upstream content-length'));
          return;
        }
        cl = value;
      } else if (lower === 'date') date = true;
      headers.push({ lower, raw, value });
    }
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
    this.left = cl === undefined ? 0 : Number(cl);
    this.upstreamReusable = !upstreamClose && mode !== R.close;
    const keepAlive =
      this.keepAliveWanted && mode !== R.close && !this.conn.listener.closing && this.conn.state !== ST.body;
    this.clientKeepAlive = keepAlive;
    this.status = status;
    this.ctx.upstreamStatus = status;
    this.ctx.serviceCall?.opened?.(status);
    const tap = this.ctx.responseTap;
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
      if (!relaysResponseHeader(h.lower, extra, added, this.ctx.removedResponseHeaders)) continue;
      out += `${h.raw}: ${h.value}\r\n`;
    }
    out += headerLines(
      vary === undefined ? added : addedResponseHeaders(added, vary, this.ctx.removedResponseHeaders),
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
    this.ctx.responseTap?.data(data);
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
        const end = this.#scanChunked(chunk);
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

  /**
   * Advances the chunked-framing scanner over `b`. Returns the index just past the end of the
   * body when it ends in `b`, -1 when it goes on, -2 when the framing is malformed.
   */
  #scanChunked(b: Buffer): number {
    let i = 0;
    const n = b.length;
    while (i < n) {
      switch (this.cState) {
        case 0: {
          // chunk size: hex digits (cLine counts them), then an extension or CRLF
          const c = b[i++] ?? 0;
          const d =
            c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
          if (d >= 0) {
            if (++this.cLine > 13) return -2;
            this.cSize = this.cSize * 16 + d;
          } else if (this.cLine === 0) return -2;
          else if (c === 13 || c === 59 || c === 32 || c === 9) this.cState = 4;
          else return -2;
          break;
        }
        case 4: {
          // rest of the size line, up to LF
          const lf = b.indexOf(10, i);
          if (lf === -1) return -1;
          i = lf + 1;
          this.cLine = 0;
          this.cState = this.cSize === 0 ? 3 : 1;
          break;
        }
        case 1: {
          const take = Math.min(this.cSize, n - i);
          i += take;
          this.cSize -= take;
          if (this.cSize === 0) {
            this.cState = 2;
            this.cLine = 0;
          }
          break;
        }
        case 2: {
          // CRLF after chunk data
          const c = b[i++];
          if (this.cLine === 0 && c === 13) this.cLine = 1;
          else if (c === 10) {
            this.cLine = 0;
            this.cSize = 0;
            this.cState = 0;
          } else return -2;
          break;
        }
        default: {
          // trailers: lines until an empty one; cLine counts bytes of the current line
          const c = b[i++];
          if (c === 10) {
            if (this.cLine === 0) return i;
            this.cLine = 0;
          } else if (c !== 13) this.cLine++;
          break;
        }
      }
    }
    return -1;
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
    const service = this.ctx.serviceCall;
    service?.opened?.(0);
    const error = service?.unavailable ?? upstreamFailure(err);
    this.ctx.log.warn('upstream call failed', { status: error.status, code, error: errorMessage(err) });
    const keepAlive = this.keepAliveWanted && !this.conn.listener.closing && this.conn.state !== ST.body;
    client.write(errorResponse(error, this.ctx.responseHeaders, keepAlive, this.isHead));
    this.status = error.status;
    this.answered = true;
    this.#complete(keepAlive);
  }

  #finish(clean: boolean): void {
    if (this.finished) return;
    this.finished = true;
    this.answered = true;
    if (clean) this.ctx.responseTap?.end();
    const up = this.#detach();
    if (up !== undefined) {
      if (clean && this.upstreamReusable) this.conn.fp.pool.give(up);
      else up.socket.destroy();
    }
    this.#complete(clean && this.clientKeepAlive);
  }
}
