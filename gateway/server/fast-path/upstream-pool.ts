/**
 * The fast path's upstream sockets: raw `net` connections to http upstreams, kept alive per
 * origin. Each connection attaches its listeners and its timeout once for its life and hands
 * what happens on it to the exchange using it (exchange.ts), or drops itself while idle.
 */
import { connect, type Socket } from 'node:net';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Target } from '../../pipeline/router.ts';

/** Idle upstream connections are closed after this (undici's keepAliveTimeout in dispatchers.ts). */
const UPSTREAM_IDLE_MS = 4_000;
const MAX_IDLE_PER_ORIGIN = 1_024;

/** Where an upstream listens: its pool key, host and port. */
export interface Origin {
  key: string;
  host: string;
  port: number;
}

const origins = new WeakMap<Target, Origin>();

/** The origin of an http target, worked out once per target. */
export function originOf(target: Target): Origin {
  let o = origins.get(target);
  if (o === undefined) {
    const u = new URL(target.origin);
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    o = { key: `${host}:${u.port || '80'}`, host, port: Number(u.port || '80') };
    origins.set(target, o);
  }
  return o;
}

/** The request using a connection (exchange.ts): what happens on the socket goes to it. */
export interface UpstreamExchange {
  readonly ctx: Pick<RequestContext, 'upstream'>;
  /** Response bytes. */
  upData(chunk: Buffer): void;
  /** The upstream ended or closed the connection. */
  upClosed(): void;
  /** A socket error or a timeout (`code` UND_ERR_CONNECT_TIMEOUT or UND_ERR_HEADERS_TIMEOUT). */
  upFailed(err: unknown): void;
}

/**
 * One upstream connection. Its listeners are attached once and dispatch to the exchange using
 * it, or drop it when it is idle in the pool; its timeout is set once (connect, then response).
 */
export class UpstreamConn {
  readonly socket: Socket;
  readonly origin: Origin;
  readonly pool: UpstreamPool;
  exchange: UpstreamExchange | undefined;
  connected = false;
  idleSince = 0;
  /** Its idle timeout is off (a service call of the gateway's own, `ServiceCall`). */
  untimed = false;

  constructor(pool: UpstreamPool, origin: Origin, timeouts: { connectMs: number; responseMs: number }) {
    this.pool = pool;
    this.origin = origin;
    const s = connect({ host: origin.host, port: origin.port });
    this.socket = s;
    s.setNoDelay(true);
    s.setTimeout(timeouts.connectMs);
    s.once('connect', () => {
      this.connected = true;
      this.untimed = this.exchange?.ctx.upstream.service !== undefined;
      s.setTimeout(this.untimed ? 0 : timeouts.responseMs);
    });
    s.on('data', (chunk: Buffer) => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upData(chunk);
    });
    const closed = (): void => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upClosed();
    };
    s.on('end', closed);
    s.on('close', closed);
    s.on('error', (err: Error) => {
      if (this.exchange === undefined) this.drop();
      else this.exchange.upFailed(err);
    });
    s.on('timeout', () => {
      if (this.exchange === undefined) {
        this.drop();
        return;
      }
      const err = new Error('upstream timeout') as Error & { code: string };
      err.code = this.connected ? 'UND_ERR_HEADERS_TIMEOUT' : 'UND_ERR_CONNECT_TIMEOUT';
      this.exchange.upFailed(err);
    });
  }

  drop(): void {
    this.pool.remove(this);
    this.socket.destroy();
  }
}

/** Keep-alive connections to http upstreams, per origin. */
export class UpstreamPool {
  readonly #idle = new Map<string, UpstreamConn[]>();
  readonly #timeouts: { connectMs: number; responseMs: number };
  #closed = false;

  constructor(timeouts: { connectMs: number; responseMs: number }) {
    this.#timeouts = timeouts;
  }

  /** An idle connection to `o` (reused: true), or a new one. */
  get(o: Origin, fresh: boolean): { conn: UpstreamConn; reused: boolean } {
    const list = fresh ? undefined : this.#idle.get(o.key);
    const now = Date.now();
    while (list !== undefined && list.length > 0) {
      const c = list.pop();
      if (c === undefined) break;
      if (c.socket.destroyed || !c.socket.writable || now - c.idleSince > UPSTREAM_IDLE_MS) {
        c.socket.destroy();
        continue;
      }
      return { conn: c, reused: true };
    }
    return { conn: new UpstreamConn(this, o, this.#timeouts), reused: false };
  }

  give(c: UpstreamConn): void {
    c.exchange = undefined;
    let list = this.#idle.get(c.origin.key);
    if (list === undefined) {
      list = [];
      this.#idle.set(c.origin.key, list);
    }
    if (this.#closed || list.length >= MAX_IDLE_PER_ORIGIN) {
      c.socket.destroy();
      return;
    }
    c.socket.resume();
    if (c.untimed) {
      c.untimed = false;
      c.socket.setTimeout(this.#timeouts.responseMs);
    }
    c.idleSince = Date.now();
    list.push(c);
  }

  remove(c: UpstreamConn): void {
    const list = this.#idle.get(c.origin.key);
    const i = list?.indexOf(c) ?? -1;
    if (i !== -1) list?.splice(i, 1);
  }

  close(): void {
    this.#closed = true;
    for (const list of this.#idle.values()) for (const c of list) c.socket.destroy();
    this.#idle.clear();
  }
}
