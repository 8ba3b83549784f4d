/**
 * TCP and TLS APIs (`protocol` tcp or tls; the rule of what they accept is schemas/rules/tcp.ts):
 * one plain socket listener per API port, each accepted connection piped byte for byte to the
 * API's `tcp://host:port` upstream, with TLS terminated first for `protocol: tls` (the API's first
 * stored certificate with a private key, else the gateway's own, `tls_cert_file`).
 *
 * Per connection, before a byte goes upstream: the IP allow list, the IP block list (the socket's
 * address: there is no forwarded header to trust), then the API-wide rate limit, counted once per
 * connection in the same counters as an HTTP API's requests (so nodes sharing Redis share it). A
 * refused connection is reset (RST) before any byte is read from it.
 *
 * For tls, the upstream is dialled only once the client's handshake has completed, and a client
 * that has not completed it within `tls_handshake_timeout_ms` (default 10 s) is closed without an
 * upstream connection ever being made (a client that opens TCP and sends nothing costs a socket
 * for that long, never an upstream connection).
 *
 * Ports follow reloads as the HTTP API ports do: `prepare` builds the proxies of the new
 * definitions and opens the ports new APIs need (refusing the reload when one can't be bound),
 * `commit` makes them current in one assignment and stops accepting on ports no API uses any
 * more. A connection keeps the settings it was admitted under; connections of a removed port get
 * `shutdown_timeout_ms` to finish, then are cut.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { parseTcpTarget, type TcpTarget } from '../../schemas/rules/tcp.ts';
import { loadCertMaterial } from '../certs/certs.ts';
import type { TlsMaterial } from '../config/load.ts';
import { counterName, type Counters } from '../limits/counters.ts';
import { UNAVAILABLE, type LimitsGuard } from '../limits/guard.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { compileIpList } from '../middleware/ip-lists/index.ts';
import { socketAddressOf } from '../pipeline/context.ts';
import type { Store } from '../store/store.ts';

/** What the TCP proxies need of the gateway. */
export interface TcpDeps {
  /** Address the ports are bound on (`listen_address`). */
  host: string;
  /** The gateway's own certificate, for tls APIs without certificates of their own. */
  tls: TlsMaterial | undefined;
  store: Store;
  /** The gateway secret: stored private keys are sealed with it. */
  secret: string;
  counters: Counters;
  limits: LimitsGuard;
  log: Logger;
  connectTimeoutMs: number;
  /** How long a tls API's client has to finish its handshake (`tls_handshake_timeout_ms`). */
  handshakeTimeoutMs: number;
  shutdownTimeoutMs: number;
  metrics?: Metrics | undefined;
}

/** One TCP or TLS API, compiled once per reload. */
interface TcpProxy {
  id: string;
  port: number;
  target: TcpTarget;
  allowed: ((ip: string) => boolean) | undefined;
  blocked: ((ip: string) => boolean) | undefined;
  rate: { name: string; limit: number; windowMs: number } | undefined;
  /** Set for tls: the certificate the handshake presents. */
  secureContext: SecureContext | undefined;
}

/** An open API port and the connections it accepted. */
interface OpenPort {
  server: Server;
  connections: Set<Socket>;
}

/** A TCP or TLS API that can't be served, and why (the reload reports it as left out). */
export interface TcpProblem {
  api_id: string;
  message: string;
}

/** The outcome of `prepare`: make it current, or undo what it opened. */
export interface TcpSwap {
  /** APIs left out (a certificate missing, a port another process holds). */
  problems: TcpProblem[];
  /** The new proxies serve from now on; ports no API uses any more stop accepting. */
  commit(): void;
  /** The reload was refused: the ports this preparation opened are closed again. */
  abort(): Promise<void>;
}

/** The TCP and TLS APIs of one gateway process. */
export class TcpProxies {
  readonly #deps: TcpDeps;
  readonly #ports = new Map<number, OpenPort>();
  /** API port -> the proxy serving it now. */
  #current = new Map<number, TcpProxy>();

  constructor(deps: TcpDeps) {
    this.#deps = deps;
  }

