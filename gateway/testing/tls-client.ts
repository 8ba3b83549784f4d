/**
 * An HTTPS request for tests that look at the TLS layer: a fresh connection to 127.0.0.1 that
 * presents a client certificate when given, sends SNI and Host, and says which certificate the
 * server presented (and what it answered); it gives up after 5 s.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'node:https';
import { TLSSocket } from 'node:tls';

/** What {@link tlsGet} got. */
export interface TlsRes {
  status: number;
  /** The body as JSON (`error` of a refusal, `upstream` of an echo), when it is JSON. */
  json: { error?: string; upstream?: string } | undefined;
  /** SHA-256 hex of the certificate the server presented. */
  serverFingerprint: string;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A fresh HTTPS connection to the port, presenting `client` when given. */
export function tlsGet(
  port: number,
  path: string,
  opts: {
    client?: { cert: string; key: string };
    servername?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<TlsRes> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        rejectUnauthorized: false,
        servername: opts.servername ?? 'localhost',
        headers: { host: opts.servername ?? 'localhost', ...opts.headers },
        ...(opts.client === undefined ? {} : { cert: opts.client.cert, key: opts.client.key }),
      },
      (res) => {
        const socket = res.socket;
        const peer = socket instanceof TLSSocket ? socket.getPeerX509Certificate() : undefined;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: TlsRes['json'];
          try {
            json = JSON.parse(text) as TlsRes['json'];
          } catch {
            json = undefined;
          }
          resolve({
            status: res.statusCode ?? 0,
            json,
            serverFingerprint: peer?.fingerprint256.replaceAll(':', '').toLowerCase() ?? '',
            headers: res.headers,
            text,
          });
        });
      },
    );
    req.on('error', reject);
    // A port that accepts and never answers fails the call instead of hanging a wait on it.
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.end();
  });
}
