/**
 * The gateway's sockets: the gateway port, the management port when separate, and one per API
 * `listen_port` (HTTP, or HTTPS with the configured certificate and the APIs' own by SNI). Under node:cluster every worker
 * opens the same ports and the primary shares them.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContext, TLSSocket } from 'node:tls';
import type { Logger } from '../../lib/log.ts';
import type { TlsMaterial } from '../config/load.ts';
import type { ListenerInfo } from '../pipeline/context.ts';
import { errorBody } from '../pipeline/compose.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { ListenerKey } from '../pipeline/router.ts';
import type { FastConnectionHandle, FastPath } from './fast-path/index.ts';

/** What a listener serves. */
export type ListenerRole = 'gateway' | 'control' | 'api';

/** One open listener. */
export interface OpenListener {
  /** `main` (gateway port), `control`, or an API port number. */
  key: ListenerKey | 'control';
  role: ListenerRole;
  /** Whether the management API answers here. */
  admin: boolean;
  info: ListenerInfo;
  /** The bound port (the chosen one when 0 was asked). */
  port: number;
  /** Set once the listener stops accepting: responses then close their connection. */
  closing: boolean;
  server: Server;
  /** Connections the fast path serves now (gateway and API listeners, HTTP and HTTPS). */
  fastConnections: Set<FastConnectionHandle>;
}

/** Handles a request that arrived on a listener. */
export type ListenerHandler = (req: IncomingMessage, res: ServerResponse, listener: OpenListener) => void;

/** Handles an upgrade request (WebSocket) that arrived on a listener. */
export type UpgradeHandler = (
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  listener: OpenListener,
) => void;

/** Opens and closes the listeners of one process. */
export class Listeners {
  readonly #host: string;
  readonly #tls: TlsMaterial | undefined;
  readonly #trustForwarded: boolean;
  readonly #handler: ListenerHandler;
  readonly #upgrade: UpgradeHandler | undefined;
  readonly #log: Logger;
  readonly #fastPath: FastPath | undefined;
  readonly #open = new Map<ListenerKey | 'control', OpenListener>();
  readonly #sni: ((servername: string, port: number) => SecureContext | undefined) | undefined;

  constructor(opts: {
    host: string;
    tls: TlsMaterial | undefined;
    trustForwarded: boolean;
    handler: ListenerHandler;
    /** Upgrade requests (WebSocket streams); without it node:http closes them. */
    upgrade?: UpgradeHandler | undefined;
    log: Logger;
    /** Serves simple requests on the gateway and API listeners, HTTP and HTTPS (config `fast_path`). */
    fastPath?: FastPath | undefined;
    /**
     * The TLS context of an SNI name on a port (per-API certificates); undefined: the gateway's
     * certificate, or, without one, a refused handshake.
     */
    sni?: ((servername: string, port: number) => SecureContext | undefined) | undefined;
  }) {
    this.#sni = opts.sni;
    this.#fastPath = opts.fastPath;
    this.#host = opts.host;
    this.#tls = opts.tls;
    this.#trustForwarded = opts.trustForwarded;
    this.#handler = opts.handler;
    this.#upgrade = opts.upgrade;
    this.#log = opts.log;
  }

  /** The open listener with this key. */
  get(key: ListenerKey | 'control'): OpenListener | undefined {
    return this.#open.get(key);
  }

