/**
 * A request for a stream endpoint, passed to Bento's HTTP server on its loopback port
 * (`/<stream id><path>`), streamed both ways: the request body as it arrives (published
 * messages), the response as Bento writes it (server-sent events, raw bytes, a single message),
 * and WebSocket upgrades as raw bytes once Bento has switched protocols. A client that goes away
 * ends the call to Bento at once, so a consumer that disconnects leaves nothing behind.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import type { HttpContext } from '../pipeline/context.ts';
import { HOP_BY_HOP } from '../upstream/headers.ts';
import { ClientRelay } from '../upstream/relay.ts';

/**
 * Kept-alive connections to Bento for plain requests (streaming ones hold theirs while they
 * last). undici rather than node:http's client: a publish is one small request and its answer,
 * and the node:http client's per-request machinery (ClientRequest, agent queues, an
 * IncomingMessage stream, a pipe of the request body) cost the gateway more CPU than the rest of
 * the request together. No timeouts: event streams last as long as their consumer, and Bento
 * answers publishes within the input's own `timeout`.
 */
export const bentoAgent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

function relayable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const connection = headers.connection;
  const named =
    connection === undefined ? undefined : new Set(connection.split(',').map((h) => h.trim().toLowerCase()));
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    // `expect`: node:http answered 100-continue already (and undici refuses to send it).
    if (v === undefined || HOP_BY_HOP.has(k) || named?.has(k) === true || k === 'host' || k === 'expect')
      continue;
    out[k] = v;
  }
  return out;
}

/**
 * Relays Bento's answer to the client: the head at once, then each chunk as it comes (server-sent
 * events, raw streams), with backpressure.
 */
class BentoRelay extends ClientRelay implements Dispatcher.DispatchHandler {
  readonly #opened: ((status: number) => void) | undefined;

  constructor(ctx: HttpContext, opened: ((status: number) => void) | undefined, done: () => void) {
    super(ctx, done);
    this.#opened = opened;
    // The client went away: stop the call, so Bento hands its next message to another consumer.
    ctx.res.once('close', () => {
      const cut = !ctx.res.writableFinished && !this.finished;
      this.finish(); // first: the abort's error is no failure of Bento's to answer or count
      if (cut) this.controller?.abort(new Error('client closed the connection'));
    });
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // informational: the final response follows
    const { res } = this.ctx;
    this.#opened?.(statusCode);
    res.writeHead(statusCode, { ...relayable(headers), ...this.ctx.responseHeaders });
    // Server-sent events and raw streams (no length): the head goes out at once, then each
    // chunk as it comes. A plain answer (a publish acknowledged) goes out in one write.
    if (headers['content-length'] === undefined) res.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const { res } = this.ctx;
    if (!res.write(chunk)) {
      controller.pause();
      res.once('drain', () => {
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.ctx.res.end();
    this.finish();
  }

  onResponseError(): void {
    this.fail();
  }

  /** Bento could not be reached (503), or the exchange broke once begun (the client's connection cut). */
  fail(): void {
    const { res } = this.ctx;
    if (this.finished) return;
    if (!res.headersSent) {
      this.#opened?.(0);
      const body = JSON.stringify({ error: 'The stream is not available right now' });
      res.writeHead(503, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'retry-after': '1',
      });
      res.end(body);
    } else res.destroy();
    this.finish();
  }
}

/**
 * Proxies an HTTP request to Bento; resolves when the exchange is over (either side ended it).
 * `opened` hears Bento's status once it answers (0: Bento could not be reached).
 */
export function proxyToBento(
  ctx: HttpContext,
  port: number,
  target: string,
  opened?: (status: number) => void,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const relay = new BentoRelay(ctx, opened, resolve);
    const headers = relayable(ctx.headers);
    const send = (body: Readable | Buffer | null): void => {
      if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length);
      try {
        bentoAgent.dispatch(
          {
            origin: `http://127.0.0.1:${port}`,
            method: ctx.method,
            path: `${target}${ctx.query}`,
            headers,
            body,
          },
          relay,
        );
      } catch {
        relay.fail();
      }
    };
    const length = ctx.headers['content-length'];
    if (ctx.upstream.body !== undefined) send(ctx.upstream.body);
    else if (length === undefined && ctx.headers['transfer-encoding'] === undefined) send(null);
    else if (ctx.headers['transfer-encoding'] === undefined && Number(length) <= WHOLE_BODY)
      readWhole(ctx.req, send);
    else send(ctx.req);
  });
}

/**
 * Bodies up to this size (with a Content-Length) are read whole before the call, then sent with
 * the head in one write: Bento takes a published message whole anyway, and streaming a small
 * body costs more (a pipe, a write of its own) than the message. Larger ones stream.
 */
const WHOLE_BODY = 64 * 1024;

/** Reads a request's body whole (a client that goes away first: the response's close ends the call). */
function readWhole(req: IncomingMessage, done: (body: Buffer) => void): void {
  if (req.readableEnded) {
    done(Buffer.alloc(0));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('end', () => {
    done(chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks));
  });
}

/**
 * Passes a WebSocket upgrade to Bento: the request head goes to Bento as it came (path
 * rewritten), then bytes flow both ways untouched until either side closes.
 */
export function upgradeToBento(
  ctx: HttpContext,
  port: number,
  target: string,
  opened?: (status: number) => void,
): Promise<void> {
  const client = ctx.req.socket;
  return new Promise<void>((resolve) => {
    const bento: Socket = connect({ host: '127.0.0.1', port });
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      client.destroy();
      bento.destroy();
      resolve();
    };
    bento.once('data', (first: Buffer) => {
      // `HTTP/1.1 101 Switching Protocols`: the status of Bento's answer.
      opened?.(Number(/^HTTP\/1\.[01] (\d{3})/.exec(first.subarray(0, 16).toString('latin1'))?.[1] ?? 0));
    });
    bento.once('connect', () => {
      const lines = [`${ctx.method} ${target}${ctx.query} HTTP/1.1`, `host: 127.0.0.1:${port}`];
      const raw = ctx.req.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i] ?? '';
        if (name.toLowerCase() === 'host') continue;
        lines.push(`${name}: ${raw[i + 1] ?? ''}`);
      }
      bento.write(`${lines.join('\r\n')}\r\n\r\n`);
      bento.pipe(client);
      client.pipe(bento);
    });
    bento.once('error', () => {
      if (bento.bytesRead === 0) opened?.(0);
      finish();
    });
    bento.once('close', finish);
    client.once('error', finish);
    client.once('close', finish);
  });
}

/**
 * The node:http entrance's call of a stream endpoint the streams middleware planned
 * (`ctx.upstream.service`, with Bento's loopback address as its target and the stream's path):
 * a WebSocket upgrade is relayed as raw bytes, any other request proxied; resolves when the
 * exchange is over.
 */
export function callBento(ctx: HttpContext): Promise<void> {
  const { target, path, service } = ctx.upstream;
  const port = Number(target?.host.slice(target.host.lastIndexOf(':') + 1) ?? 0);
  const opened = service?.opened;
  const ws = (ctx.headers.upgrade ?? '').toLowerCase() === 'websocket';
  return ws ? upgradeToBento(ctx, port, path ?? '/', opened) : proxyToBento(ctx, port, path ?? '/', opened);
}
