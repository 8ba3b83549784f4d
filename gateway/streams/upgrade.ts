/**
 * WebSocket upgrades (`ws_path` of stream endpoints) enter the gateway like any request: the
 * listener's `upgrade` event is turned into a request with a response bound to the connection,
 * so the route's whole chain (authentication, limits) runs and a refusal is an ordinary HTTP
 * answer. The streams middleware then takes the connection over; anything else answers on it
 * and closes it.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** Serves an upgrade request through `handle`, the listener's request handler. */
export function serveUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  if (head.length > 0) socket.unshift(head);
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  // node:http hands upgrades a net.Socket typed as Duplex: it is the connection's own socket.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
  res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
  res.once('finish', () => {
    socket.end();
  });
  handle(req, res);
}
