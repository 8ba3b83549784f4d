/**
 * GraphQL subscriptions of a proxyOnly or subgraph API (and of the execution engine, to the
 * GraphQL data source that serves them): a WebSocket upgrade that passed the chain
 * (authentication, limits) is relayed to the upstream message by message, each operation the
 * client sends checked as an HTTP request is (`check`: checks.ts's `checkOperation`) before it is
 * passed on. The gateway opens a WebSocket to the upstream with the client's headers (those the
 * chain left) and the subprotocols it can read that the client offered, `graphql-transport-ws`
 * (the `graphql-ws` library) and the legacy `graphql-ws` (subscriptions-transport-ws); once the
 * upstream accepts, it accepts the client's with the subprotocol the upstream chose (an upstream
 * refusing the upgrade: its status and body are the client's answer). Then:
 * - the upstream's messages go to the client as they are;
 * - the client's `subscribe` (legacy: `start`) is checked: refused, the client gets an `error`
 *   message for its ID with the errors an HTTP request gets (legacy: the first error with all of
 *   them as `errors`) and the upstream never sees the operation, nor its `complete` (`stop`);
 * - the client's other messages of the protocol go on as they are; a message that is not one
 *   (not JSON, binary, an unknown type, a `subscribe` without an ID or a query) closes both
 *   sockets with 4400, as a graphql-transport-ws server does, and is never passed on.
 * Either side closing closes the other. An HTTPS upstream is dialled with the route's TLS settings
 * towards it (`ctx.route.upstreamConnector`: `proxy.transport`, `upstream_certificates`,
 * `pinned_public_keys`), as its HTTP requests are: a pin mismatch or a failed verification refuses
 * the upgrade (502) before anything is sent.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import type { GraphQLFormattedError } from 'graphql';
import type { ClientConnection, RequestContext } from '../pipeline/context.ts';
import type { Target } from '../pipeline/router.ts';
import type { UpstreamConnect } from '../pipeline/route.ts';
import { upstreamPathOf } from '../upstream/proxy.ts';
import { CLOSE_WAIT } from './transport-ws.ts';

/** The subprotocols whose operations the gateway reads, in its order of preference. */
export const RELAYED_PROTOCOLS = ['graphql-transport-ws', 'graphql-ws'] as const;
type Protocol = (typeof RELAYED_PROTOCOLS)[number];

/** Why an upgrade offering none of them is refused (400). */
export const UNCHECKABLE_PROTOCOL =
  'subscriptions are relayed over WebSocket with the subprotocol graphql-transport-ws or graphql-ws (subscriptions-transport-ws): the gateway checks each operation';

/** The largest message relayed either way. */
const MAX_PAYLOAD = 1024 * 1024;

/**
 * How much may wait to be written to one side before the gateway stops reading the other (a
 * client reading slowly holds its upstream back, as a piped socket would, rather than the
 * gateway's memory filling with what the client has not read yet); reading resumes once it has
 * all been written.
 */
export const HIGH_WATER = 4 * 1024 * 1024;

/**
 * Sends `data` to `to`, and stops reading `from` while more than `HIGH_WATER` bytes wait to be
 * written to `to`, until they are.
 */
function forward(from: WebSocket, to: WebSocket, data: WebSocket.RawData, binary: boolean): void {
  if (to.readyState !== WebSocket.OPEN) return;
  to.send(data, { binary }, () => {
    if (from.isPaused && to.bufferedAmount === 0) from.resume();
  });
  if (to.bufferedAmount > HIGH_WATER && !from.isPaused) from.pause();
}

/** How long the upstream has to accept the upgrade. */
const OPEN_WAIT_MS = 10_000;

/** The errors that refuse one operation, or undefined when it may be passed on. */
export type OperationCheck = (
  query: string,
  operationName: string | undefined,
) => readonly GraphQLFormattedError[] | undefined;

/** An answer for the client instead of the upgrade (the upstream refused it, or is unreachable). */
export interface UpgradeRefused {
  status: number;
  body: string;
  contentType: string;
}

/** The subprotocols of `RELAYED_PROTOCOLS` the client offered (`Sec-WebSocket-Protocol`). */
export function offeredProtocols(ctx: RequestContext): Protocol[] {
  const offered = (ctx.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  return RELAYED_PROTOCOLS.filter((p) => offered.includes(p));
}

/** Headers of the client's upgrade that the gateway's own WebSocket handshake sets. */
const HANDSHAKE = new Set([
  'host',
  'connection',
  'upgrade',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
]);

const server = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  maxPayload: MAX_PAYLOAD,
  ...CLOSE_WAIT,
  // The client gets the subprotocol the upstream chose (set per upgrade below).
  handleProtocols: (protocols, req) => {
    const chosen = (req as IncomingMessage & { chosenProtocol?: string }).chosenProtocol;
    return chosen !== undefined && protocols.has(chosen) ? chosen : false;
  },
});

