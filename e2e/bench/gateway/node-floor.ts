/**
 * The floor of a Node proxy, for the benchmark: node:http in, one undici dispatch out, no
 * routing, no chain, no header rules. The gateway can't be faster than this on the same machine;
 * the difference is what the gateway's own work costs.
 *
 * Usage: node e2e/bench/gateway/node-floor.ts <port> <upstream port> <workers>
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { Agent } from 'undici';

const [port, upstream, workers] = process.argv.slice(2).map(Number);
if (port === undefined || upstream === undefined)
  throw new Error('usage: node-floor.ts <port> <upstream port> <workers>');

if (cluster.isPrimary && (workers ?? 1) > 1) {
  for (let i = 0; i < (workers ?? 1); i++) cluster.fork();
} else {
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  const origin = `http://127.0.0.1:${upstream}`;
  createServer((req, res) => {
    agent.dispatch(
      { origin, path: req.url ?? '/', method: req.method ?? 'GET', headers: req.headers },
      {
        onRequestStart: () => undefined,
        onResponseStart: (_c, status, headers) => {
          res.writeHead(status, headers);
        },
        onResponseData: (_c, chunk) => {
          res.write(chunk);
        },
        onResponseEnd: () => {
          res.end();
        },
        onResponseError: () => {
          res.writeHead(502).end();
        },
      },
    );
  }).listen(port, '127.0.0.1');
}
