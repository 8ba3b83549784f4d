/**
 * Kafka data sources of the data graph (v2 `kind: Kafka`): each subscription to a field they feed
 * is one consumer of the source's group, run on the gateway's stream processor (Bento's `kafka`
 * input, gateway/streams/) as a stream of the gateway's own, its topics and client ID filled from
 * the field's arguments. Its messages come back over the stream's WebSocket output on loopback,
 * one Kafka message a WebSocket message, each parsed as JSON: the source's answer for one event
 * (engine.ts maps it onto the field). A message is taken from Kafka (its offset committed) once
 * it is handed over here; the stream is deleted when the subscription ends.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { GraphQLError } from 'graphql';
import { errorMessage } from '../../lib/errors.ts';
import { OWN_STREAM_PREFIX } from '../streams/host.ts';
import type { StreamsEngine } from '../streams/engine.ts';
import { fillTemplate } from './engine.ts';
import type { KafkaSource } from './sources.ts';

/** How long a subscription waits for its stream's output to accept it. */
const CONNECT_DEADLINE_MS = 10_000;

/** The stream consuming `source` for one subscription with arguments `args`. */
export function kafkaStreamConfig(
  source: KafkaSource,
  args: Record<string, unknown>,
): Record<string, unknown> {
  const clientId = fillTemplate(source.clientId, undefined, args);
  return {
    input: {
      kafka: {
        addresses: source.brokers,
        topics: source.topics.map((t) => fillTemplate(t, undefined, args)),
        consumer_group: source.groupId,
        ...(clientId === '' ? {} : { client_id: clientId }),
        start_from_oldest: source.startFromOldest,
        ...(source.version === undefined ? {} : { target_version: source.version }),
      },
    },
    output: { http_server: { path: '', stream_path: '', ws_path: '/ws' } },
  };
}

/** One event of a subscription: the message as JSON, or a GraphQLError saying why it can't be read. */
export type KafkaEvent = unknown;

/**
 * The events of one subscription to a field `source` feeds: an async iterable that ends when the
 * stream's output closes (Bento stopped) and whose `return` (the subscriber left) deletes the
 * stream. Rejects when the stream can't start.
 */
export async function kafkaEvents(
  streams: StreamsEngine | undefined,
  source: KafkaSource,
  args: Record<string, unknown>,
): Promise<AsyncIterableIterator<KafkaEvent>> {
  if (streams === undefined) throw new GraphQLError('this gateway runs no stream processor');
  const id = `${OWN_STREAM_PREFIX}graphql.${randomUUID().replaceAll('-', '')}`;
  let port: number;
  try {
    port = await streams.startOwnStream(id, kafkaStreamConfig(source, args));
  } catch (err) {
    throw new GraphQLError(`the Kafka consumer did not start: ${errorMessage(err)}`);
  }
  const stop = (): void => {
    streams.stopOwnStream(id).catch(() => undefined);
  };
  let socket: WebSocket;
  try {
    socket = await connect(`ws://127.0.0.1:${port}/${encodeURIComponent(id)}/ws`);
  } catch (err) {
    stop();
    throw new GraphQLError(`the Kafka consumer is not reachable: ${errorMessage(err)}`);
  }
  return iterate(socket, stop);
}

/** Opens the stream's WebSocket output, trying again while Bento registers the endpoint. */
async function connect(url: string): Promise<WebSocket> {
  const deadline = Date.now() + CONNECT_DEADLINE_MS;
  for (;;) {
    try {
      return await new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        ws.once('open', () => {
          resolve(ws);
        });
        ws.once('unexpected-response', (_req, res) => {
          ws.terminate();
          reject(new Error(`the stream processor answered ${String(res.statusCode)}`));
        });
        ws.once('error', reject);
      });
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The socket's messages as an async iterator (JSON values; a message that is not JSON, an error). */
function iterate(socket: WebSocket, stop: () => void): AsyncIterableIterator<KafkaEvent> {
  const queue: KafkaEvent[] = [];
  let waiting: ((r: IteratorResult<KafkaEvent>) => void) | undefined;
  let closed = false;
  const deliver = (v: KafkaEvent): void => {
    if (waiting !== undefined) {
      const w = waiting;
      waiting = undefined;
      w({ value: v, done: false });
    } else queue.push(v);
  };
  socket.on('message', (data: Buffer) => {
    const text = data.toString('utf8');
    try {
      deliver(JSON.parse(text) as unknown);
    } catch {
      deliver(
        new GraphQLError('a Kafka message is not JSON', { extensions: { message: text.slice(0, 200) } }),
      );
    }
  });
  const end = (): void => {
    if (closed) return;
    closed = true;
    socket.terminate();
    stop();
    if (waiting !== undefined) {
      const w = waiting;
      waiting = undefined;
      w({ value: undefined, done: true });
    }
  };
  socket.once('close', end);
  socket.once('error', end);
  const it: AsyncIterableIterator<KafkaEvent> = {
    next: () => {
      if (queue.length > 0) return Promise.resolve({ value: queue.shift(), done: false });
      if (closed) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => {
        waiting = resolve;
      });
    },
    return: () => {
      end();
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]: () => it,
  };
  return it;
}
