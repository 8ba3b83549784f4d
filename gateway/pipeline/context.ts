/**
 * The per-request context every middleware and the upstream call share. It is created once the
 * route is known; whatever costs something (client address, request ID, logger) is computed on
 * first use only. The context holds the request head only (method, path, query, headers), so
 * both entrances build one: node:http (`HttpContext`, which adds the request and response
 * objects) and the connection-level fast path. Middleware read and change the head here; what
 * they hand each other goes in `state`, typed. What differs between the entrances is behind
 * methods both have (`readBody`, `clientConnection`, `peerCertificate`), so no middleware asks
 * which entrance a request came through.
 */
import { randomUUID, type X509Certificate } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { redactUrl, type Logger } from '../../lib/log.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import type { AnalyticsDetail } from '../../schemas/rules/analytics-detail.ts';
import type { EventName } from '../events/events.ts';
import type { GatewayError } from './errors.ts';
import type { RouteInfo, Target } from './route.ts';

/** The listener a request came in on. */

/**
 * Removes a request header before the upstream call: its value becomes undefined, which every
 * reader of request headers takes as absent (upstream/headers.ts, the node:http proxy, plugins,
 * body templates). Not a `delete`: deleting a property V8 did not add last turns the object into
 * a dictionary, and every later read and walk of the request's headers gets slower.
 */
export function removeRequestHeader(headers: IncomingHttpHeaders, name: string): void {
  if (headers[name] !== undefined) headers[name] = undefined;
}
export interface ListenerInfo {
  /** `http` or `https`: the scheme clients used, for `X-Forwarded-Proto`. */
  protocol: 'http' | 'https';
  /** Whether to trust `X-Forwarded-*` and `X-Real-IP` from clients. */
  trustForwarded: boolean;
}

/** Where a credential was read from, so `strip_auth_data` can remove it. */
export interface CredentialSource {
  kind: 'header' | 'query' | 'cookie';
  /** Header name (lower case), query parameter or cookie name. */
  name: string;
}

/** What one middleware hands the next, per request. Each field names who sets it. */
export interface RequestState {
  /** Authentication: the stored ID of the session's key (a hash, never the raw key). */
  keyId?: string;
  /** Authentication: where the credentials came from (for strip_auth_data). */
  credentials?: CredentialSource[];
  /** Authentication: the session is the base identity's (`base_identity_provided_by`). */
  identityFromBase?: boolean;
  /**
   * Limits: the key's quota, already counted by the rate-limit step with its rate check (one
   * round trip for both); the quota step uses it instead of counting again. `use` is a
   * `QuotaUse` (limits/counters.ts), written out: the floor does not import limits/.
   */
  quotaCounted?: { name: string; use: { used: number; ttlMs: number } };
  /** Metrics (the request observer): `performance.now()` when the request was routed. */
  startedAt?: number;
  /**
   * Both entrances, for analytics (gateway/analytics/): `performance.now()` when the upstream call
   * started and when its response's head came, and the response's Content-Length on the fast path
   * (read through `responseLength()`).
   */
  upstreamStartedAt?: number;
  upstreamRespondedAt?: number;
  responseBytes?: number;
  /**
   * Versions (middleware/versions): the name of the version chosen for this request, when the
   * API chooses one per request (`version_data.not_versioned: false`).
   */
  version?: string;
  /**
   * URL rewrites (middleware/url-rewrites): what the triggers matched, by the reference's names
   * (`trigger-0-X-Tier-0`), for `$tyk_context.trigger-...` variables.
   */
  vars?: Record<string, string>;
  /**
   * Detailed recording (middleware/detailed-recording): the bodies recorded so far, which
   * analytics adds to the request's record when it is over.
   */
  detail?: { read(): AnalyticsDetail };
}

/**
 * Sees the upstream response of one request as the client gets it (both entrances call it): the
 * response cache (middleware/cache) records what it will answer later. `chunked`: the body
 * chunks still carry their chunked framing (the fast path relays bytes as they come).
 */
