/**
 * The connection-level fast path (server/fast-path.ts), over raw sockets: keep-alive and
 * pipelining, response framings, request bodies, what falls back to node:http (and that the
 * hand-off keeps the bytes already read), malformed heads, upstream failures and client aborts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { fastPathStats } from '../server/fast-path.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';

/** One request a raw upstream received. */
interface Seen {
  method: string;
  path: string;
  head: string;
  body: string;
}

/**
 * An upstream answering with raw bytes by path, so every framing can be produced. It reads
 * requests with Content-Length bodies, and counts connections.
 */
async function rawUpstream(): Promise<{
  port: number;
  seen: Seen[];
  connections: () => number;
  closed: () => number;
  close: () => Promise<void>;
}> {
  const seen: Seen[] = [];
  let connections = 0;
  let closed = 0;
  const sockets = new Set<Socket>();
  const answer = (s: Socket, method: string, path: string): void => {
    switch (path) {
      case '/chunked':
        s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx-kind: chunked\r\n\r\n');
        s.write('5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n');
        return;
      case '/close':
        s.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nclose-delimited body');
        return;
      case '/204':
        s.write('HTTP/1.1 204 No Content\r\nx-kind: 204\r\n\r\n');
        return;
      case '/304':
        s.write('HTTP/1.1 304 Not Modified\r\netag: "v1"\r\n\r\n');
        return;
      case '/head':
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n${method === 'HEAD' ? '' : 'hello'}`);
        return;
      case '/continue':
        s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
        return;
      case '/partial':
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nfirst part');
        return;
      case '/upstream-close':
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
        s.end();
        return;
      default: {
        const body = `${method} ${path}`;
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${String(body.length)}\r\n\r\n${body}`);
      }
    }
  };
  const server: Server = createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('close', () => {
      closed++;
      sockets.delete(s);
    });
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let need: { method: string; path: string; head: string; len: number } | undefined;
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (need === undefined) {
          const end = buf.indexOf('\r\n\r\n');
          if (end === -1) return;
          const head = buf.toString('latin1', 0, end);
          buf = buf.subarray(end + 4);
          const [method = '', path = ''] = (head.split('\r\n')[0] ?? '').split(' ');
          const len = /\r\ncontent-length: *(\d+)/i.exec(head);
          need = { method, path, head, len: len === null ? 0 : Number(len[1]) };
        }
        if (buf.length < need.len) return;
        const body = buf.toString('utf8', 0, need.len);
        buf = buf.subarray(need.len);
        seen.push({ method: need.method, path: need.path, head: need.head, body });
        answer(s, need.method, need.path);
        need = undefined;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    connections: () => connections,
    closed: () => closed,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** Writes `raw` on a new connection and reads until the gateway closes it. */
function exchange(port: number, raw: string | string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const parts = Array.isArray(raw) ? raw : [raw];
    let text = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => (text += d));
    s.on('error', reject);
    s.on('close', () => {
      resolve(text);
    });
    s.on('connect', () => {
      for (const p of parts) s.write(p);
    });
  });
}

/** Response status lines in order. */
function statuses(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
}

