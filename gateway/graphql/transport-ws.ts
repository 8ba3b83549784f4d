/**
 * The server side of the GraphQL over WebSocket protocol (`graphql-transport-ws`, the protocol of
 * the `graphql-ws` library), for subscriptions the gateway answers itself (the execution engine's
 * Kafka sources, a supergraph's subscriptions forwarded to its subgraphs): the client's upgrade, once it passed the chain, is accepted on its own
 * connection; `connection_init` is acknowledged (within 3 s of opening, else close 4408), `ping`
 * answered with `pong`, each `subscribe` run by `run` and its results sent as `next` then
 * `complete` (or one `error` with the GraphQL errors when it cannot start), a client's `complete`
 * ends its operation. Protocol errors close the socket with the protocol's codes (4400 bad
 * message, 4401 subscribe before the acknowledgement, 4409 an ID already running, 4429 a second
 * init).
 */
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { ExecutionResult, GraphQLFormattedError } from 'graphql';
import type { ClientConnection, RequestContext } from '../pipeline/context.ts';
import { TRANSPORT_WS } from '../../schemas/rules/graphql-supergraph.ts';

/** The subprotocol served. */
export { TRANSPORT_WS };

/**
 * An operation's errors, thrown by its results (a subgraph's `error` message, its socket closed):
 * sent to the client as the `error` message's payload.
 */
export class OperationErrors extends Error {
  readonly errors: readonly GraphQLFormattedError[];
  constructor(errors: readonly GraphQLFormattedError[]) {
    super(errors.map((e) => e.message).join('; '));
    this.errors = errors;
  }
}

/** A message of the protocol, either way: a JSON object with its `type`. */
export type Message = Record<string, unknown>;

/**
 * The message a frame holds, either side's (read by the client of transport-ws-client.ts too), or
 * undefined when it holds none: a binary frame, text that is not JSON, JSON that is not an object.
 */
export function parseMessage(data: RawData, binary: boolean): Message | undefined {
  if (binary) return undefined;
  try {
    const text = (
      Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
    ).toString('utf8');
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Message)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Sends messages on `ws` while it is open: one for a socket closing or closed is dropped. */
export function sender(ws: WebSocket): (m: Message) => void {
  return (m) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
  };
}

/**
 * The protocol's keep-alive, the same on both sides: a `ping` is answered with `pong`, a `pong`
 * needs no answer. Whether `m` was one of them (and so is handled).
 */
export function keepAlive(m: Message, send: (m: Message) => void): boolean {
  if (m.type === 'ping') {
    send({ type: 'pong' });
    return true;
  }
  return m.type === 'pong';
}

/** How long a client has to send `connection_init`. */
const INIT_WAIT_MS = 3_000;

/** A `subscribe` message's payload. */
export interface SubscribePayload {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/**
 * What an operation gives: errors that refuse it (an `error` message), one result (a query), or
 * the results of a subscription.
 */
export type OperationOutcome =
  | { errors: readonly GraphQLFormattedError[] }
  | { result: ExecutionResult }
  | { results: AsyncIterableIterator<ExecutionResult> };

/** Whether the client offered the subprotocol (`Sec-WebSocket-Protocol`). */
export function offersTransportWs(ctx: RequestContext): boolean {
  const offered = ctx.headers['sec-websocket-protocol'] ?? '';
  return offered
    .split(',')
    .map((p) => p.trim())
    .includes(TRANSPORT_WS);
}

/**
 * How long a side has, once close frames are exchanged, to end its connection before the gateway
 * ends it (`ws`'s `closeTimeout`, 30 s by default): a client that sent its close frame and then
 * read nothing held its subscriptions (and a relayed one's upstream connection, subscriptions.ts)
 * that long.
 */
export const CLOSE_WAIT_MS = 2_000;

/** `ws`'s option for it (@types/ws does not declare it yet), for the gateway's servers and clients. */
export const CLOSE_WAIT: object = { closeTimeout: CLOSE_WAIT_MS };

const server = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  maxPayload: 1024 * 1024,
  ...CLOSE_WAIT,
  handleProtocols: (protocols) => (protocols.has(TRANSPORT_WS) ? TRANSPORT_WS : false),
});

/**
 * Serves the protocol on the client connection of `ctx` (an upgrade request that passed the
 * chain); resolves once the socket is closed.
 */
