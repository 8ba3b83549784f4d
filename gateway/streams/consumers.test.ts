/**
 * Consumers that go away, through a real gateway and a real Bento, on both request paths (the
 * fast path and node:http): a consumer of an `http_server` output (server-sent events without
 * heartbeat, newline-delimited raw bytes, WebSocket) that disconnects before its first message
 * is detached at once, so every publish answered 200 afterwards reaches the consumer that
 * remains. Bento writes an event stream's head with its first message and only notices a
 * connection gone when it reads its end: a gateway that kept its connection to Bento open would
 * let Bento hand the next message to the departed consumer, acknowledge it, and lose it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../../lib/testing/wait.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { onDelimited, openSse, streamsDocument } from './testing.ts';

/** Rounds per kind and request path: each opens two consumers and lets one go. */
const ROUNDS = 4;
/** Publishes per round, each answered 200 before the next. */
const PUBLISHES = 10;

/**
 * Connections to Bento's `port` that their other end (the gateway) closed and Bento holds still
 * (CLOSE_WAIT in the machine's TCP table): a handler of Bento's that has not noticed its consumer
 * gone.
 */
function bentoHolds(port: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let n = 0;
  for (const line of readFileSync('/proc/net/tcp', 'latin1').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hex) === true && f[3] === '08') n++;
  }
  return n;
}

/** A consumer that stays: the messages it received, in order. */
interface Staying {
  messages: string[];
  close(): void;
}

/** A newline-delimited raw-bytes consumer (Bento's `stream_format: raw_bytes`, a `\n` after each message). */
function openRaw(port: number, path: string): Staying {
  const c: Staying = { messages: [], close: () => undefined };
  const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
    onDelimited(res, '\n', (line) => {
      if (line !== '') c.messages.push(line);
    });
  });
  req.on('error', () => undefined);
  req.end();
  c.close = () => {
    req.destroy();
  };
  return c;
}

/** A server-sent events consumer whose head (sent with the first message) has not come yet. */
function openEvents(port: number, path: string): Staying {
  const opening = openSse(port, path);
  let closed = false;
  const c: Staying = {
    messages: [],
    close: () => {
      closed = true;
      void opening.then((sse) => {
        sse.close();
      });
    },
  };
  void opening.then((sse) => {
    if (closed) sse.close();
    // The consumer's own list: events as they come.
    c.messages = sse.events;
  });
  return c;
}

/** A WebSocket consumer, open (Bento answered 101). */
async function openWs(port: number, path: string): Promise<Staying> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
  const c: Staying = {
    messages: [],
    close: () => {
      ws.close();
    },
  };
  ws.addEventListener('message', (e) => {
    c.messages.push(String(e.data));
  });
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => {
      resolve();
    });
    ws.addEventListener('error', () => {
      reject(new Error('websocket failed'));
    });
  });
  return c;
}

/**
 * A consumer's request written on a raw connection (so the test decides how it ends), named by
 * `name` in a header of its own (`x-consumer`) for the gateway's accounting.
 */
