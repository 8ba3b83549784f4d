/**
 * The upstream call, the last step of every chain. Bodies stream both ways with backpressure
 * (nothing is buffered whole): the client request is the upstream body, and upstream chunks are
 * written to the client as they come. Failures before the response starts become 502 or 504 with
 * a JSON body; after it started, the client connection is cut.
 */
import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { errorMessage } from '../../lib/errors.ts';
import { respondError, withoutBody } from '../pipeline/compose.ts';
import type { Terminal } from '../pipeline/middleware.ts';
import { MAX_READ_BODY, type BufferedResponse, type HttpContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { Target } from '../pipeline/router.ts';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import { ClientRelay } from './relay.ts';

/**
 * Upstream path and query for a request path: the target's path, then the (stripped) path. With
 * `keepSlash` (`proxy.disable_strip_slash`), a request with nothing left after the listen path (or
 * only `/`) gets the target's path exactly as written, its trailing slash included. A request
 * handed over by an internal target (`added`: `RequestContext.listenPathAdded`) sends its path
 * without the listen path the hand-over put before it, whether the API strips it or not.
 */
export function upstreamPathOf(
  target: Pick<Target, 'basePath' | 'baseQuery' | 'trailingSlash'>,
  route: { listenPath: string; strip: boolean; keepSlash?: boolean | undefined },
  path: string,
  query: string,
  /** The path a middleware set instead (`RequestContext.upstream.path`): no strip applies. */
  changed?: string,
  /** The listen path at the start of `path` was added by an internal hand-over, not a client. */
  added = false,
): string {
  const rest = changed ?? (route.strip || added ? path.slice(route.listenPath.length) : path);
  let p =
    route.keepSlash === true && (rest === '' || rest === '/')
      ? target.trailingSlash === true
        ? `${target.basePath}/`
        : target.basePath
      : target.basePath + rest;
  if (p === '') p = '/';
  else if (p.charCodeAt(0) !== 47) p = `/${p}`;
  if (target.baseQuery === '') return p + query;
  return `${p}?${target.baseQuery}${query === '' ? '' : `&${query.slice(1)}`}`;
}

/** Error codes of timeouts; every other failure is "unreachable". */
const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The error a failed upstream call answers with. */
export function upstreamFailure(err: unknown): GatewayError {
  // A refusal raised while the body streamed (a size limit): answered as it is.
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'GW_UPSTREAM_PIN_MISMATCH') return GatewayError.upstreamPinMismatch();
  return typeof code === 'string' && TIMEOUTS.has(code)
    ? GatewayError.upstreamTimeout()
    : GatewayError.upstreamUnreachable();
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  const len = headers['content-length'];
  if (len !== undefined) return len !== '0';
  return headers['transfer-encoding'] !== undefined;
}

/**
 * `req` counted as it streams: past `limit` bytes the stream fails with 413 (the upstream call is
 * aborted and the client answered, unless the response has begun).
 */
function limitedBody(req: Readable, limit: number): Readable {
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > limit) done(GatewayError.bodyTooLarge());
      else done(null, chunk);
    },
  });
  req.on('error', (err) => counted.destroy(err));
  return req.pipe(counted);
}

/** A response buffered for a body transform or a response hook, as it came. */
interface BufferedUpstream {
  status: number;
  message: string | undefined;
  headers: IncomingHttpHeaders;
  chunks: Buffer[];
  size: number;
}

/** A body in `encoding` decoded; undefined for an encoding it does not know (sent unchanged). */
function decode(body: Buffer, encoding: string | string[] | undefined): Buffer | undefined {
  const e = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? '')).trim().toLowerCase();
  if (e === '' || e === 'identity') return body;
  if (e === 'gzip' || e === 'x-gzip') return gunzipSync(body);
  if (e === 'deflate') return inflateSync(body);
  if (e === 'br') return brotliDecompressSync(body);
  return undefined;
}

/** Whether a response of `status` to this request carries a body a transform may rewrite. */
function hasResponseBody(ctx: HttpContext, status: number): boolean {
  return !withoutBody(status) && ctx.method.toUpperCase() !== 'HEAD';
}

/** `headers` for a body of `body`'s length, sent whole (no chunked framing). */
function withBodyLength(headers: IncomingHttpHeaders, body: Buffer): IncomingHttpHeaders {
  const out = { ...headers };
  delete out['transfer-encoding'];
  out['content-length'] = String(body.length);
  return out;
}

/** Relays one upstream response to the client. */
class Relay extends ClientRelay implements Dispatcher.DispatchHandler {
  readonly #onFailure: (() => void) | undefined;

