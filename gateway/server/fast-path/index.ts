/**
 * The connection-level fast path of the gateway port and the API ports, HTTP and HTTPS (never
 * `control_port`; on HTTPS it takes each connection once its handshake is done). It reads
 * request heads straight off the socket and serves the routes `fastPathServes`
 * (routes/compile.ts) admitted when they compiled: http upstreams and no middleware that reads
 * the body. For each request it builds a `RequestContext` from the head, runs the route's
 * compiled chain (the same handlers node:http runs), and, when the chain lets the request
 * through, sends it to the upstream over a pooled raw socket; the response comes back byte for
 * byte (its framing parsed only to find the end). Anything else - another route, the management
 * API, HTTP/1.0, a head this parser finds odd - hands the connection, with every byte read so
 * far, to the listener's node:http server for the rest of its life, so node:http decides (and
 * answers 400 to what it finds malformed). See docs/design/gateway.md.
 *
 * One file per job: head-parser.ts (request heads), connection.ts (a client connection's state
 * machine), exchange.ts (one request: its chain, then the upstream call and the relay of its
 * response), upstream-request.ts (the request head sent upstream), upstream-pool.ts (upstream
 * sockets), upstream-response.ts (the upstream response's head and where its body ends),
 * response-writer.ts (what the gateway writes to the client: its own answers, relayed heads).
 */
import type { Socket } from 'node:net';
import type { Logger } from '../../../lib/log.ts';
import type { RequestObserver } from '../../pipeline/context.ts';
import type { ListenerKey, RouteTable } from '../../pipeline/router.ts';
import { normalizeHost } from '../../pipeline/router.ts';
import { Connection, type ConnectionOwner, type FastListener } from './connection.ts';
import type { Matched } from './exchange.ts';
import type { ParsedHead } from './head-parser.ts';
import { UpstreamPool } from './upstream-pool.ts';

export { fastPathStats, type FastConnectionHandle, type FastListener } from './connection.ts';

/** What the fast path needs from the gateway. */
export interface FastPathOptions {
  /** The route table serving now (read once per request head). */
  table: () => RouteTable;
  /** Whether the management API owns `path` on a listener that serves it. */
  adminOwns: (path: string) => boolean;
  connectTimeoutMs: number;
  timeoutMs: number;
  log: Logger;
  /** Sees every request served here, as node:http's requests (server/gateway.ts). */
  observer?: RequestObserver | undefined;
}

/** The fast path of one gateway process. */
export class FastPath implements ConnectionOwner {
  readonly opts: FastPathOptions;
  readonly pool: UpstreamPool;

  constructor(opts: FastPathOptions) {
    this.opts = opts;
    this.pool = new UpstreamPool({ connectMs: opts.connectTimeoutMs, responseMs: opts.timeoutMs });
  }

  /** Serves a new connection of `listener`; `handoff` gives it to the listener's node:http server. */
  serve(socket: Socket, listener: FastListener, handoff: (socket: Socket) => void): void {
    new Connection(this, socket, listener, handoff);
  }

  /** Frees the upstream pool. */
  close(): void {
    this.pool.close();
  }

  /** The route for a parsed head when the fast path serves it, or undefined. */
  routeFor(listener: FastListener, head: ParsedHead): Matched | undefined {
    if (listener.admin && this.opts.adminOwns(head.path)) return undefined;
    const key: ListenerKey = listener.key === 'control' ? 'main' : listener.key;
    const table = this.opts.table();
    const route = table.match(key, normalizeHost(head.host), head.path);
    // The one rule, decided when the route compiled (routes/compile.ts fastPathServes); it
    // implies an http target.
    if (route?.fastPath !== true || route.target === undefined) return undefined;
    // A path whose body a middleware reads (the OAuth token endpoint): the exchange's context
    // takes `head.path` as its path, so this is the very path the middleware compares.
    if (route.bodyPaths?.has(head.path) === true) return undefined;
    return { route, target: route.target, table };
  }
}