export function serveTransportWs(
  ctx: RequestContext,
  conn: ClientConnection,
  run: (payload: SubscribePayload) => Promise<OperationOutcome>,
): Promise<void> {
  // The `ws` library reads the method, the headers and the URL of the request it upgrades.
  const req = { method: 'GET', headers: ctx.headers, url: ctx.path } as unknown as IncomingMessage;
  return new Promise<void>((resolve) => {
    server.handleUpgrade(req, conn.socket, Buffer.alloc(0), (ws) => {
      session(ws, run);
      ws.once('close', () => {
        resolve();
      });
    });
    conn.socket.once('close', () => {
      resolve();
    });
  });
}

function session(ws: WebSocket, run: (payload: SubscribePayload) => Promise<OperationOutcome>): void {
  let initialised = false;
  let acknowledged = false;
  /** Running operations by ID; the value ends one (its iterator's `return`). */
  const running = new Map<string, (() => void) | undefined>();
  const send = sender(ws);
  const initTimer = setTimeout(() => {
    if (!initialised) ws.close(4408, 'Connection initialisation timeout');
  }, INIT_WAIT_MS);
  ws.once('close', () => {
    clearTimeout(initTimer);
    for (const stop of running.values()) stop?.();
    running.clear();
  });
  ws.on('message', (data: RawData, binary: boolean) => {
    const m = parseMessage(data, binary);
    if (m === undefined) {
      ws.close(4400, 'Invalid message received');
      return;
    }
    if (keepAlive(m, send)) return;
    switch (m.type) {
      case 'connection_init':
        if (initialised) {
          ws.close(4429, 'Too many initialisation requests');
          return;
        }
        initialised = true;
        acknowledged = true;
        clearTimeout(initTimer);
        send({ type: 'connection_ack' });
        return;
      case 'complete': {
        const id = typeof m.id === 'string' ? m.id : undefined;
        if (id === undefined) {
          ws.close(4400, 'Invalid message received');
          return;
        }
        const stop = running.get(id);
        running.delete(id);
        stop?.();
        return;
      }
      case 'subscribe':
        break;
      default:
        ws.close(4400, 'Invalid message received');
        return;
    }
    if (!acknowledged) {
      ws.close(4401, 'Unauthorized');
      return;
    }
    const id = typeof m.id === 'string' && m.id !== '' ? m.id : undefined;
    const raw: unknown = m.payload;
    const p = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : undefined;
    const variables = p?.variables ?? undefined;
    if (
      id === undefined ||
      p === undefined ||
      typeof p.query !== 'string' ||
      (variables !== undefined && (typeof variables !== 'object' || Array.isArray(variables)))
    ) {
      ws.close(4400, 'Invalid message received');
      return;
    }
    if (running.has(id)) {
      ws.close(4409, `Subscriber for ${id} already exists`);
      return;
    }
    running.set(id, undefined);
    const payload: SubscribePayload = {
      query: p.query,
      variables: variables as Record<string, unknown> | undefined,
      operationName:
        typeof p.operationName === 'string' && p.operationName !== '' ? p.operationName : undefined,
    };
    void operate(id, payload);
  });

  async function operate(id: string, payload: SubscribePayload): Promise<void> {
    let outcome: OperationOutcome;
    try {
      outcome = await run(payload);
    } catch (err) {
      outcome = { errors: [{ message: err instanceof Error ? err.message : String(err) }] };
    }
    if (!running.has(id)) {
      // The client completed it (or left) while it started.
      if ('results' in outcome) await outcome.results.return?.();
      return;
    }
    if ('errors' in outcome) {
      running.delete(id);
      send({ id, type: 'error', payload: outcome.errors });
      return;
    }
    if ('result' in outcome) {
      running.delete(id);
      send({ id, type: 'next', payload: outcome.result });
      send({ id, type: 'complete' });
      return;
    }
    const results = outcome.results;
    running.set(id, () => {
      void results.return?.();
    });
    try {
      for await (const r of results) {
        if (!running.has(id)) break;
        send({ id, type: 'next', payload: r });
      }
    } catch (err) {
      if (running.has(id)) {
        const errors =
          err instanceof OperationErrors
            ? err.errors
            : [{ message: err instanceof Error ? err.message : String(err) }];
        send({ id, type: 'error', payload: errors });
        running.delete(id);
      }
      return;
    }
    if (running.delete(id)) send({ id, type: 'complete' });
  }
}
