/** Loopback ports for processes the gateway starts (Bento) and for tests, benchmarks and the demo. */
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1 (bound and released: bind it right after). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => {
        resolve(port);
      });
    });
  });
}
