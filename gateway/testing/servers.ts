/** Local servers of tests (upstreams, hooks, dashboards): listening on a free port, and closed. */
import type { Server } from 'node:net';

/** Starts `server` listening on a free port of 127.0.0.1; resolves with its URL (`scheme://...`). */
export async function listenLocal(server: Server, scheme: 'http' | 'https' = 'http'): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return `${scheme}://127.0.0.1:${String(typeof addr === 'object' && addr !== null ? addr.port : 0)}`;
}

/** Closes `server`, dropping its open connections first; resolves once it is closed. */
export async function closeServer(server: Server & { closeAllConnections?(): void }): Promise<void> {
  server.closeAllConnections?.();
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}