const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nhost: gw.test\r\n${extra}\r\n`;
const last = (path: string, method = 'GET'): string =>
  `${method} ${path} HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n`;

describe('fast path', () => {
  let gw: InProcessGateway;
  let up: Awaited<ReturnType<typeof rawUpstream>>;
  let echo: Echo;

  before(async () => {
    up = await rawUpstream();
    echo = await startEcho('echo');
    const dead = await freePort();
    gw = await startGateway({ argv: ['--fast-path', '--upstream-timeout-ms', '300'] });
    await gw.addApi(
      keyless('raw', '/raw/', `http://127.0.0.1:${String(up.port)}`, {}, { strip_listen_path: true }),
    );
    await gw.addApi(keyless('echo', '/echo/', echo.url));
    await gw.addApi(keyless('keyed', '/keyed/', echo.url, { use_keyless: false }));
    await gw.addApi(keyless('dead', '/dead/', `http://127.0.0.1:${String(dead)}`));
    await gw.reload();
  });
  after(async () => {
    await gw.stop();
    await up.close();
    await echo.close();
  });

  /** Runs `fn` and returns how many requests the fast path served and handed off meanwhile. */
  async function counted<T>(fn: () => Promise<T>): Promise<{ value: T; fast: number; handoffs: number }> {
    const r = fastPathStats.requests;
    const h = fastPathStats.handoffs;
    const value = await fn();
    return { value, fast: fastPathStats.requests - r, handoffs: fastPathStats.handoffs - h };
  }

  test('keep-alive: requests on one client connection reuse one upstream connection', async () => {
    const conns = up.connections();
    const { value, fast, handoffs } = await counted(() =>
      exchange(gw.port, [get('/raw/a'), get('/raw/b'), last('/raw/c')]),
    );
    assert.deepEqual(statuses(value), [200, 200, 200]);
    assert.match(value, /GET \/a[\s\S]*GET \/b[\s\S]*GET \/c/);
    assert.equal(fast, 3);
    assert.equal(handoffs, 0);
    assert.ok(up.connections() - conns <= 1, `${String(up.connections() - conns)} upstream connections`);
  });

  test('pipelined requests in one write are answered in order', async () => {
    const { value, fast } = await counted(() =>
      exchange(gw.port, get('/raw/1') + get('/raw/2') + last('/raw/3')),
    );
    assert.deepEqual(statuses(value), [200, 200, 200]);
    const order = [...value.matchAll(/GET \/(\d)/g)].map((m) => m[1]);
    assert.deepEqual(order, ['1', '2', '3']);
    assert.equal(fast, 3);
  });

  test('HEAD: the head with its content-length, no body, and the connection goes on', async () => {
    const text = await exchange(gw.port, `HEAD /raw/head HTTP/1.1\r\nhost: x\r\n\r\n${last('/raw/after')}`);
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /content-length: 5\r\n/i);
    assert.ok(!text.includes('hello'), text);
    assert.match(text, /GET \/after$/);
  });

  test('204 and 304 have no body', async () => {
    const text = await exchange(gw.port, get('/raw/204') + get('/raw/304') + last('/raw/after'));
    assert.deepEqual(statuses(text), [204, 304, 200]);
    assert.match(text, /x-kind: 204/);
    assert.match(text, /etag: "v1"/);
    assert.match(text, /GET \/after$/);
  });

  test('chunked response: the encoding passes through unchanged, the connection goes on', async () => {
    const text = await exchange(gw.port, get('/raw/chunked') + last('/raw/after'));
    assert.deepEqual(statuses(text), [200, 200]);
    assert.ok(text.includes('transfer-encoding: chunked\r\n'), text);
    assert.ok(text.includes('\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n'), text);
    assert.match(text, /GET \/after$/);
  });

  test('close-delimited response: relayed to the end, then the client connection closes', async () => {
    const text = await exchange(gw.port, get('/raw/close') + get('/raw/never'));
    assert.deepEqual(statuses(text), [200]);
    assert.match(text, /connection: close\r\n/);
    assert.ok(text.endsWith('\r\n\r\nclose-delimited body'), text);
  });

  test('1xx from the upstream is skipped, the final response relayed', async () => {
    const text = await exchange(gw.port, last('/raw/continue'));
    assert.deepEqual(statuses(text), [200]);
    assert.ok(text.endsWith('ok'));
  });

  test('upstream Connection: close: relayed, the upstream connection is not reused', async () => {
    const conns = up.connections();
    const text = await exchange(gw.port, get('/raw/upstream-close') + last('/raw/after'));
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /GET \/after$/);
    assert.ok(up.connections() - conns >= 1, 'a new upstream connection after the closed one');
  });

  test('request body with Content-Length: forwarded whole, then the next request', async () => {
    const body = 'x'.repeat(70_000);
    const n = up.seen.length;
    const { value, fast } = await counted(() =>
      exchange(gw.port, [
        `POST /raw/body HTTP/1.1\r\nhost: x\r\ncontent-length: ${String(body.length)}\r\n\r\n${body.slice(0, 10)}`,
        body.slice(10) + last('/raw/after'),
      ]),
    );
    assert.deepEqual(statuses(value), [200, 200]);
    assert.equal(fast, 2);
    assert.equal(up.seen[n]?.body, body);
    assert.equal(up.seen[n + 1]?.path, '/after');
  });

  test('request with a chunked body: falls back to node:http, proxied', async () => {
    const { value, fast, handoffs } = await counted(() =>
      exchange(
        gw.port,
        'POST /echo/c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
      ),
    );
    assert.deepEqual(statuses(value), [200]);
    assert.equal(fast, 0);
    assert.equal(handoffs, 1);
    assert.match(value, /"body":"abc"/);
  });

  test('Expect: 100-continue falls back to node:http', async () => {
    const { value, handoffs } = await counted(() =>
      exchange(
        gw.port,
        'POST /echo/e HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi',
      ),
    );
    assert.equal(handoffs, 1);
    assert.equal(statuses(value).at(-1), 200);
    assert.match(value, /"body":"hi"/);
  });

  test('malformed heads get 400 (from node:http)', async () => {
    for (const raw of [
      'GET /echo/x HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n',
      'GET /echo/x HTTP/1.1\r\nhost: x\r\nx-a: 1\r\n folded\r\n\r\n',
      'GET /echo/x HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n',
      'GET /echo/x HTTP/1.1\r\nhost: x\r\nx: \x01\r\n\r\n',
      'GET /echo/ x HTTP/1.1\r\nhost: x\r\n\r\n',
      'GET /echo/x HTTP/1.1\r\nx-no-host: 1\r\n\r\n',
    ]) {
      const text = await exchange(gw.port, raw);
      assert.deepEqual(statuses(text), [400], JSON.stringify(raw));
    }
  });

  test('upstream down: 502 JSON, and the connection goes on', async () => {
    const text = await exchange(gw.port, get('/dead/x') + last('/raw/after'));
    assert.deepEqual(statuses(text), [502, 200]);
    assert.ok(text.includes('content-type: application/json'));
    assert.ok(text.includes('{"error":"There was a problem proxying the request"}'), text);
  });

  test('upstream timeout: 504 JSON', async () => {
    const text = await exchange(gw.port, last('/echo/hang'));
    assert.deepEqual(statuses(text), [504]);
    assert.ok(text.endsWith('{"error":"Upstream service reached hard timeout."}'), text);
  });

  test('upstream stops mid-body (timeout): the client connection is cut', async () => {
    const text = await exchange(gw.port, get('/raw/partial'));
    assert.deepEqual(statuses(text), [200]);
    assert.ok(text.endsWith('first part'), text);
  });

  test('client disconnect mid-response closes the upstream connection', async () => {
    const closedBefore = up.closed();
    const s = connect(gw.port, '127.0.0.1');
    s.on('error', () => undefined);
    await new Promise<void>((resolve) => {
      s.on('data', () => {
        s.destroy();
        resolve();
      });
      s.write(get('/raw/partial'));
    });
    await waitFor('the upstream connection to close', () => (up.closed() > closedBefore ? true : undefined));
  });

  test('hand-off to node:http for a route with middleware, after a fast-path request on the same connection', async () => {
    const { value, fast, handoffs } = await counted(() =>
      exchange(gw.port, get('/raw/first') + get('/keyed/x') + last('/echo/third')),
    );
    assert.deepEqual(statuses(value), [200, 401, 200]);
    assert.match(value, /GET \/first/);
    assert.ok(value.includes('{"error":"Authorization field missing"}'));
    assert.match(value, /"upstream":"echo"/);
    assert.equal(fast, 1);
    assert.equal(handoffs, 1);
  });

  test('client half-close after pipelined requests: every one answered, then the connection ends', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(gw.port, '127.0.0.1');
      let got = '';
      s.setEncoding('latin1');
      s.on('data', (d: string) => (got += d));
      s.on('error', reject);
      s.on('close', () => {
        resolve(got);
      });
      s.on('connect', () => {
        s.end(get('/raw/h1') + get('/raw/h2'));
      });
    });
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /GET \/h1[\s\S]*GET \/h2$/);
  });

  test('the management API is never served by the fast path', async () => {
    const { value, fast } = await counted(() =>
      exchange(gw.port, 'GET /hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
    );
    assert.deepEqual(statuses(value), [200]);
    assert.equal(fast, 0);
  });

  test('HTTP/1.0 falls back to node:http', async () => {
    const { value, fast } = await counted(() =>
      exchange(gw.port, 'GET /echo/ten HTTP/1.0\r\nhost: x\r\n\r\n'),
    );
    assert.deepEqual(statuses(value), [200]);
    assert.equal(fast, 0);
    const echoed = JSON.parse(value.slice(value.indexOf('\r\n\r\n') + 4)) as Echoed;
    assert.equal(echoed.path, '/echo/ten');
  });
});
