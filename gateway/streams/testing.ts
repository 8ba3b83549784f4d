/**
 * For streams tests: brokers started per test run on free ports (mosquitto, nats-server, and the
 * Kafka broker tools/build.sh builds from franz-go's kfake), never the machine's own, and small
 * clients for server-sent events and streams documents.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { builtToolsDir } from '../../lib/bento/binary.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { after, before } from 'node:test';
import { startGateway, type GatewayClient, type InProcessGateway } from '../testing/harness.ts';
import { connect } from 'node:net';
import { listenLocal } from '../testing/servers.ts';

/** A broker process started by a test. */
export interface TestBroker {
  /** `127.0.0.1:<port>`. */
  address: string;
  port: number;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => {
      resolve(false);
    });
  });
}

async function startProcess(
  name: string,
  cmd: string,
  args: (port: number) => string[],
): Promise<TestBroker> {
  const port = await freePort();
  const child: ChildProcess = spawn(cmd, args(port), { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  try {
    await waitFor(
      `${name} on ${port}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited: ${output}`);
        return accepts(port);
      },
      15_000,
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    address: `127.0.0.1:${port}`,
    port,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** mosquitto (Debian `mosquitto`) on a free loopback port. */
export function startMosquitto(): Promise<TestBroker> {
  return startProcess('mosquitto', '/usr/sbin/mosquitto', (port) => ['-p', String(port)]);
}

/** nats-server (Debian `nats-server`) on a free loopback port. */
export function startNats(): Promise<TestBroker> {
  return startProcess('nats-server', '/usr/sbin/nats-server', (port) => [
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
  ]);
}

/** The Kafka wire-protocol broker built by tools/build.sh (tools/kfake). */
export function startKafka(topics: string[] = [], partitions = 2): Promise<TestBroker> {
  const bin = path.join(builtToolsDir(), 'kfake');
  if (!existsSync(bin))
    throw new Error(`kfake not found at ${bin}: run \`make deps\` (tools/build.sh streams)`);
  return startProcess('kfake', bin, (port) => [
    '-port',
    String(port),
    '-partitions',
    String(partitions),
    ...(topics.length > 0 ? ['-topics', topics.join(',')] : []),
  ]);
}

/** Which of the brokers the tests need are on this machine (tests say why one did not run). */
export function brokerMissing(name: 'mosquitto' | 'nats-server'): string | undefined {
  return existsSync(`/usr/sbin/${name}`)
    ? undefined
    : `${name} is not installed (apt-get install ${name}; .ci/run installs it)`;
}

/** A server-sent events consumer: the `data` of each event received, in order. */
export interface SseConsumer {
  status: number;
  events: string[];
  /** When each event arrived (ms since the epoch, sub-millisecond), index for index. */
  times: number[];
  /** Comment lines (heartbeats). */
  comments: number;
  close(): void;
}

/**
 * Calls `each` with every piece of the text response `res` that ends with `separator` (the
 * separator left out), as it arrives; a response error ends it quietly.
 */
export function onDelimited(res: IncomingMessage, separator: string, each: (piece: string) => void): void {
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf(separator)) !== -1) {
      const piece = buf.slice(0, i);
      buf = buf.slice(i + separator.length);
      each(piece);
    }
  });
  res.on('error', () => undefined);
}

/**
 * A stream relaying what is POSTed to `/post` to the server-sent events consumers of `/sse`, with
 * a heartbeat each second unless `heartbeat` is false (nothing flows between messages then).
 */
export function sseRelay(heartbeat = true): Record<string, unknown> {
  return {
    input: { http_server: { path: '/post' } },
    output: {
      http_server: {
        stream_path: '/sse',
        stream_format: 'event_source',
        ...(heartbeat ? { heartbeat: '1s' } : {}),
      },
    },
  };
}

/** An event-stream output on `path` and nothing else, with a heartbeat each second if `heartbeat`. */
export function sseOutput(path: string, heartbeat = false): Record<string, unknown> {
  return {
    http_server: {
      path: '',
      ws_path: '',
      stream_path: path,
      stream_format: 'event_source',
      ...(heartbeat ? { heartbeat: '1s' } : {}),
    },
  };
}

/** Opens a server-sent events stream; resolves once the response head arrived. */
export function openSse(
  port: number,
  urlPath: string,
  headers: Record<string, string> = {},
): Promise<SseConsumer> {
  return new Promise((resolve, reject) => {
    const req = request(
      // A connection of its own, as a browser's EventSource has: not one the process's global
      // agent kept from an earlier call (the gateway hands a connection whose first request it
      // does not serve on its fast path, an admin call, to node:http for good).
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        headers: { accept: 'text/event-stream', ...headers },
        agent: false,
      },
      (res) => {
        const c: SseConsumer = {
          status: res.statusCode ?? 0,
          events: [],
          times: [],
          comments: 0,
          close: () => {
            req.destroy();
          },
        };
        onDelimited(res, '\n\n', (block) => {
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6));
          if (data.length > 0) {
            c.events.push(data.join('\n'));
            c.times.push(performance.timeOrigin + performance.now());
          } else if (block.startsWith(':')) c.comments++;
        });
        resolve(c);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A streams OAS document: keyless unless `ext` says otherwise, `/<name>/` stripped to `target`. */
export function streamsDocument(
  id: string,
  streams: Record<string, unknown>,
  ext: Record<string, unknown> = {},
  rest: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: { title: id, version: '1.0.0' },
    paths: {},
    ...rest,
    'x-svc-api-gateway': {
      info: { id, name: id, state: { active: true } },
      upstream: { url: 'http://127.0.0.1:9' },
      server: { listenPath: { value: `/${id}/`, strip: true } },
      ...ext,
    },
    'x-svc-streaming': { streams },
  };
}

/** The arguments of an in-process gateway that serves streams (one worker: one Bento). */
export const STREAMING = ['--streaming-enabled', '--workers', '1'];

/** Writes a streams document through the management API (asserted 200) and reloads. */
export async function addStreams(gw: GatewayClient, doc: Record<string, unknown>): Promise<void> {
  const res = await gw.admin('POST', '/svc/apis/oas', doc);
  assert.equal(res.status, 200, res.text);
  await gw.reload();
}

/** A local HTTP server recording each body it is sent and when (an `http_client` output's target). */
export interface ArrivalServer {
  url: string;
  /** What arrived, in order; a test may empty it. */
  arrivals: { at: number; body: string }[];
  close(): void;
}

/** Starts an ArrivalServer on a free port; it answers 200 to everything. */
export async function startArrivalServer(): Promise<ArrivalServer> {
  const arrivals: ArrivalServer['arrivals'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrivals.push({ at: Date.now(), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200);
      res.end();
    });
  });
  return {
    url: await listenLocal(server),
    arrivals,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * A streaming in-process gateway (STREAMING) and an ArrivalServer for the tests of the enclosing
 * `describe`: started before them, stopped after.
 */
export function streamingWithArrivals(): { gw: InProcessGateway; server: ArrivalServer } {
  const s = {} as { gw: InProcessGateway; server: ArrivalServer };
  before(async () => {
    s.gw = await startGateway({ argv: STREAMING });
    s.server = await startArrivalServer();
  });
  after(async () => {
    await s.gw.stop();
    s.server.close();
  });
  return s;
}