  /** The ports open now (for tests). */
  get ports(): number[] {
    return [...this.#ports.keys()];
  }

  /**
   * Builds the proxies of `apis` (checked definitions) and opens the ports new ones need. Ports
   * the HTTP listeners want now (`httpPorts`: an API moved from tcp to http) are given up first;
   * `freeHttp` gives up an HTTP listener on a port a TCP API wants now. An API whose port can't
   * be bound (another process holds it) is left out, named in `problems`.
   */
  async prepare(
    apis: readonly { id: string; api: GatewayApiDefinition }[],
    httpPorts: ReadonlySet<number>,
    freeHttp: (port: number) => Promise<void>,
  ): Promise<TcpSwap> {
    const next = new Map<number, TcpProxy>();
    const problems: TcpProblem[] = [];
    for (const { id, api } of apis) {
      try {
        const proxy = await this.#compile(id, api);
        next.set(proxy.port, proxy);
      } catch (err) {
        problems.push({ api_id: id, message: errorMessage(err) });
      }
    }
    for (const port of httpPorts) if (this.#ports.has(port)) await this.#closePort(port);
    const opened: number[] = [];
    for (const [port, proxy] of [...next]) {
      if (this.#ports.has(port)) continue;
      await freeHttp(port);
      try {
        await this.#open(port);
        opened.push(port);
      } catch (err) {
        // A port another process holds leaves its API out; the other APIs' changes still load.
        next.delete(port);
        problems.push({ api_id: proxy.id, message: `listen_port: ${errorMessage(err)}` });
      }
    }
    return {
      problems,
      commit: () => {
        this.#current = next;
        for (const port of [...this.#ports.keys()]) if (!next.has(port)) void this.#closePort(port);
      },
      abort: async () => {
        await Promise.all(opened.map((p) => this.#closePort(p)));
      },
    };
  }

  /** Closes every port, cutting connections still open after the shutdown timeout. */
  async close(): Promise<void> {
    this.#current = new Map();
    await Promise.all([...this.#ports.keys()].map((p) => this.#closePort(p)));
  }

  async #compile(id: string, api: GatewayApiDefinition): Promise<TcpProxy> {
    const target = parseTcpTarget(api.proxy.target_url ?? '');
    // Checked definitions only: the rule refused anything else at write time.
    if ('message' in target) throw new Error(`proxy.target_url: ${target.message}`);
    const g = api.global_rate_limit;
    const limited = g !== undefined && g.disabled !== true && (g.rate ?? 0) > 0 && (g.per ?? 0) > 0;
    return {
      id,
      port: api.listen_port ?? 0,
      target,
      allowed: api.enable_ip_whitelisting === true ? compileIpList(api.allowed_ips ?? []) : undefined,
      blocked:
        api.enable_ip_blacklisting === true && (api.blacklisted_ips?.length ?? 0) > 0
          ? compileIpList(api.blacklisted_ips ?? [])
          : undefined,
      rate: limited
        ? { name: counterName.api(id), limit: g.rate ?? 0, windowMs: (g.per ?? 0) * 1000 }
        : undefined,
      secureContext: api.protocol === 'tls' ? await this.#secureContext(api) : undefined,
    };
  }

  /** The API's first stored certificate with a private key, else the gateway's. */
  async #secureContext(api: GatewayApiDefinition): Promise<SecureContext> {
    const ids = api.certificates ?? [];
    for (const id of ids) {
      const m = await loadCertMaterial(this.#deps.store, id, this.#deps.secret);
      if (m?.key !== undefined) return createSecureContext({ cert: m.cert, key: m.key });
    }
    if (ids.length > 0)
      throw new Error(
        `certificates: none of ${ids.join(', ')} is stored with a usable private key (/svc/certs): upload one with its key`,
      );
    const own = this.#deps.tls;
    if (own === undefined)
      throw new Error("certificates: a tls API needs its certificates or the gateway's (tls_cert_file)");
    return createSecureContext({ cert: own.cert, key: own.key });
  }

  async #open(port: number): Promise<void> {
    const connections = new Set<Socket>();
    // Paused: no byte is read before the connection is admitted and its upstream chosen.
    const server = createServer({ pauseOnConnect: true, allowHalfOpen: true, noDelay: true }, (socket) => {
      this.#accept(port, socket, connections);
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => {
        reject(new Error(`port ${port}: cannot listen: ${err.message}`, { cause: err }));
      };
      server.once('error', onError);
      server.listen({ port, host: this.#deps.host }, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => {
      this.#deps.log.error('tcp listener error', { port, error: err.message });
    });
    this.#ports.set(port, { server, connections });
    this.#deps.log.info('listening', { role: 'api', port, protocol: 'tcp' });
  }

  async #closePort(port: number): Promise<void> {
    const open = this.#ports.get(port);
    if (open === undefined) return;
    this.#ports.delete(port);
    this.#deps.log.info('closing listener', { port });
    const timer = setTimeout(() => {
      for (const c of open.connections) c.destroy();
    }, this.#deps.shutdownTimeoutMs);
    await new Promise<void>((resolve) => {
      open.server.close(() => {
        resolve();
      });
    });
    clearTimeout(timer);
  }

  #accept(port: number, socket: Socket, connections: Set<Socket>): void {
    const proxy = this.#current.get(port);
    const ip = socketAddressOf(socket);
    if (
      proxy === undefined ||
      (proxy.allowed !== undefined && !proxy.allowed(ip)) ||
      proxy.blocked?.(ip) === true
    ) {
      this.#deps.log.debug('tcp connection refused', { port, client: ip, reason: 'ip' });
      socket.resetAndDestroy();
      return;
    }
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    const rate = proxy.rate;
    if (rate === undefined) {
      this.#pipe(proxy, socket);
      return;
    }
    const { counters, limits } = this.#deps;
    void limits
      .run(() => counters.rate(rate.name, rate.limit, rate.windowMs))
      .then((v) => {
        const refused = v === UNAVAILABLE ? !limits.failOpen : !v.allowed;
        if (!refused) {
          this.#pipe(proxy, socket);
          return;
        }
        if (v !== UNAVAILABLE) this.#deps.metrics?.refused('api_rate_limit');
        this.#deps.log.debug('tcp connection refused', { port, client: ip, reason: 'rate limit' });
        if (!socket.destroyed) socket.resetAndDestroy();
      });
  }

  /** Pipes the client (after its TLS handshake, for tls) to a new upstream connection. */
  #pipe(proxy: TcpProxy, socket: Socket): void {
    if (socket.destroyed) return;
    if (proxy.secureContext === undefined) {
      this.#dial(proxy, socket, socket);
      return;
    }
    const tls = new TLSSocket(socket, { isServer: true, secureContext: proxy.secureContext });
    const timer = setTimeout(() => {
      this.#deps.log.debug('tls handshake timed out', { api_id: proxy.id });
      tls.destroy();
      socket.destroy();
    }, this.#deps.handshakeTimeoutMs);
    const failed = (err: Error): void => {
      clearTimeout(timer);
      this.#deps.log.debug('tls handshake failed', { api_id: proxy.id, error: err.message });
      tls.destroy();
      socket.destroy();
    };
    tls.once('error', failed);
    tls.once('close', () => {
      clearTimeout(timer);
    });
    tls.once('secure', () => {
      clearTimeout(timer);
      tls.off('error', failed);
      this.#dial(proxy, tls, socket);
    });
    socket.resume();
  }

  /** Connects to the upstream and pipes `client` (the socket, or its TLS layer) both ways. */
  #dial(proxy: TcpProxy, client: Socket, socket: Socket): void {
    const upstream = connect({
      host: proxy.target.host,
      port: proxy.target.port,
      allowHalfOpen: true,
      noDelay: true,
    });
    upstream.setTimeout(this.#deps.connectTimeoutMs, () => {
      upstream.destroy(new Error('upstream connect timed out'));
    });
    upstream.once('connect', () => upstream.setTimeout(0));
    const fail = (err: Error): void => {
      this.#deps.log.debug('tcp connection failed', { api_id: proxy.id, error: err.message });
      upstream.destroy();
      client.destroy();
      socket.destroy();
    };
    upstream.on('error', fail);
    client.on('error', fail);
    client.pipe(upstream);
    upstream.pipe(client);
    // The pipes carry each side's end to the other (a client that half-closes still reads the
    // upstream's answer); a side cut off cuts the other.
    upstream.once('close', (hadError) => {
      if (hadError) client.destroy();
    });
    client.once('close', (hadError) => {
      if (hadError) upstream.destroy();
      else upstream.end();
    });
    socket.resume();
  }
}