export interface ResponseTap {
  start(status: number, headers: IncomingHttpHeaders, chunked: boolean): void;
  data(chunk: Buffer): void;
  /** The body ended cleanly (not called when the call failed or was cut). */
  end(): void;
}

/**
 * One tap of two (the response cache and detailed recording both watching a response): each
 * hears every call, `a` first.
 */
export function teeTap(a: ResponseTap, b: ResponseTap): ResponseTap {
  return {
    start(status, headers, chunked) {
      a.start(status, headers, chunked);
      b.start(status, headers, chunked);
    },
    data(chunk) {
      a.data(chunk);
      b.data(chunk);
    },
    end() {
      a.end();
      b.end();
    },
  };
}

/**
 * How the fast path calls a service of the gateway's own (`RequestContext.serviceCall`): its
 * responses last as long as the client stays (no idle timeout: event streams), and when it cannot
 * be reached, or fails before answering, the client gets `unavailable`.
 */
export interface ServiceCall {
  unavailable: GatewayError;
  /** Hears the service's status once it answers (0: it could not be reached). */
  opened?: (status: number) => void;
  /**
   * The answer is messages for this client as they come (a consumer of a stream output): a
   * client that ends its side of the connection is gone, whether or not anything was written to
   * it yet, and the call stops at once, so the service hands its next message to another
   * consumer instead of to a connection nobody reads.
   */
  consumer?: boolean;
}

/** An upstream response buffered whole (`UpstreamPlan.responseHook`); header names lower case. */
export interface BufferedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** See `RequestContext.bodyPeek`. */
export interface BodyPeek {
  peekBody(): Buffer | undefined;
}

/**
 * What the upstream call of one request will be, as the chain decides it
 * (`RequestContext.upstream`). The terminal of each entrance reads it (upstream/proxy.ts and
 * upstream/internal.ts on node:http, the fast path's exchange) and nothing else tells it; a field
 * left undefined means the route's own (its target, the request's path and method). The request
 * headers that go upstream are the context's `headers`, as the chain left them.
 */
export class UpstreamPlan {
  /** Another upstream than the route's (`override_target`, a URL rewrite, load balancing, Bento). */
  target: Target | undefined = undefined;
  /**
   * The path sent after the target's, when a middleware changed it (a version in the URL
   * stripped, a URL rewrite): it replaces the request path and the listen-path strip.
   */
  path: string | undefined = undefined;
  /** The method, when a middleware changed it (`method_transforms`). */
  method: string | undefined = undefined;
  /**
   * Milliseconds the upstream has to start its response (`hard_timeouts`): past it the request
   * gets 504 `Upstream service reached hard timeout.`
   */
  timeoutMs: number | undefined = undefined;
  /**
   * The body to send instead of the client's stream: what a middleware read (`readBody`) or made
   * of it (a body transform). Only node:http reads bodies; the fast path never runs such
   * middleware (`Middleware.readsBody`).
   */
  body: Buffer | undefined = undefined;
  /**
   * The largest body the request may send (size limits): a body without Content-Length is
   * counted as it streams, and refused with 413 past it (node:http: the fast path hands such
   * requests over).
   */
  bodyLimit: number | undefined = undefined;
  /** Upstream response headers (lower case) not relayed to the client. */
  removedResponseHeaders: Set<string> | undefined = undefined;
  /**
   * Names (lower case) of the context's response headers that go out after the upstream's lines
   * of the same header instead of replacing them (`global_response_headers_append`).
   */
  appendedResponseHeaders: Set<string> | undefined = undefined;
  /**
   * Rewrites the upstream's response body (`transform_response`): the response is then buffered
   * whole (at most `MAX_READ_BODY`, else 502), decoded (gzip, deflate, br) and handed over;
   * undefined back sends it unchanged.
   */
  transformResponse: ((body: Buffer) => Buffer | undefined) | undefined = undefined;
  /**
   * Rewrites the whole upstream response, status, headers and body, and may wait (gRPC plugins'
   * `response` hooks): the response is then buffered whole (at most `MAX_READ_BODY`, else 502),
   * its body decoded (gzip, deflate, br), after `transformResponse`. An error back is answered
   * instead (a failed hook: 500 with an error ID). node:http only, as for `transformResponse`.
   */
  responseHook: ((res: BufferedResponse) => Promise<BufferedResponse | GatewayError>) | undefined = undefined;
  /** Sees the upstream response as the client gets it (the response cache). */
  tap: ResponseTap | undefined = undefined;
  /** The upstream is a service of the gateway's own (a stream endpoint on Bento). */
  service: ServiceCall | undefined = undefined;
}

