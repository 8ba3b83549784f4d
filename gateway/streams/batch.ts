/**
 * Publishes passed to Bento together (lib/bento/batching.ts says when a stream takes them): the
 * publishes to one stream input that arrive in one turn of the event loop, with the same method,
 * query and headers (so the same metadata), go to Bento as one multipart request once the turn's
 * input has been read (`setImmediate`), at most MAX_MESSAGES or MAX_BYTES each. No publish waits
 * for company: one alone in its turn is sent by itself, at once, as without batching.
 *
 * Each publisher gets the answer it would have had alone: 200 when Bento took the batch. When the
 * batch fails (Bento refused it, timed out, could not be reached), each of its publishes is sent
 * again by itself (`'alone'`), so each publisher gets its own message's answer, never a
 * neighbour's; as with any publish whose answer was lost, a consumer may then see a message twice.
 */
import { randomBytes } from 'node:crypto';
import { BATCH_HEADER, BATCH_TYPE_HEADER } from '../../lib/bento/batching.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import { bentoAgent } from './proxy.ts';

/** At most this many publishes, and this many bytes of them, in one batch. */
export const MAX_MESSAGES = 128;
export const MAX_BYTES = 1024 * 1024;

/** 'sent': Bento took the publish with its batch; 'alone': send it by itself, as without batching. */
export type Outcome = 'sent' | 'alone';

/** Hears each batch sent: its stream, how many publishes it carried, whether Bento took it. */
export interface BatchSink<S> {
  batched(stream: S, messages: number, taken: boolean): void;
}

interface Group {
  /** Where the batch is counted (`StreamsEngine.batched`), and the stream it is for. */
  sink: BatchSink<unknown> | undefined;
  stream: unknown;
  method: string;
  port: number;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  bodies: Buffer[];
  waiting: ((o: Outcome) => void)[];
  bytes: number;
}

/** Statistics, for tests and the bench: batches sent and the publishes they carried. */
export const batchStats = { batches: 0, messages: 0, failed: 0 };

let groups = new Map<string, Group>();
let scheduled = false;

/**
 * Queues a publish of `body` to `target` (`/<stream id><path>`) on the Bento at `port`; resolves
 * with the outcome once its batch is answered (at once with `'alone'` when no other publish came
 * in the same turn).
 */
export function batchPublish<S>(
  ctx: RequestContext,
  port: number,
  target: string,
  body: Buffer,
  counted?: { sink: BatchSink<S>; stream: S },
): Promise<Outcome> {
  // The key: what decides the headers sent (upstreamRequestHeaders: the client's headers, its
  // address, the listener) and where they go; the body's length is the one header left out.
  const path = `${target}${ctx.query}`;
  const { listener } = ctx;
  let key = `${ctx.method} ${String(port)} ${path} ${ctx.socketAddress} ${listener.protocol} ${String(listener.trustForwarded)}`;
  const given = ctx.headers;
  for (const name in given) {
    const v = given[name];
    if (v === undefined || name === 'content-length') continue;
    key += typeof v === 'string' ? `\n${name}: ${v}` : `\n${name}: ${JSON.stringify(v)}`;
  }
  return new Promise<Outcome>((resolve) => {
    let g = groups.get(key);
    if (g === undefined) {
      // Not sent as they are (undefined: left out of the batch's head).
      const headers: Record<string, string | string[] | undefined> = upstreamRequestHeaders(
        ctx,
        `127.0.0.1:${String(port)}`,
        false,
      );
      headers['content-length'] = undefined;
      headers.host = undefined;
      headers.expect = undefined;
      g = {
        sink: counted?.sink,
        stream: counted?.stream,
        method: ctx.method,
        port,
        path,
        headers,
        bodies: [],
        waiting: [],
        bytes: 0,
      };
      groups.set(key, g);
    }
    g.bodies.push(body);
    g.waiting.push(resolve);
    g.bytes += body.length;
    if (g.bodies.length >= MAX_MESSAGES || g.bytes >= MAX_BYTES) {
      groups.delete(key);
      void send(g);
    } else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  });
}

function flush(): void {
  scheduled = false;
  const due = groups;
  groups = new Map();
  for (const g of due.values()) {
    if (g.bodies.length === 1) g.waiting[0]?.('alone');
    else void send(g);
  }
}

/** A boundary no body is likely to hold (checked per batch; another is drawn when one does). */
let usualBoundary = randomBytes(16).toString('hex');

/** The multipart body of a batch: each publish one part, with no part headers. */
function multipart(bodies: Buffer[]): { parts: Buffer[]; length: number; boundary: string } {
  let boundary = usualBoundary;
  while (bodies.some((b) => b.includes(boundary))) boundary = usualBoundary = randomBytes(16).toString('hex');
  const parts: Buffer[] = [Buffer.from(`--${boundary}\r\n\r\n`, 'latin1')];
  const between = Buffer.from(`\r\n--${boundary}\r\n\r\n`, 'latin1');
  let length = parts[0]?.length ?? 0;
  bodies.forEach((b, i) => {
    if (i > 0) {
      parts.push(between);
      length += between.length;
    }
    parts.push(b);
    length += b.length;
  });
  const close = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  parts.push(close);
  return { parts, length: length + close.length, boundary };
}

async function send(g: Group): Promise<void> {
  const { parts, length, boundary } = multipart(g.bodies);
  const headers: Record<string, string | string[]> = {};
  for (const k in g.headers) {
    const v = g.headers[k];
    if (v !== undefined) headers[k] = v;
  }
  const type = g.headers['content-type'];
  if (typeof type === 'string') headers[BATCH_TYPE_HEADER] = type;
  headers[BATCH_HEADER] = '1';
  headers['content-type'] = `multipart/mixed; boundary=${boundary}`;
  headers['content-length'] = String(length);
  // The same kept-alive connections to Bento as every other call of the gateway's (proxy.ts),
  // through `dispatch`: the answer is a status and an empty body, so no body stream or promise
  // per batch (`request`'s) is made for it.
  const outcome = await new Promise<Outcome>((resolve) => {
    let status = 0;
    try {
      bentoAgent.dispatch(
        {
          origin: `http://127.0.0.1:${String(g.port)}`,
          path: g.path,
          method: g.method,
          headers,
          body: Buffer.concat(parts, length),
        },
        {
          onRequestStart() {
            // Nothing to do (undici takes a handler with this method for one of its current interface).
          },
          onResponseStart(_c, statusCode) {
            status = statusCode;
          },
          onResponseData() {
            // The answer to a batch has no body worth reading (Bento's `200`, or an error's text).
          },
          onResponseEnd() {
            resolve(status >= 200 && status < 300 ? 'sent' : 'alone');
          },
          // Bento could not be reached, or the exchange broke: each publish is sent alone.
          onResponseError() {
            resolve('alone');
          },
        },
      );
    } catch {
      resolve('alone');
    }
  });
  batchStats.batches++;
  batchStats.messages += g.bodies.length;
  if (outcome === 'alone') batchStats.failed++;
  g.sink?.batched(g.stream, g.bodies.length, outcome === 'sent');
  for (const done of g.waiting) done(outcome);
}