function rawConsumer(
  port: number,
  path: string,
  ws: boolean,
  name: string,
): Promise<{ socket: Socket; got: () => string }> {
  return new Promise((resolve, reject) => {
    let got = '';
    const socket = connect({ host: '127.0.0.1', port }, () => {
      const head = ws
        ? `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-consumer: ${name}\r\nconnection: Upgrade\r\n` +
          'upgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'
        : `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-consumer: ${name}\r\naccept: text/event-stream\r\n\r\n`;
      socket.write(head);
      resolve({ socket, got: () => got });
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (got += chunk));
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

const KINDS = [
  {
    kind: 'server-sent events',
    id: 'gone-sse',
    output: { path: '', ws_path: '', stream_path: '/out', stream_format: 'event_source' },
    consumer: '/out',
  },
  {
    kind: 'raw bytes',
    id: 'gone-raw',
    output: { path: '', ws_path: '', stream_path: '/out', stream_format: 'raw_bytes' },
    consumer: '/out',
  },
  {
    kind: 'WebSocket',
    id: 'gone-ws',
    output: { path: '', stream_path: '', ws_path: '/ws', ws_message_type: 'text' },
    consumer: '/ws',
  },
] as const;

/**
 * How the consumer that goes leaves: a browser tab closing (FIN) or a connection torn down (RST)
 * while it waits, or a client that closes right after sending its request (the gateway has not
 * called Bento yet).
 */
const HOW = [
  { key: 'closes', words: 'closes its connection before its first message' },
  { key: 'resets', words: 'resets its connection before its first message' },
  { key: 'hangs-up', words: 'closes its connection right after sending its request' },
] as const;

for (const fastPath of [true, false]) {
  describe(`stream consumers that go away (fast path ${fastPath ? 'on' : 'off'})`, () => {
    let gw: InProcessGateway;
    /** Consumer requests the gateway is serving (by path), from the gateway's own accounting. */
    const serving = new Map<RequestContext, string>();
    /** The named consumers (`x-consumer`) whose request the gateway has ended. */
    const ended = new Set<string>();
    before(async () => {
      gw = await startGateway({
        argv: ['--streaming-enabled', '--workers', '1', `--fast-path=${String(fastPath)}`],
        observer: {
          onRequest: (ctx) => {
            if (ctx.method === 'GET') serving.set(ctx, ctx.path);
          },
          onResponse: (ctx) => {
            serving.delete(ctx);
            const name = ctx.headers['x-consumer'];
            if (typeof name === 'string') ended.add(name);
          },
        },
      });
      // An API per kind and way of leaving: a test that fails leaves nothing behind for the next.
      for (const k of KINDS) {
        for (const how of HOW) {
          const res = await gw.admin(
            'POST',
            '/svc/apis/oas',
            streamsDocument(`${k.id}-${how.key}`, {
              relay: {
                input: { http_server: { path: '/in', ws_path: '' } },
                // No heartbeat: nothing is written to an event stream before its first message.
                output: { http_server: k.output },
              },
            }),
          );
          assert.equal(res.status, 200, res.text);
        }
      }
      await gw.reload();
    });
    after(async () => {
      await gw.stop();
    });

    /** Waits until the gateway serves `n` consumers of `path`. */
    const consumers = (path: string, n: number): Promise<boolean> =>
      waitFor(
        `${n} consumer(s) of ${path} served`,
        () => [...serving.values()].filter((p) => p === path).length === n,
        10_000,
        10,
      );

    for (const k of KINDS) {
      for (const how of HOW) {
        test(`${k.kind}: a consumer that ${how.words} gets no message; every publish answered 200 reaches the one that stays`, async () => {
          const id = `${k.id}-${how.key}`;
          const path = `/${id}${k.consumer}`;
          const handoffs = fastPathStats.handoffs;
          for (let round = 0; round < ROUNDS; round++) {
            await consumers(path, 0);
            // The consumer that stays, then the one that goes: both waiting on Bento.
            const stays = k.kind === 'WebSocket' ? await openWs(gw.port, path) : undefined;
            const staying =
              stays ?? (k.kind === 'raw bytes' ? openRaw(gw.port, path) : openEvents(gw.port, path));
            const name = `${id} round ${round}`;
            const goes = await rawConsumer(gw.port, path, k.kind === 'WebSocket', name);
            try {
              if (how.key === 'hangs-up') goes.socket.destroy();
              else {
                await consumers(path, 2);
                if (k.kind === 'WebSocket')
                  await waitFor('the 101', () => goes.got().startsWith('HTTP/1.1 101'), 10_000, 10);
                if (how.key === 'closes') goes.socket.destroy();
                else goes.socket.resetAndDestroy();
              }
              // The gateway lets it go at once (its request is over)...
              const detached = await waitFor('the consumer let go', () => ended.has(name), 5_000, 10).then(
                () => true,
                () => false,
              );
              // ... and so does Bento, which notices only when it reads the end of the gateway's
              // connection: publishing before that could hand a message to the handler of the
              // consumer that went (as it does when the consumer goes straight to Bento).
              await waitFor(
                'Bento to let the consumer go',
                () => bentoHolds(gw.gw.streams.port) === 0,
                10_000,
                10,
              );
              const sent = Array.from({ length: PUBLISHES }, (_, i) => `round ${round} message ${i}`);
              for (const body of sent) {
                const res = await gw.request({ fresh: true, method: 'POST', path: `/${id}/in`, body });
                assert.equal(res.status, 200, res.text);
              }
              try {
                await waitFor(
                  `${PUBLISHES} messages at the consumer that stayed`,
                  () => staying.messages.length >= PUBLISHES,
                  10_000,
                  10,
                );
              } catch {
                // Shown with what arrived instead.
              }
              assert.deepEqual(
                staying.messages,
                sent,
                `round ${round}: every publish answered 200 reached the consumer that stayed`,
              );
              assert.ok(detached, `round ${round}: the gateway let the consumer that went go at once`);
            } finally {
              staying.close();
              goes.socket.destroy();
            }
          }
          await consumers(path, 0);
          if (fastPath && k.kind !== 'WebSocket')
            assert.equal(fastPathStats.handoffs, handoffs, 'served on the fast path');
        });
      }
    }
  });
}
