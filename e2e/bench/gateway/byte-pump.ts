/**
 * The ceiling of any proxy written in Node, for the benchmark: each client connection is piped
 * to its own upstream connection, byte for byte, with no HTTP parsing at all. A proxy that
 * reads requests (to route, authenticate, limit) can only be slower than this.
 *
 * Usage: node e2e/bench/gateway/byte-pump.ts <port> <upstream port> <workers>
 */
import cluster from 'node:cluster';
import net from 'node:net';

const [port, upstream, workers] = process.argv.slice(2).map(Number);
if (port === undefined || upstream === undefined)
  throw new Error('usage: byte-pump.ts <port> <upstream port> <workers>');

if (cluster.isPrimary && (workers ?? 1) > 1) {
  for (let i = 0; i < (workers ?? 1); i++) cluster.fork();
} else {
  net
    .createServer((client) => {
      const up = net.connect(upstream, '127.0.0.1');
      client.pipe(up);
      up.pipe(client);
      client.on('error', () => up.destroy());
      up.on('error', () => client.destroy());
    })
    .listen(port, '127.0.0.1');
}
