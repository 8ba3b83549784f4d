/**
 * GraphQL subscriptions of a proxyOnly API (and of the execution engine, to the GraphQL data
 * source that serves them): a WebSocket upgrade (`graphql-transport-ws`, or any
 * subprotocol the upstream speaks) that passed the chain (authentication, limits) is relayed to
 * the upstream: the request head goes out with the upstream's path and host, then bytes flow both
 * ways untouched until either side closes. Messages are not inspected.
 */
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { ClientConnection, RequestContext } from '../pipeline/context.ts';
import type { Target } from '../pipeline/router.ts';
import { upstreamPathOf } from '../upstream/proxy.ts';

/**
 * Relays the upgrade of `ctx`, whose client connection is `conn` (`ctx.clientConnection()`), to
 * `target`; resolves once both connections are closed.
 */
export function relayUpgrade(
  ctx: RequestContext,
  conn: ClientConnection,
  target: Target,
  /** A data source's own path and headers (the execution engine), instead of the API's upstream path. */
  source?: { path: string; headers: Readonly<Record<string, string>> },
): Promise<void> {
  const client = conn.socket;
  const url = new URL(target.origin);
  const tls = url.protocol === 'https:';
  const port = Number(url.port === '' ? (tls ? 443 : 80) : url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const path =
    source?.path ?? upstreamPathOf(target, ctx.route, ctx.path, ctx.query, undefined, ctx.listenPathAdded);
  const own = new Set(Object.keys(source?.headers ?? {}).map((k) => k.toLowerCase()));
  return new Promise<void>((resolve) => {
    const upstream: Socket = tls
      ? connectTls({ host, port, servername: host, ALPNProtocols: ['http/1.1'] })
      : connectTcp({ host, port });
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      client.destroy();
      upstream.destroy();
      resolve();
    };
    upstream.once(tls ? 'secureConnect' : 'connect', () => {
      const lines = [`GET ${path} HTTP/1.1`, `host: ${target.host}`];
      const raw = conn.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i] ?? '';
        // The key's credentials were for the gateway; the upstream gets what the chain left.
        const lower = name.toLowerCase();
        if (lower === 'host' || ctx.headers[lower] === undefined || own.has(lower)) continue;
        lines.push(`${name}: ${raw[i + 1] ?? ''}`);
      }
      for (const [name, value] of Object.entries(source?.headers ?? {})) lines.push(`${name}: ${value}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('error', finish);
    upstream.once('close', finish);
    client.once('error', finish);
    client.once('close', finish);
  });
}
