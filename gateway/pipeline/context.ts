/**
 * The per-request context every middleware and the upstream call share. It is created once the
 * route is known; whatever costs something (client address, request ID, logger) is computed on
 * first use only.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Logger } from '../../lib/log.ts';
import type { Route } from './router.ts';

/** The listener a request came in on. */
export interface ListenerInfo {
  /** `http` or `https`: the scheme clients used, for `X-Forwarded-Proto`. */
  protocol: 'http' | 'https';
  /** Whether to trust `X-Forwarded-*` and `X-Real-IP` from clients. */
  trustForwarded: boolean;
}

/** One request on its way through the chain. */
export class RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly route: Route;
  readonly listener: ListenerInfo;
  /** Request path, dot segments removed, without the query. */
  readonly path: string;
  /** Query string with its `?`, or empty. */
  readonly query: string;
  /** Headers added to the client response (for example rate-limit headers). */
  readonly responseHeaders: Record<string, string> = {};
  /** The session of the authenticated key; set by authentication middleware. */
  session: unknown = undefined;
  readonly #log: Logger;
  #clientIp: string | undefined;
  #requestId: string | undefined;
  #childLog: Logger | undefined;

  constructor(opts: {
    req: IncomingMessage;
    res: ServerResponse;
    route: Route;
    listener: ListenerInfo;
    path: string;
    query: string;
    log: Logger;
  }) {
    this.req = opts.req;
    this.res = opts.res;
    this.route = opts.route;
    this.listener = opts.listener;
    this.path = opts.path;
    this.query = opts.query;
    this.#log = opts.log;
  }

  /**
   * The client address for IP lists and `X-Forwarded-For`: a valid `X-Real-IP`, else the first
   * `X-Forwarded-For` entry (both only when trusted), else the socket address.
   */
  get clientIp(): string {
    this.#clientIp ??= clientAddress(this.req, this.listener.trustForwarded);
    return this.#clientIp;
  }

  /** The client's `X-Request-Id`, or a new one. */
  get requestId(): string {
    if (this.#requestId === undefined) {
      const given = this.req.headers['x-request-id'];
      this.#requestId =
        typeof given === 'string' && given !== '' && given.length <= 200 ? given : randomUUID();
    }
    return this.#requestId;
  }

  /** A logger naming the API and the request. */
  get log(): Logger {
    this.#childLog ??= this.#log.child({ api_id: this.route.id, request_id: this.requestId });
    return this.#childLog;
  }
}

/** The socket address without the IPv4-mapped prefix. */
export function socketAddress(req: IncomingMessage): string {
  const addr = req.socket.remoteAddress ?? '';
  return addr.startsWith('::ffff:') && isIP(addr.slice(7)) === 4 ? addr.slice(7) : addr;
}

/** See RequestContext.clientIp. */
export function clientAddress(req: IncomingMessage, trustForwarded: boolean): string {
  if (trustForwarded) {
    const real = req.headers['x-real-ip'];
    if (typeof real === 'string' && isIP(real.trim()) !== 0) return real.trim();
    const fwd = req.headers['x-forwarded-for'];
    if (typeof fwd === 'string') {
      const first = fwd.split(',', 1)[0]?.trim() ?? '';
      if (isIP(first) !== 0) return first;
    }
  }
  return socketAddress(req);
}
