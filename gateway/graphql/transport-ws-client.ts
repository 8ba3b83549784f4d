/**
 * The client side of `graphql-transport-ws` (transport-ws.ts is the server side), for a
 * supergraph forwarding a subscription to the subgraph owning its field: one WebSocket per
 * subscription, `connection_init`, then once acknowledged one `subscribe`; the server's `next`
 * payloads are the subscription's events, its `complete` ends them, its `error` (the operation
 * refused) or a close before `complete` fails them. Ending the events (`return`: the client's
 * `complete` or its leaving) sends `complete` and closes the socket.
 */
import type { Duplex } from 'node:stream';
import type { GraphQLFormattedError } from 'graphql';
import WebSocket from 'ws';
import { keepAlive, OperationErrors, parseMessage, sender, TRANSPORT_WS } from './transport-ws.ts';

/** The largest message a server may send (as the server side allows). */
const MAX_PAYLOAD = 1024 * 1024;

/** How long the server has to accept the upgrade and acknowledge `connection_init`. */
const OPEN_WAIT_MS = 10_000;

/** One subscription to open. */
export interface WsSubscription {
  /** `ws://` or `wss://` URL. */
  url: string;
  headers: Readonly<Record<string, string>>;
  /** The connection to speak on (another API of the gateway, in memory) instead of dialling `url`. */
  connect?: (() => Duplex) | undefined;
  query: string;
  variables: Readonly<Record<string, unknown>>;
  /** Prefixes the messages of the errors (`subgraph users`). */
  name: string;
}

/** The errors of an `error` message's payload, prefixed with `name`. */
function errorsOf(name: string, payload: unknown): GraphQLFormattedError[] {
  const list = Array.isArray(payload) ? (payload as unknown[]) : [];
  const out = list.map((e): GraphQLFormattedError => {
    const m = e !== null && typeof e === 'object' ? (e as { message?: unknown }).message : undefined;
    return { message: `${name}: ${typeof m === 'string' ? m : 'error'}` };
  });
  return out.length > 0 ? out : [{ message: `${name}: the subscription was refused` }];
}

/**
 * Opens the subscription: its events (each `next` payload, `{data, errors}` as the server sent
 * it), in order. The socket opens at once; a failure to open fails the first `next`.
 */
export function subscribeOverWs(sub: WsSubscription): AsyncIterableIterator<Record<string, unknown>> {
  const queue: Record<string, unknown>[] = [];
  let failure: OperationErrors | undefined;
  let done = false;
  let wake: (() => void) | undefined;
  const settle = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = (reason: string): void => {
    if (done || failure !== undefined) return;
    failure = new OperationErrors([{ message: `${sub.name}: ${reason}` }]);
    close();
  };
  const ws = new WebSocket(sub.url, TRANSPORT_WS, {
    headers: { ...sub.headers },
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD,
    handshakeTimeout: OPEN_WAIT_MS,
    ...(sub.connect === undefined ? {} : { createConnection: sub.connect }),
  });
  const close = (): void => {
    clearTimeout(ackTimer);
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    else if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'Normal Closure');
    settle();
  };
  const ackTimer = setTimeout(() => {
    fail('the subscription socket was not acknowledged in time');
  }, OPEN_WAIT_MS);
  const send = sender(ws);
  ws.on('open', () => {
    send({ type: 'connection_init' });
  });
  ws.on('message', (data, binary) => {
    if (done || failure !== undefined) return;
    const m = parseMessage(data, binary);
    if (m !== undefined && keepAlive(m, send)) return;
    switch (m?.type) {
      case 'connection_ack':
        clearTimeout(ackTimer);
        send({ id: '1', type: 'subscribe', payload: { query: sub.query, variables: sub.variables } });
        return;
      case 'next':
        if (m.id !== '1') break;
        if (m.payload !== null && typeof m.payload === 'object' && !Array.isArray(m.payload)) {
          queue.push(m.payload as Record<string, unknown>);
          settle();
          return;
        }
        break;
      case 'error':
        if (m.id !== '1') break;
        failure = new OperationErrors(errorsOf(sub.name, m.payload));
        close();
        return;
      case 'complete':
        if (m.id !== '1') break;
        done = true;
        close();
        return;
    }
    fail('sent a message that is not graphql-transport-ws');
  });
  ws.on('error', (err) => {
    fail(err.message);
  });
  ws.on('close', (code, reason) => {
    const why = reason.toString('utf8');
    fail(`closed the subscription socket (${String(code)}${why === '' ? '' : ` ${why}`})`);
  });
  const iterator: AsyncIterableIterator<Record<string, unknown>> = {
    async next() {
      for (;;) {
        const value = queue.shift();
        if (value !== undefined) return { value, done: false };
        if (failure !== undefined) {
          const f = failure;
          done = true;
          failure = undefined;
          throw f;
        }
        if (done) return { value: undefined, done: true };
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    return() {
      if (!done) {
        done = true;
        queue.length = 0;
        failure = undefined;
        send({ id: '1', type: 'complete' });
        close();
      }
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