/**
 * The client's connection, handed over whole for a WebSocket upgrade the chain let through
 * (`RequestContext.clientConnection`): whoever takes it relays bytes both ways and closes it.
 */
export interface ClientConnection {
  /** The connection itself. */
  readonly socket: Duplex;
  /** The request head's header lines as they came: names in their case, each value after its name. */
  readonly rawHeaders: readonly string[];
}

/** What an entrance gives a context. */
export interface ContextInit {
  method: string;
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
  socketAddress: string;
  route: RouteInfo;
  listener: ListenerInfo;
  log: Logger;
  /** The client connection, for its TLS peer certificate (mutual TLS). */
  socket?: Socket;
}

/** The peer certificate of each TLS connection, read once (null: it presented none). */
const peerCertificates = new WeakMap<TLSSocket, X509Certificate | null>();

/** One request on its way through the chain. */
export class RequestContext {
  readonly method: string;
  readonly route: RouteInfo;
  readonly listener: ListenerInfo;
  /** Request path, dot segments removed, without the query. */
  readonly path: string;
  /** Query string with its `?`, or empty; middleware may remove parameters (strip auth data). */
  query: string;
  /** Request headers, lower-case names; middleware may remove some before the upstream call. */
  readonly headers: IncomingHttpHeaders;
  /** The peer address of the connection. */
  readonly socketAddress: string;
  /** Headers added to the client response (for example rate-limit headers). */
  readonly responseHeaders: Record<string, string> = {};
  /** The session of the authenticated key (policies applied); set by authentication. */
  session: GatewaySession | undefined = undefined;
  /** What middleware hand each other. */
  readonly state: RequestState = {};
  /** What the upstream call will be, as the chain decides it (see `UpstreamPlan`). */
  readonly upstream = new UpstreamPlan();
  /**
   * The status the upstream answered with, set by both entrances when its response starts;
   * undefined while it has not (or when the call failed): what circuit breakers count.
   */
  upstreamStatus: number | undefined = undefined;
  /**
   * The upstream call itself, which each entrance lets a middleware make at once (the fast
   * path's exchange, node:http's terminal; undefined outside a chain): a middleware that sends
   * the request to a service of the gateway's own (streams, to
   * Bento) sets the plan's target and `service` and calls it instead of `next()`, so the rest of
   * the chain does not run, as when it answers itself on node:http. Resolves when the exchange is
   * over.
   */
  upstreamCall: (() => Promise<void>) | undefined = undefined;
  /**
   * The fast path's view of the request body before the call: the whole body when it came with
   * the head (a small publish), left in place for the call; undefined when some is still to come.
   */
  bodyPeek: BodyPeek | undefined = undefined;
  /** The request's first refusal (`reject` in compose.ts notes it). */
  refusal: { rejected: GatewayError } | undefined = undefined;
  /**
   * The listen path at the start of `path` was put there by an internal hand-over (`svc://`,
   * upstream/internal.ts `markHandedOver`), not sent by a client: the API routes and matches its
   * endpoints on `path` as a client's, but the request's own path is what follows (`requestPath`),
   * and that is what goes upstream, after the target's path, whether the API strips its listen
   * path or not, as the reference gateway hands a looped request (`tyk://`) on with its path alone.
   */
  listenPathAdded = false;
  readonly #log: Logger;
  #gone: AbortController | undefined;
  #clientIp: string | undefined;
  #requestId: string | undefined;
  #childLog: Logger | undefined;
  readonly #socket: Socket | undefined;

