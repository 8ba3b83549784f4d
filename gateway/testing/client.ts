/**
 * A plain HTTP(S) client for tests: any Host header, any method, raw bodies, and the response as
 * text plus parsed JSON when it is JSON.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** The `Authorization` value of HTTP basic authentication for `user` and `password`. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** One request of a test. */
export interface Req {
  port: number;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** A body sent with `Transfer-Encoding: chunked`, piece by piece (instead of `body`). */
  chunks?: readonly string[];
  /** HTTPS, accepting self-signed certificates. */
  tls?: boolean;
  /** A fresh connection (no keep-alive pool), so cluster workers take turns. */
  fresh?: boolean;
}

/** What came back. */
export interface Res {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: unknown;
}

/** Sends a request to 127.0.0.1 and reads the whole response. */
export function send(r: Req): Promise<Res> {
  const fn = r.tls === true ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = fn(
      {
        host: '127.0.0.1',
        port: r.port,
        method: r.method ?? 'GET',
        path: r.path ?? '/',
        headers: r.headers,
        ...(r.tls === true ? { rejectUnauthorized: false } : {}),
        ...(r.fresh === true ? { agent: false } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    const { chunks } = r;
    if (chunks === undefined) {
      req.on('error', reject);
      req.end(r.body);
      return;
    }
    // The gateway may answer (413) and close before the last piece is written.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    req.flushHeaders();
    let i = 0;
    const next = (): void => {
      const piece = chunks[i++];
      if (piece === undefined) {
        req.end();
        return;
      }
      req.write(piece, () => setImmediate(next));
    };
    next();
  });
}
