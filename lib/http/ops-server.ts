import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A health check: true is healthy. */
export type Check = () => boolean;

/**
 * The operational endpoints of a process: `/healthz` (alive), `/readyz` (ready to serve) and
 * Prometheus `/metrics`. Plain HTTP on its own port, as probes and scrapers expect.
 */
export async function startOpsServer(opts: {
  host: string;
  port: number;
  healthz: Check;
  readyz: Check;
  registry: Registry;
}): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const probe = (ok: boolean): void => {
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(ok ? 'ok' : 'not ready');
    };
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (path === '/healthz') {
      probe(opts.healthz());
    } else if (path === '/readyz') {
      probe(opts.readyz());
    } else if (path === '/metrics') {
      opts.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': opts.registry.contentType });
          res.end(text);
        },
        () => res.writeHead(500).end(),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