  constructor(init: ContextInit) {
    this.method = init.method;
    this.path = init.path;
    this.query = init.query;
    this.headers = init.headers;
    this.socketAddress = init.socketAddress;
    this.route = init.route;
    this.listener = init.listener;
    this.#log = init.log;
    this.#socket = init.socket;
  }

  /**
   * The request's path as the API got it (`$tyk_context.path`): `path`, but for a request handed
   * over by an internal target, its path without the listen path the hand-over added (`/` when
   * nothing follows it).
   */
  get requestPath(): string {
    if (!this.listenPathAdded) return this.path;
    return this.path.slice(this.route.listenPath.length) || '/';
  }

  /**
   * The client address for IP lists and `X-Forwarded-For`: a valid `X-Real-IP`, else the first
   * `X-Forwarded-For` entry (both only when trusted), else the socket address.
   */
  get clientIp(): string {
    this.#clientIp ??= clientAddress(this.headers, this.socketAddress, this.listener.trustForwarded);
    return this.#clientIp;
  }

  /** The client's `X-Request-Id`, or a new one. */
  get requestId(): string {
    if (this.#requestId === undefined) {
      const given = this.headers['x-request-id'];
      this.#requestId =
        typeof given === 'string' && given !== '' && given.length <= 200 ? given : randomUUID();
    }
    return this.#requestId;
  }

  /**
   * Aborted when the client goes away before its answer: a request waiting (throttling) stops
   * at once. Each entrance calls `clientGone()`.
   */
  get signal(): AbortSignal {
    this.#gone ??= new AbortController();
    return this.#gone.signal;
  }

  /** The client closed the connection before the answer was complete. */
  clientGone(): void {
    this.#gone?.abort();
  }

  /** Fires an event of the API (payload from this request); never waits for its handlers. */
  emit(event: EventName, message: string): void {
    this.route.events.emit({
      event,
      message,
      // Handlers send it outside the logger (webhooks): redacted as a log line would be.
      path: redactUrl(this.path),
      origin: this.clientIp,
      key: this.state.keyId ?? '',
      api_id: this.route.id,
      timestamp: new Date().toISOString(),
    });
  }

  /** A logger naming the API and the request. */
  get log(): Logger {
    this.#childLog ??= this.#log.child({ api_id: this.route.id, request_id: this.requestId });
    return this.#childLog;
  }

  /**
   * The whole request body, read once (at most `limit` bytes, and at most the plan's
   * `bodyLimit`; undefined past it, which the caller refuses with 413), then sent upstream as
   * `upstream.body`. The one body API of both entrances: only middleware marked `readsBody` call
   * it, and the fast path, which reads heads only, never runs them (here: undefined).
   */
  readBody(_limit: number): Promise<Buffer | undefined> {
    return Promise.resolve(undefined);
  }

  /**
   * The Content-Length of the response the client got, 0 when it had none (chunked, cut): the
   * fast path notes it in `state.responseBytes`, node:http reads it from the response.
   */
  responseLength(): number {
    return this.state.responseBytes ?? 0;
  }

  /**
   * The client's connection, for a middleware that relays a WebSocket upgrade itself (GraphQL
   * subscriptions), or undefined where the entrance does not hand connections over. Only
   * node:http does: the fast path's head parser leaves every upgrade to node:http, and never
   * serves a route whose chain reads the body, as those relaying upgrades do.
   */
  clientConnection(): ClientConnection | undefined {
    return undefined;
  }

  /**
   * The leaf certificate the client presented on its TLS connection (mutual TLS), or undefined.
   * Only HTTPS listeners ask for one; both entrances read it from the connection the same way.
   */
  peerCertificate(): X509Certificate | undefined {
    const socket = this.#socket;
    if (!(socket instanceof TLSSocket)) return undefined;
    // One object per connection: HTTPS listeners refuse renegotiation, so the certificate a
    // connection presented is the one it keeps.
    let cert = peerCertificates.get(socket);
    if (cert === undefined) {
      cert = socket.getPeerX509Certificate() ?? null;
      peerCertificates.set(socket, cert);
    }
    return cert ?? undefined;
  }
}

