/**
 * The echo upstream of the conformance tests. By default it answers 200 with what it received
 * as JSON: `{upstream, method, path, query, headers, body}`. Some paths (after any prefix) behave
 * differently, for failure and streaming cases:
 * - `.../status/<code>`: answers with that status;
 * - `.../hang`: never answers (timeouts);
 * - `.../hold`: answers only when the test calls `release()` (in-flight requests);
 * - `.../stream`: sends `first\n`, then `second\n` once released (response streaming);
 * - `.../upload`: reports its first body chunk through `firstChunk`, answers at the end;
 * - `.../hop`: answers with hop-by-hop headers that must not reach the client;
 * - `.../vary`: answers with `Vary: Accept-Encoding, origin`.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { after, before } from 'node:test';
import type { AddressInfo } from 'node:net';

/** What the echo answers by default. */
export interface Echoed {
  upstream: string;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A running echo upstream. */
export interface Echo {
  name: string;
  port: number;
  url: string;
  /** Lets every held `/hold` and `/stream` response finish. */
  release(): void;
  /** Resolves with the first body chunk an `/upload` request delivers. */
  firstChunk: Promise<string>;
  /** How many requests are waiting in `/hold` or `/stream`. */
  held(): number;
  /** How many TCP connections the echo has accepted. */
  connections(): number;
  close(): Promise<void>;
}

/** Starts an echo upstream on 127.0.0.1 (HTTPS when given a certificate). */
export async function startEcho(name: string, tls?: { cert: Buffer; key: Buffer }): Promise<Echo> {
  let waiters: (() => void)[] = [];
  let chunkResolve: (s: string) => void = () => undefined;
  const firstChunk = new Promise<string>((resolve) => {
    chunkResolve = resolve;
  });
  const hang: ServerResponse[] = [];

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? '' : url.slice(q + 1);
    const status = /\/status\/(\d{3})$/.exec(path);
    if (path.endsWith('/hang')) {
      hang.push(res);
      return;
    }
    if (path.endsWith('/stream')) {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': name });
      res.write('first\n');
      waiters.push(() => res.end('second\n'));
      return;
    }
    if (path.endsWith('/upload')) {
      let got = 0;
      req.on('data', (chunk: Buffer) => {
        if (got++ === 0) chunkResolve(chunk.toString());
      });
      req.on('end', () => {
        res.writeHead(200, { 'x-upstream': name }).end(`chunks:${got}`);
      });
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (): void => {
        const body = JSON.stringify({
          upstream: name,
          method: req.method ?? '',
          path,
          query,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        } satisfies Echoed);
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-upstream': name };
        if (path.endsWith('/hop')) {
          headers.connection = 'keep-alive, x-up-drop';
          headers['x-up-drop'] = 'must not reach the client';
          headers['keep-alive'] = 'timeout=5';
          headers['x-up-keep'] = 'reaches the client';
        }
        if (path.endsWith('/vary')) headers.vary = 'Accept-Encoding, origin';
        res.writeHead(status === null ? 200 : Number(status[1]), headers);
        res.end(req.method === 'HEAD' ? undefined : body);
      };
      if (path.endsWith('/hold')) waiters.push(answer);
      else answer();
    });
  };

  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    name,
    port,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    release: () => {
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    firstChunk,
    held: () => waiters.length,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hang) res.destroy();
        for (const f of waiters) f();
        waiters = [];
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}

/**
 * An echo upstream for the whole test file: started in a `before` hook of the file and closed in
 * its `after` hook; the getter gives it to the file's API definitions and tests (once started).
 */
export function useEcho(name = 'echo'): () => Echo {
  let echo: Echo | undefined;
  before(async () => {
    echo = await startEcho(name);
  });
  after(async () => {
    await echo?.close();
  });
  return () => {
    if (echo === undefined) throw new Error(`echo upstream ${name} did not start`);
    return echo;
  };
}