  constructor(ctx: HttpContext, done: () => void, onFailure?: () => void) {
    super(ctx, done);
    this.#onFailure = onFailure;
    ctx.res.on('close', () => {
      // The client went away before the response ended: stop the upstream call.
      if (!this.finished) this.controller?.abort(new Error('client closed the connection'));
    });
  }

  override onRequestStart(controller: Dispatcher.DispatchController): void {
    super.onRequestStart(controller);
    if (!this.ctx.res.destroyed && this.#timedOut !== undefined) controller.abort(this.#timedOut);
  }

  #timedOut: Error | undefined;
  #started = false;

  /** The request's hard timeout passed (`ctx.upstream.timeoutMs`): 504 unless the response began. */
  hardTimeout(): void {
    if (this.#started || this.finished) return;
    const err = Object.assign(new Error('upstream hard timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    this.#timedOut = err;
    this.controller?.abort(err);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    if (statusCode < 200) return; // informational: the final response follows
    this.#started = true;
    this.ctx.upstreamStatus = statusCode;
    this.ctx.state.upstreamRespondedAt = performance.now();
    if (
      this.ctx.upstream.responseHook !== undefined ||
      (this.ctx.upstream.transformResponse !== undefined && hasResponseBody(this.ctx, statusCode))
    ) {
      // A response body transform or a response hook: the response is buffered, then written
      // at its end.
      this.#buffered = { status: statusCode, message: statusMessage, headers, chunks: [], size: 0 };
      return;
    }
    this.ctx.upstream.tap?.start(statusCode, headers, false);
    const out = clientResponseHeaders(
      headers,
      this.ctx.responseHeaders,
      this.ctx.upstream.removedResponseHeaders,
      this.ctx.upstream.appendedResponseHeaders,
    );
    if (statusMessage !== undefined && statusMessage !== '')
      this.ctx.res.writeHead(statusCode, statusMessage, out);
    else this.ctx.res.writeHead(statusCode, out);
  }

  /** The response being buffered for `ctx.upstream.transformResponse` or `responseHook`. */
  #buffered: BufferedUpstream | undefined;

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const b = this.#buffered;
    if (b !== undefined) {
      b.size += chunk.length;
      if (b.size > MAX_READ_BODY) {
        this.#buffered = undefined;
        const err = new GatewayError(
          'GW_RESPONSE_TOO_LARGE',
          502,
          'Upstream response too large to transform',
        );
        this.fail(err);
        controller.abort(err);
        return;
      }
      b.chunks.push(chunk);
      return;
    }
    const { res } = this.ctx;
    this.ctx.upstream.tap?.data(chunk);
    if (!res.write(chunk)) {
      controller.pause();
      res.once('drain', () => {
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    const b = this.#buffered;
    if (b !== undefined) {
      if (this.ctx.upstream.responseHook === undefined) {
        this.#endTransformed(b);
        this.finish();
        return;
      }
      this.#endHooked(b).then(
        () => {
          this.finish();
        },
        (err: unknown) => {
          this.fail(err);
        },
      );
      return;
    }
    this.ctx.upstream.tap?.end();
    this.ctx.res.end();
    this.finish();
  }

  /** A buffered response, its body rewritten by `ctx.upstream.transformResponse` when it can be. */
  #transformed(b: BufferedUpstream): BufferedResponse {
    const ctx = this.ctx;
    const body: Buffer = Buffer.concat(b.chunks);
    const headers = { ...b.headers };
    if (ctx.upstream.transformResponse === undefined || !hasResponseBody(ctx, b.status)) {
      return { status: b.status, headers, body };
    }
    let changed: Buffer | undefined;
    try {
      const decoded = decode(body, headers['content-encoding']);
      changed = decoded === undefined ? undefined : ctx.upstream.transformResponse(decoded);
    } catch (err) {
      ctx.log.warn('response body transform failed', { error: errorMessage(err) });
    }
    if (changed === undefined) return { status: b.status, headers, body };
    delete headers['content-encoding'];
    return { status: b.status, headers: withBodyLength(headers, changed), body: changed };
  }

  /** Writes a buffered response, its body rewritten by `ctx.upstream.transformResponse` when it can be. */
  #endTransformed(b: BufferedUpstream): void {
    this.#write(this.#transformed(b), b.message);
  }

  /**
   * Writes a buffered response after `ctx.upstream.responseHook` (after the body transform): the
   * hook sees the body decoded; when it gives back the same bytes, the response keeps its
   * encoding, else it goes out decoded.
   */
  async #endHooked(b: BufferedUpstream): Promise<void> {
    const ctx = this.ctx;
    const hook = ctx.upstream.responseHook;
    const res = this.#transformed(b);
    const decoded = decode(res.body, res.headers['content-encoding']);
    const encoded = decoded !== undefined && decoded !== res.body ? res.body : undefined;
    const seen: BufferedResponse =
      encoded === undefined ? res : { ...res, body: decoded ?? res.body, headers: { ...res.headers } };
    if (encoded !== undefined) delete seen.headers['content-encoding'];
    const out = hook === undefined ? seen : await hook(seen);
    if (ctx.res.destroyed) return;
    if (out instanceof GatewayError) {
      respondError(ctx, out);
      return;
    }
    const message = out.status === b.status ? b.message : undefined;
    if (!hasResponseBody(ctx, out.status)) {
      // No body goes out (HEAD, 204, 304): the headers say what a body would have been.
      this.#write({ ...out, body: Buffer.alloc(0) }, message);
      return;
    }
    if (
      encoded !== undefined &&
      out.body.equals(seen.body) &&
      out.headers['content-encoding'] === undefined
    ) {
      // The body unchanged: sent as the upstream encoded it.
      const headers = { ...out.headers, 'content-encoding': res.headers['content-encoding'] };
      this.#write({ ...out, headers: withBodyLength(headers, encoded), body: encoded }, message);
      return;
    }
    this.#write({ ...out, headers: withBodyLength(out.headers, out.body) }, message);
  }

  /** Writes a whole response to the client (and the response tap). */
  #write(r: BufferedResponse, message: string | undefined): void {
    const ctx = this.ctx;
    ctx.upstream.tap?.start(r.status, r.headers, false);
    ctx.upstream.tap?.data(r.body);
    ctx.upstream.tap?.end();
    const out = clientResponseHeaders(
      r.headers,
      ctx.responseHeaders,
      ctx.upstream.removedResponseHeaders,
      ctx.upstream.appendedResponseHeaders,
    );
    if (message !== undefined && message !== '') ctx.res.writeHead(r.status, message, out);
    else ctx.res.writeHead(r.status, out);
    ctx.res.end(r.body);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.finished) return; // answered already (a response too large to transform)
    this.fail(err);
  }