/**
 * Sees every request routed to an API, on both entrances (node:http and the connection-level
 * fast path): the one hook for what must count every request (metrics, access log, events).
 * Unset, it costs nothing. Called synchronously on the request path: it must be quick and must
 * not throw.
 */
export interface RequestObserver {
  /** A request was routed; its chain is about to run. */
  onRequest?: (ctx: RequestContext) => void;
  /** The request is over: `status` is what the client got, 0 when the connection was cut first. */
  onResponse?: (ctx: RequestContext, status: number) => void;
}

/** The largest body a middleware may read whole (basic-auth credentials in the body). */
export const MAX_READ_BODY = 1024 * 1024;

/** A request that came through node:http: the head plus the request and response objects. */
export class HttpContext extends RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The contexts of internal hops made on this one's request (upstream/internal.ts). */
  #hops: HttpContext[] | undefined;
  constructor(opts: {
    req: IncomingMessage;
    res: ServerResponse;
    route: RouteInfo;
    listener: ListenerInfo;
    path: string;
    query: string;
    log: Logger;
    /**
     * The context this one is an internal hop of, on the same request and response: told when
     * the client goes by it, not by a listener of its own on the response (a request of 16 hops
     * had 17 and Node warned of a leak).
     */
    hopOf?: HttpContext;
  }) {
    super({
      method: opts.req.method ?? 'GET',
      path: opts.path,
      query: opts.query,
      headers: opts.req.headers,
      socketAddress: socketAddressOf(opts.req.socket),
      route: opts.route,
      listener: opts.listener,
      log: opts.log,
      socket: opts.req.socket,
    });
    this.req = opts.req;
    this.res = opts.res;
    if (opts.hopOf !== undefined) {
      (opts.hopOf.#hops ??= []).push(this);
      return;
    }
    opts.res.once('close', () => {
      if (!opts.res.writableFinished) this.clientGone();
    });
  }

  override clientGone(): void {
    super.clientGone();
    for (const hop of this.#hops ?? []) hop.clientGone();
  }

  override clientConnection(): ClientConnection {
    return { socket: this.req.socket, rawHeaders: this.req.rawHeaders };
  }

  override responseLength(): number {
    return contentLength(this.res.getHeader('content-length'));
  }

  override async readBody(limit: number): Promise<Buffer | undefined> {
    const plan = this.upstream;
    if (plan.body !== undefined) return plan.body;
    const chunks: Buffer[] = [];
    let size = 0;
    const most = Math.min(limit, plan.bodyLimit ?? limit);
    for await (const chunk of this.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > most) return undefined;
      chunks.push(chunk);
    }
    plan.body = Buffer.concat(chunks);
    return plan.body;
  }
}

/** A Content-Length header's value as a number of bytes; 0 when absent or not one. */
export function contentLength(v: unknown): number {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : 0;
  return Number.isFinite(n) && n >= 0 ? n : 0;
}

/** The peer address of a socket, without the IPv4-mapped prefix. */
export function socketAddressOf(socket: Pick<Socket, 'remoteAddress'>): string {
  const addr = socket.remoteAddress ?? '';
  return addr.startsWith('::ffff:') && isIP(addr.slice(7)) === 4 ? addr.slice(7) : addr;
}

/** See RequestContext.clientIp. */
export function clientAddress(
  headers: IncomingHttpHeaders,
  socketAddress: string,
  trustForwarded: boolean,
): string {
  if (trustForwarded) {
    const real = headers['x-real-ip'];
    if (typeof real === 'string' && isIP(real.trim()) !== 0) return real.trim();
    const fwd = headers['x-forwarded-for'];
    if (typeof fwd === 'string') {
      const first = fwd.split(',', 1)[0]?.trim() ?? '';
      if (isIP(first) !== 0) return first;
    }
  }
  return socketAddress;
}