/**
 * node:http's `createConnection` in its callback form (which `ws` hands on): the connection to
 * `url` opened by `connect`, the route's connector, once its TLS is established and checked.
 */
function tlsConnection(
  connect: UpstreamConnect,
  url: URL,
): (options: unknown, done: (err: Error | null, socket: Duplex) => void) => undefined {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  return (_options, done) => {
    connect(
      {
        hostname,
        host: url.host,
        protocol: url.protocol,
        port: url.port === '' ? '443' : url.port,
        ...(isIP(hostname) === 0 ? { servername: hostname } : {}),
      },
      (...args) => {
        // node:http reads the socket only without an error.
        done(...(args as [Error | null, Duplex]));
      },
    );
    return undefined;
  };
}

/** A WebSocket close code that may be sent (1005, 1006 and 1015 are only ever reported). */
const sendable = (code: number): boolean =>
  (code >= 1000 && code <= 1014 && ![1004, 1005, 1006].includes(code)) || (code >= 3000 && code <= 4999);

/**
 * Relays the upgrade of `ctx`, whose client connection is `conn` (`ctx.clientConnection()`), to
 * `target`, each operation the client sends checked by `check`; resolves once both sockets are
 * closed, or with the answer the client gets instead of an upgrade. The client must have offered a
 * subprotocol of `RELAYED_PROTOCOLS` (`offeredProtocols`).
 */
export function relayUpgrade(
  ctx: RequestContext,
  conn: ClientConnection,
  target: Target,
  check: OperationCheck,
  /** A data source's own path and headers (the execution engine), instead of the API's upstream path. */
  source?: { path: string; headers: Readonly<Record<string, string>> },
): Promise<UpgradeRefused | undefined> {
  const protocols = offeredProtocols(ctx);
  const url = new URL(target.origin);
  const path =
    source?.path ?? upstreamPathOf(target, ctx.route, ctx.path, ctx.query, undefined, ctx.listenPathAdded);
  const own = new Set(Object.keys(source?.headers ?? {}).map((k) => k.toLowerCase()));
  const headers: Record<string, string | string[]> = { host: target.host };
  const raw = conn.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    // The key's credentials were for the gateway; the upstream gets what the chain left.
    const lower = name.toLowerCase();
    if (HANDSHAKE.has(lower) || ctx.headers[lower] === undefined || own.has(lower)) continue;
    const prev = headers[name];
    const value = raw[i + 1] ?? '';
    headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
  }
  for (const [name, value] of Object.entries(source?.headers ?? {})) headers[name] = value;
  const secure = url.protocol === 'https:';
  const wsUrl = `${secure ? 'wss' : 'ws'}://${url.host}${path}`;
  return new Promise((resolve) => {
    const upstream = new WebSocket(wsUrl, protocols, {
      headers,
      perMessageDeflate: false,
      maxPayload: MAX_PAYLOAD,
      handshakeTimeout: OPEN_WAIT_MS,
      ...CLOSE_WAIT,
      ...(secure ? { createConnection: tlsConnection(ctx.route.upstreamConnector(target), url) } : {}),
    });
    let settled = false;
    /** The upstream's messages until the client's socket is open. */
    const early: [WebSocket.RawData, boolean][] = [];
    let client: WebSocket | undefined;
    upstream.on('message', (data, binary) => {
      if (client === undefined) early.push([data, binary]);
      else forward(upstream, client, data, binary);
    });
    upstream.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        if (chunks.reduce((n, x) => n + x.length, 0) < MAX_PAYLOAD) chunks.push(c);
      });
      res.on('end', () => {
        settled = true;
        upstream.terminate();
        resolve({
          status: res.statusCode ?? 502,
          body: Buffer.concat(chunks).toString('utf8'),
          contentType: res.headers['content-type'] ?? 'text/plain',
        });
      });
      res.on('error', () => undefined);
    });
    upstream.on('error', (err) => {
      if (settled || client !== undefined) return;
      settled = true;
      upstream.terminate();
      resolve({
        status: 502,
        body: JSON.stringify({ errors: [{ message: `the upstream's WebSocket: ${err.message}` }] }),
        contentType: 'application/json',
      });
    });
    // The client leaving while the upstream answers (or its upgrade failing) ends both.
    conn.socket.once('close', () => {
      if (client !== undefined) return;
      settled = true;
      upstream.terminate();
      resolve(undefined);
    });
    upstream.once('open', () => {
      if (settled) {
        upstream.terminate();
        return;
      }
      settled = true;
      const protocol = upstream.protocol as Protocol;
      // The `ws` library reads the method, the headers and the URL of the request it upgrades.
      const req = {
        method: 'GET',
        headers: ctx.headers,
        url: ctx.path,
        chosenProtocol: protocol,
      } as unknown as IncomingMessage;
      server.handleUpgrade(req, conn.socket, Buffer.alloc(0), (ws) => {
        client = ws;
        for (const [data, binary] of early.splice(0)) ws.send(data, { binary });
        relay(ws, conn.socket, upstream, protocol, check);
        ws.once('close', () => {
          resolve(undefined);
        });
      });
    });
  });
}