  /** Answers 502/504 (or cuts the connection if the response has begun). */
  fail(err: unknown): void {
    const { res } = this.ctx;
    this.#onFailure?.();
    if (!res.destroyed) {
      const failure = upstreamFailure(err);
      this.ctx.log.warn('upstream call failed', {
        status: res.headersSent ? undefined : failure.status,
        code: (err as { code?: unknown }).code,
        error: errorMessage(err),
      });
      respondError(this.ctx, failure);
    }
    this.finish();
  }
}

/** The terminal step of a route with an upstream. */
export function upstreamCall(
  route: {
    target: Target | undefined;
    listenPath: string;
    strip: boolean;
    keepSlash: boolean;
    preserveHost: boolean;
  },
  /** The pool of every upstream, or the pool of each (upstreams with TLS settings of their own). */
  dispatcher: Dispatcher | ((target: Target) => Dispatcher),
  /** Called when the upstream call fails (metrics). */
  onFailure?: () => void,
): Terminal {
  return (ctx) => {
    // A middleware may have chosen another upstream for this request (`override_target`).
    const target = ctx.upstream.target ?? route.target;
    if (target === undefined) {
      respondError(ctx, GatewayError.noUpstream());
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const ms = ctx.upstream.timeoutMs;
      const timer =
        ms === undefined
          ? undefined
          : setTimeout(() => {
              relay.hardTimeout();
            }, ms);
      const relay = new Relay(
        ctx,
        timer === undefined
          ? resolve
          : () => {
              clearTimeout(timer);
              resolve();
            },
        onFailure,
      );
      const headers = upstreamRequestHeaders(ctx, target.host, route.preserveHost);
      let body: Readable | Buffer | null = hasBody(ctx.headers) ? ctx.req : null;
      if (body !== null && ctx.upstream.bodyLimit !== undefined)
        body = limitedBody(ctx.req, ctx.upstream.bodyLimit);
      if (ctx.upstream.body !== undefined) {
        // A middleware read the body: send what it read, with its length.
        body = ctx.upstream.body;
        delete headers['transfer-encoding'];
        headers['content-length'] = String(ctx.upstream.body.length);
      }
      ctx.state.upstreamStartedAt = performance.now();
      try {
        (typeof dispatcher === 'function' ? dispatcher(target) : dispatcher).dispatch(
          {
            origin: target.origin,
            path: upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstream.path, ctx.listenPathAdded),
            method: ctx.upstream.method ?? ctx.method,
            headers,
            body,
          },
          relay,
        );
      } catch (err) {
        relay.fail(err);
      }
    });
  };
}