  /** Every open listener. */
  all(): OpenListener[] {
    return [...this.#open.values()];
  }

  /** Opens a listener; rejects when the port can't be bound. */
  async open(opts: {
    key: ListenerKey | 'control';
    role: ListenerRole;
    port: number;
    protocol: 'http' | 'https';
    admin: boolean;
  }): Promise<OpenListener> {
    const listener: OpenListener = {
      key: opts.key,
      role: opts.role,
      admin: opts.admin,
      info: { protocol: opts.protocol, trustForwarded: this.#trustForwarded },
      port: opts.port,
      closing: false,
      fastConnections: new Set(),
      // Assigned just below; the handler closure needs the object first.
      server: undefined as unknown as Server,
    };
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      this.#handler(req, res, listener);
    };
    const tls = this.#tls;
    const server =
      opts.protocol === 'https'
        ? createHttpsServer(
            {
              // Without the gateway's own certificate, only the APIs' own ones are served (by SNI).
              ...(tls === undefined ? {} : { cert: tls.cert, key: tls.key }),
              // Mutual TLS: ask for a client certificate, require none and trust no CA for it;
              // the middleware decide by fingerprint (middleware/mutual-tls).
              requestCert: true,
              rejectUnauthorized: false,
              SNICallback: (servername, cb) => {
                const ctx = this.#sni?.(servername, listener.port);
                // A name no certificate covers, on a gateway without its own: the handshake is
                // refused: the client gets an alert, the connection is closed.
                if (ctx === undefined && tls === undefined) {
                  cb(new Error(`no certificate for ${JSON.stringify(servername)}`));
                  return;
                }
                cb(null, ctx);
              },
            },
            handler,
          )
        : createHttpServer(handler);
    // Keep client connections open a bit longer than typical load balancers' idle timeouts.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    listener.server = server;
    const upgrade = this.#upgrade;
    if (upgrade !== undefined && opts.role !== 'control') {
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        upgrade(req, socket, head, listener);
      });
    }
    const fast = this.#fastPath;
    if (fast !== undefined && opts.role !== 'control') {
      // The fast path sees each connection first (on HTTPS, once its handshake is done); what it
      // doesn't serve goes to node:http's own listener, with the bytes already read put back on
      // the socket.
      const event = server instanceof HttpsServer ? 'secureConnection' : 'connection';
      const nodeHttp = server.listeners(event) as ((socket: Socket) => void)[];
      server.removeAllListeners(event);
      const handoff = (socket: Socket): void => {
        for (const fn of nodeHttp) fn.call(server, socket);
      };
      server.on(event, (socket: Socket) => {
        fast.serve(socket, listener, handoff);
      });
    }
    if (server instanceof HttpsServer) {
      // No renegotiation: the client certificate a connection presented stays its certificate
      // (RequestContext.peerCertificate reads it once per connection).
      server.prependListener('secureConnection', (socket: TLSSocket) => {
        socket.disableRenegotiation();
      });
    }
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => {
        reject(new Error(`port ${opts.port}: cannot listen: ${err.message}`, { cause: err }));
      };
      server.once('error', onError);
      server.listen({ port: opts.port, host: this.#host }, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => {
      this.#log.error('listener error', { port: listener.port, error: err.message });
    });
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || !socket.writable) {
        socket.destroy();
        return;
      }
      if (err.code === 'HPE_HEADER_OVERFLOW') {
        // Too large is not malformed: 431 says so (RFC 6585), with the gateway's JSON body.
        const e = GatewayError.headersTooLarge();
        const body = Buffer.from(errorBody(e));
        const head =
          `HTTP/1.1 ${String(e.status)} ${e.message}\r\nconnection: close\r\n` +
          `content-type: application/json\r\ncontent-length: ${String(body.length)}\r\n\r\n`;
        socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
        return;
      }
      socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    });
    listener.port = (server.address() as AddressInfo).port;
    this.#open.set(opts.key, listener);
    this.#log.info('listening', {
      role: opts.role,
      port: listener.port,
      protocol: opts.protocol,
      admin: opts.admin,
    });
    return listener;
  }

  /**
   * Stops accepting on a listener and closes idle connections; requests in flight finish and
   * their connections close after them. Resolves when the last connection has closed.
   */
  async close(key: ListenerKey | 'control'): Promise<void> {
    const l = this.#open.get(key);
    if (l === undefined) return;
    this.#open.delete(key);
    this.#log.info('closing listener', { port: l.port });
    l.closing = true;
    await new Promise<void>((resolve) => {
      // Keep-alive connections busy now are closed as soon as their request is done.
      const sweep = setInterval(() => {
        l.server.closeIdleConnections();
        for (const c of l.fastConnections) c.closeIfIdle();
      }, 200);
      l.server.close(() => {
        clearInterval(sweep);
        resolve();
      });
      l.server.closeIdleConnections();
      for (const c of l.fastConnections) c.closeIfIdle();
    });
  }

  /** Closes every listener, cutting connections still open after `timeoutMs`. */
  async closeAll(timeoutMs: number): Promise<void> {
    const all = this.all();
    const timer = setTimeout(() => {
      for (const l of all) {
        l.server.closeAllConnections();
        for (const c of l.fastConnections) c.destroy();
      }
    }, timeoutMs);
    try {
      await Promise.all(all.map((l) => this.close(l.key)));
    } finally {
      clearTimeout(timer);
    }
  }
}