/** The messages of an upgraded client and its upstream, each of the client's operations checked. */
function relay(
  client: WebSocket,
  clientSocket: Duplex,
  upstream: WebSocket,
  protocol: Protocol,
  check: OperationCheck,
): void {
  const legacy = protocol === 'graphql-ws';
  /** Operations refused: their `complete` (`stop`) is not passed on either. */
  const refused = new Set<string>();
  const closeBoth = (code: number, reason: string): void => {
    for (const ws of [client, upstream]) {
      if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    }
  };
  client.on('message', (data, binary) => {
    let m: Record<string, unknown>;
    try {
      if (binary) throw new Error('binary');
      const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer)).toString('utf8');
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('not an object');
      m = parsed as Record<string, unknown>;
    } catch {
      closeBoth(4400, 'Invalid message received');
      return;
    }
    const id = typeof m.id === 'string' && m.id !== '' ? m.id : undefined;
    const start = legacy ? 'start' : 'subscribe';
    const stop = legacy ? 'stop' : 'complete';
    const known = legacy
      ? ['connection_init', 'connection_terminate', 'start', 'stop']
      : ['connection_init', 'ping', 'pong', 'subscribe', 'complete'];
    if (typeof m.type !== 'string' || !known.includes(m.type)) {
      closeBoth(4400, 'Invalid message received');
      return;
    }
    if (m.type === stop && id !== undefined && refused.delete(id)) return;
    if (m.type === start) {
      const p = m.payload;
      const payload = p !== null && typeof p === 'object' ? (p as Record<string, unknown>) : undefined;
      if (id === undefined || payload === undefined || typeof payload.query !== 'string') {
        closeBoth(4400, 'Invalid message received');
        return;
      }
      const op = payload.operationName;
      const errors = check(payload.query, typeof op === 'string' && op !== '' ? op : undefined);
      if (errors !== undefined) {
        refused.add(id);
        const body = legacy ? { ...errors[0], errors } : errors;
        if (client.readyState === WebSocket.OPEN)
          client.send(JSON.stringify({ id, type: 'error', payload: body }));
        return;
      }
      refused.delete(id);
    }
    forward(client, upstream, data, false);
  });
  // A close is passed on as it came: its code and reason, none (1005), or none at all (1006 and
  // other codes only ever reported: the connection is ended without a close frame, as the other
  // side's was; the client's end first, so an in-memory connection's other end sees it closed).
  const passClose = (to: WebSocket, code: number, reason: Buffer, socket?: Duplex): void => {
    // A side held back (`forward`) reads again: its close handshake needs the other end's answer.
    if (to.isPaused) to.resume();
    if (to.readyState === WebSocket.OPEN && sendable(code)) to.close(code, reason.toString('utf8'));
    else if (to.readyState === WebSocket.OPEN && code === 1005) to.close();
    else if (socket !== undefined && !socket.destroyed) {
      const cut = setTimeout(() => {
        to.terminate();
      }, 1_000);
      socket.end(() => {
        clearTimeout(cut);
        to.terminate();
      });
    } else to.terminate();
  };
  client.once('close', (code, reason) => {
    passClose(upstream, code, reason);
  });
  upstream.once('close', (code, reason) => {
    passClose(client, code, reason, clientSocket);
  });
  client.on('error', () => {
    upstream.terminate();
  });
  upstream.on('error', () => {
    client.terminate();
  });
}
