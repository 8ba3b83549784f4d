/**
 * A request for a stream endpoint, passed to Bento's HTTP server on its loopback port
 * (`/<stream id><path>`), streamed both ways: the request body as it arrives (published
 * messages), the response as Bento writes it (server-sent events, raw bytes, a single message),
 * and WebSocket upgrades as raw bytes once Bento has switched protocols. A client that goes away
 * ends the call to Bento at once, so a consumer that disconnects leaves nothing behind.
 */
import { Agent, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { HttpContext } from '../pipeline/context.ts';

/** Kept-alive connections to Bento for plain requests (streaming ones hold their own). */
const agent = new Agent({ keepAlive: true, maxFreeSockets: 64 });

/** Hop-by-hop headers (RFC 9110 §7.6.1), never relayed. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
]);

function relayable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set((headers.connection ?? '').split(',').map((h) => h.trim().toLowerCase()));
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP.has(k) || named.has(k) || k === 'host') continue;
    out[k] = v;
  }
  return out;
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
  const { req, res } = ctx;
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve();
    };
    const headers = relayable(ctx.headers);
    const upstream = request(
      { host: '127.0.0.1', port, method: ctx.method, path: `${target}${ctx.query}`, headers, agent },
      (up) => {
        opened?.(up.statusCode ?? 0);
        const out: OutgoingHttpHeaders = { ...relayable(up.headers), ...ctx.responseHeaders };
        res.writeHead(up.statusCode ?? 502, out);
        // Server-sent events and raw streams (no length): the head goes out at once, then each
        // chunk as it comes. A plain answer (a publish acknowledged) goes out in one write.
        if (up.headers['content-length'] === undefined) res.flushHeaders();
        up.on('data', (chunk: Buffer) => {
          if (!res.write(chunk)) {
            up.pause();
            res.once('drain', () => up.resume());
          }
        });
        up.on('end', () => {
          res.end();
          finish();
        });
        up.on('error', () => {
          res.destroy();
          finish();
        });
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) {
        opened?.(0);
        const body = JSON.stringify({ error: 'The stream is not available right now' });
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } else res.destroy();
      finish();
    });
    // The client went away: stop the call, so Bento hands its next message to another consumer.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
      finish();
    });
    if (ctx.body !== undefined) upstream.end(ctx.body);
    else req.pipe(upstream);
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
