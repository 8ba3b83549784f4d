/**
 * The connection-level fast path (server/fast-path/), over raw sockets: keep-alive and
 * pipelining, response framings, request bodies, what falls back to node:http (and that the
 * hand-off keeps the bytes already read), malformed heads, upstream failures and client aborts;
 * then compiled chains on it (authentication, strip_auth_data, refusals between pipelined
 * requests, unread bodies, thrown errors, response headers, the request observer, route tables
 * retired under running requests), each compared with node:http (`--fast-path=false`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { reject } from '../pipeline/compose.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { chain as defaultChain } from '../routes/chain.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { basicAuth, type Res } from '../testing/client.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { rights } from '../testing/limits.ts';

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
      case '/bad-cr':
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-a: 1\rx-b: 2\r\n\r\nok');
        return;
      case '/bad-lf':
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-a: 1\nx-b: 2\r\n\r\nok');
        return;
      case '/bad-fold':
        s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-a: 1\r\n x-b: 2\r\n\r\nok');
        return;
      case '/bad-te-cl':
        s.write(
          'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
        );
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
const last = (path: string, method = 'GET', extra = ''): string =>
  `${method} ${path} HTTP/1.1\r\nhost: gw.test\r\n${extra}connection: close\r\n\r\n`;

/** Runs `fn` and returns how many requests the fast path served and handed off meanwhile. */
async function counted<T>(fn: () => Promise<T>): Promise<{ value: T; fast: number; handoffs: number }> {
  const r = fastPathStats.requests;
  const h = fastPathStats.handoffs;
  const value = await fn();
  return { value, fast: fastPathStats.requests - r, handoffs: fastPathStats.handoffs - h };
}

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
    await gw.addApi(
      keyless('bodyauth', '/bodyauth/', echo.url, {
        use_keyless: false,
        use_basic_auth: true,
        basic_auth: {
          extract_from_body: true,
          body_user_regexp: 'u=(\\w+)',
          body_password_regexp: 'p=(\\w+)',
        },
      }),
    );
    await gw.addApi(keyless('dead', '/dead/', `http://127.0.0.1:${String(dead)}`));
    await gw.reload();
  });
  after(async () => {
    await stopAll(gw, up, echo);
  });

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

  /**
   * Smuggling probes: heads the fast path must leave to node:http, which refuses them. The
   * connection is handed off (nothing served here), node:http answers, and nothing reaches the
   * upstream (not the request, not one hidden in its body). head-parser.test.ts has the full
   * table of head classes; these are the ones a client can use to make two parsers disagree.
   */
  const refused: { name: string; raw: string; status: number }[] = [
    {
      name: 'a line without a colon',
      raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n',
      status: 400,
    },
    { name: 'obs-fold', raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nx-a: 1\r\n folded\r\n\r\n', status: 400 },
    {
      name: 'conflicting Content-Length',
      raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n',
      status: 400,
    },
    {
      name: 'duplicate Content-Length, same value',
      raw: 'POST /raw/x HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nhi',
      status: 400,
    },
    {
      name: 'Transfer-Encoding and Content-Length, a request hidden in the body',
      raw:
        'POST /raw/x HTTP/1.1\r\nhost: x\r\ncontent-length: 41\r\ntransfer-encoding: chunked\r\n\r\n' +
        '0\r\n\r\nGET /raw/smuggled HTTP/1.1\r\nhost: x\r\n\r\n',
      status: 400,
    },
    {
      name: 'Transfer-Encoding: chunked, identity',
      raw: 'POST /raw/x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, identity\r\n\r\n0\r\n\r\n',
      status: 400,
    },
    {
      name: 'space before the colon of Transfer-Encoding, with Content-Length',
      raw:
        'POST /raw/x HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding : chunked\r\n\r\n' +
        '0\r\n\r\n',
      status: 400,
    },
    { name: 'space before a colon', raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nx-a : 1\r\n\r\n', status: 400 },
    { name: 'invalid name character', raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nx(a): 1\r\n\r\n', status: 400 },
    {
      name: 'a control character in a value',
      raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nx: \x01\r\n\r\n',
      status: 400,
    },
    { name: 'NUL in a value', raw: 'GET /raw/x HTTP/1.1\r\nhost: x\r\nx-a: a\x00b\r\n\r\n', status: 400 },
    { name: 'NUL in the target', raw: 'GET /raw/x\x00 HTTP/1.1\r\nhost: x\r\n\r\n', status: 400 },
    { name: 'a space in the target', raw: 'GET /raw/ x HTTP/1.1\r\nhost: x\r\n\r\n', status: 400 },
    { name: 'obs-text in the target', raw: 'GET /raw/caf\xe9 HTTP/1.1\r\nhost: x\r\n\r\n', status: 400 },
    { name: 'bare CR', raw: 'GET /raw/x HTTP/1.1\rhost: x\r\n\r\n', status: 400 },
    { name: 'bare LF line ends', raw: 'GET /raw/x HTTP/1.1\nhost: x\n\n', status: 400 },
    { name: 'bare LF before the final CRLF', raw: 'GET /raw/x HTTP/1.1\r\nhost: x\n\r\n', status: 400 },
    { name: 'no Host', raw: 'GET /raw/x HTTP/1.1\r\nx-no-host: 1\r\n\r\n', status: 400 },
    {
      // Too large, not malformed: 431 (RFC 6585), from the listeners' clientError handler.
      name: 'a head over 16 KiB',
      raw: `GET /raw/x HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(17_000)}\r\n\r\n`,
      status: 431,
    },
    {
      name: 'a TLS ClientHello on the plain port',
      raw: '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
      status: 400,
    },
  ];
  for (const row of refused) {
    test(`handed to node:http and refused there: ${row.name}`, { timeout: 5_000 }, async () => {
      const seen = up.seen.length;
      const { value, fast, handoffs } = await counted(() => exchange(gw.port, row.raw));
      assert.deepEqual(statuses(value), [row.status], JSON.stringify(value));
      assert.deepEqual([fast, handoffs], [0, 1]);
      assert.equal(up.seen.length, seen, 'nothing reached the upstream');
    });
  }

  test('a head over 16 KiB: 431 with the JSON error body, and the connection closed', async () => {
    const value = await exchange(
      gw.port,
      `GET /raw/x HTTP/1.1\r\nhost: x\r\n${'x-h: aaaaaaaaaa\r\n'.repeat(1_200)}\r\n`,
    );
    const [head = '', body] = value.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    assert.match(head, /\r\ncontent-type: application\/json\r\n/);
    assert.match(head, /\r\nconnection: close\r\n/);
    assert.deepEqual(JSON.parse(body ?? ''), { error: 'Request Header Fields Too Large' });
  });

  test('heads node:http serves and the fast path leaves to it: absolute-form, CRLF first, HTTP/1.0 keep-alive', async () => {
    const { value, fast, handoffs } = await counted(() =>
      exchange(gw.port, [
        'GET http://x/raw/absolute HTTP/1.1\r\nhost: x\r\n\r\n',
        '\r\nGET /raw/crlf HTTP/1.1\r\nhost: x\r\n\r\n',
        'GET /raw/ten HTTP/1.0\r\nhost: x\r\nconnection: keep-alive\r\n\r\n',
        last('/raw/after'),
      ]),
    );
    assert.deepEqual(statuses(value), [200, 200, 200, 200]);
    assert.deepEqual(
      [...value.matchAll(/GET (\/[a-z]+)/g)].map((m) => m[1]),
      ['/absolute', '/crlf', '/ten', '/after'],
    );
    assert.deepEqual([fast, handoffs], [0, 1]);
  });

  /**
   * Upstream responses node:http's client refuses (502 on that path): the fast path answers 502
   * too, and nothing of them reaches the client (not a header hidden behind a bare CR or LF or an
   * obs-fold, not a response framed both by Transfer-Encoding and Content-Length).
   */
  for (const path of ['/bad-cr', '/bad-lf', '/bad-fold', '/bad-te-cl']) {
    test(`upstream response node:http refuses, ${path}: 502 JSON, nothing of it relayed`, async () => {
      const { value, fast } = await counted(() => exchange(gw.port, last(`/raw${path}`)));
      assert.equal(fast, 1);
      assert.deepEqual(statuses(value), [502], JSON.stringify(value));
      assert.ok(value.endsWith('{"error":"There was a problem proxying the request"}'), value);
      assert.doesNotMatch(value, /x-b|x-a|transfer-encoding/i);
    });
  }

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

  test('hand-off to node:http for a route with a body-reading middleware, after a fast-path request on the same connection', async () => {
    const { value, fast, handoffs } = await counted(() =>
      exchange(gw.port, get('/raw/first') + get('/bodyauth/x') + last('/echo/third')),
    );
    assert.deepEqual(statuses(value), [200, 401, 200]);
    assert.match(value, /GET \/first/);
    assert.ok(value.includes('{"error":"Authorization field missing"}'));
    assert.match(value, /www-authenticate: Basic realm="bodyauth"/i);
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

/**
 * Writes `first` on a new connection; once a whole response has come back, writes `then`, and
 * reads until the gateway closes the connection. Fails when the connection hangs instead.
 */
function converse(port: number, first: string, then: string, ms = 5_000): Promise<string> {
  return new Promise((resolve, rejectHang) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    let sent = false;
    const timer = setTimeout(() => {
      s.destroy();
      rejectHang(new Error(`the connection hung after ${JSON.stringify(text)}`));
    }, ms);
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      text += d;
      const end = text.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(text);
      if (!sent && end !== -1 && len !== null && text.length >= end + 4 + Number(len[1])) {
        sent = true;
        s.write(then);
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    s.on('connect', () => {
      s.write(first);
    });
  });
}

/** `obj` without `keys`. */
function omit<T extends object>(obj: T, ...keys: string[]): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => !keys.includes(k))) as Partial<T>;
}

/** What must be the same on both entrances: status, headers (but the connection's), body. */
function comparable(res: Res): unknown {
  const echoed = res.json as Partial<Echoed> | undefined;
  const body =
    echoed?.upstream === undefined
      ? res.text
      : { ...echoed, headers: omit(echoed.headers ?? {}, 'connection') };
  return { status: res.status, headers: omit(res.headers, 'date', 'connection', 'keep-alive'), body };
}

describe('fast path: compiled chains, answered as node:http answers', () => {
  let echo: Echo;
  let fast: InProcessGateway;
  let plain: InProcessGateway;
  const observed = { fast: [] as number[], plain: [] as number[] };
  const started = { fast: 0, plain: 0 };
  let closed = 0;

  /** A middleware of the APIs named `t-...`: adds a response header, refuses or throws by path. */
  const probe: GatewayMiddleware = {
    name: 'probe',
    enabled: (api) => api.name.startsWith('t-'),
    create: () => ({
      handle: async (ctx, next) => {
        ctx.responseHeaders['x-probe'] = 'yes';
        if (ctx.path.endsWith('/throw')) throw new Error('probe failure');
        if (ctx.path.endsWith('/inject')) ctx.headers['x-injected'] = 'a\r\nx-smuggled: 1';
        if (ctx.path.endsWith('/refuse')) {
          return reject(ctx, new GatewayError('GW_ERR_PROBE', 429, 'Probe refused', { 'retry-after': '7' }));
        }
        await next();
        return undefined;
      },
      close: () => {
        closed++;
      },
    }),
  };
  const observer = (which: 'fast' | 'plain'): Parameters<typeof startGateway>[0] & object => ({
    chain: [...defaultChain, probe],
    observer: {
      onRequest: () => {
        started[which]++;
      },
      onResponse: (_ctx, status) => {
        observed[which].push(status);
      },
    },
  });
  const auth = 'authorization: fast-key\r\n';
  before(async () => {
    echo = await startEcho('echo');
    fast = await startGateway({ argv: ['--fast-path'], ...observer('fast') });
    const keyed = (
      id: string,
      listenPath: string,
      extra: Record<string, unknown> = {},
    ): Record<string, unknown> => keyless(id, listenPath, echo.url, { use_keyless: false, ...extra });
    for (const api of [
      keyed('tok', '/tok/'),
      keyed('strip', '/strip/', {
        strip_auth_data: true,
        auth: { use_param: true, param_name: 'key', use_cookie: true, cookie_name: 'sid' },
      }),
      keyed('basic', '/basic/', { use_basic_auth: true, org_id: 'acme' }),
      keyed('body', '/body/', {
        use_basic_auth: true,
        org_id: 'acme',
        basic_auth: {
          extract_from_body: true,
          body_user_regexp: 'u=(\\w+)',
          body_password_regexp: 'p=(\\w+)',
        },
      }),
      keyless('t-probe', '/t/', echo.url),
    ])
      await fast.addApi(api);
    for (const [key, body] of [
      ['fast-key', { org_id: '', access_rights: rights('tok', 'strip') }],
      ['other-key', { org_id: '', access_rights: rights('basic') }],
      [
        'alice',
        { org_id: 'acme', basic_auth_data: { password: 'pw1' }, access_rights: rights('basic', 'body') },
      ],
    ] as const) {
      const res = await fast.admin('POST', `/svc/keys/${key}`, body);
      assert.equal(res.status, 200, res.text);
    }
    await fast.reload();
    // node:http alone, on the same stored APIs and keys.
    plain = await startGateway({ argv: ['--fast-path=false'], dataDir: fast.dataDir, ...observer('plain') });
  });
  after(async () => {
    await stopAll(fast, plain, echo);
  });

  const cases: { name: string; path: string; headers?: Record<string, string>; status: number }[] = [
    { name: 'token missing', path: '/tok/a', status: 401 },
    { name: 'token unknown', path: '/tok/a', headers: { authorization: 'nobody' }, status: 403 },
    { name: 'key without this API', path: '/tok/a', headers: { authorization: 'other-key' }, status: 403 },
    { name: 'token', path: '/tok/a?x=1', headers: { authorization: 'fast-key' }, status: 200 },
    { name: 'bearer token', path: '/tok/b', headers: { authorization: 'Bearer fast-key' }, status: 200 },
    { name: 'basic auth missing', path: '/basic/a', status: 401 },
    { name: 'basic auth malformed', path: '/basic/a', headers: { authorization: 'Basic !' }, status: 400 },
    {
      name: 'basic auth wrong password',
      path: '/basic/a',
      headers: { authorization: basicAuth('alice', 'nope') },
      status: 401,
    },
    {
      name: 'basic auth',
      path: '/basic/a',
      headers: { authorization: basicAuth('alice', 'pw1') },
      status: 200,
    },
    { name: 'refused by middleware: its headers and the response headers', path: '/t/refuse', status: 429 },
    { name: 'response headers added to the relayed response', path: '/t/ok', status: 200 },
  ];
  for (const c of cases) {
    test(`${c.name}: ${String(c.status)} on the fast path, as on node:http`, async () => {
      const req = { path: c.path, fresh: true, headers: { host: 'gw.test', ...c.headers } };
      const { value, fast: n, handoffs } = await counted(() => fast.request(req));
      assert.equal(n, 1, 'served by the fast path');
      assert.equal(handoffs, 0);
      assert.equal(value.status, c.status, value.text);
      assert.deepEqual(comparable(value), comparable(await plain.request(req)));
    });
  }

  test('the answers carry what the chain set', async () => {
    const refused = await fast.request({ path: '/t/refuse' });
    assert.equal(refused.text, '{"error":"Probe refused"}');
    assert.equal(refused.headers['retry-after'], '7');
    assert.equal(refused.headers['x-probe'], 'yes');
    assert.equal(refused.headers['content-type'], 'application/json');
    const relayed = await fast.request({ path: '/t/ok' });
    assert.equal(relayed.headers['x-probe'], 'yes');
    assert.equal(relayed.headers['x-upstream'], 'echo');
    const missing = await fast.request({ path: '/basic/a' });
    assert.equal(missing.headers['www-authenticate'], 'Basic realm="basic"');
  });

  test('a handler that throws: 500 naming an error ID, on both entrances', async () => {
    for (const gw of [fast, plain]) {
      const { value, fast: n } = await counted(() => gw.request({ path: '/t/throw', fresh: true }));
      assert.equal(n, gw === fast ? 1 : 0);
      assert.equal(value.status, 500);
      assert.match(value.text, /^\{"error":"Internal error \(ID [0-9a-f-]{36}\)"\}$/);
      assert.equal(value.headers['x-probe'], 'yes');
    }
  });

  test('a header the chain made unsendable is never sent: 500, as for any error of the chain', async () => {
    const { value, fast: n } = await counted(() => fast.request({ path: '/t/inject', fresh: true }));
    assert.equal(n, 1);
    assert.equal(value.status, 500);
    assert.match(value.text, /^\{"error":"Internal error \(ID [0-9a-f-]{36}\)"\}$/);
  });

  test('strip_auth_data on the fast path: the credential never reaches the upstream', async () => {
    const cases: { path: string; headers: Record<string, string>; check: (e: Echoed) => void }[] = [
      {
        path: '/strip/h',
        headers: { authorization: 'fast-key', 'x-keep': '1' },
        check: (e) => {
          assert.equal(e.headers.authorization, undefined);
          assert.equal(e.headers['x-keep'], '1');
        },
      },
      {
        path: '/strip/q?a=1&key=fast-key&b=2',
        headers: {},
        check: (e) => {
          assert.equal(e.query, 'a=1&b=2');
        },
      },
      {
        path: '/strip/c',
        headers: { cookie: 'a=1; sid=fast-key; b=2' },
        check: (e) => {
          assert.equal(e.headers.cookie, 'a=1; b=2');
        },
      },
    ];
    for (const c of cases) {
      const req = { path: c.path, headers: { host: 'gw.test', ...c.headers }, fresh: true };
      const { value, fast: n } = await counted(() => fast.request(req));
      assert.equal(n, 1, c.path);
      assert.equal(value.status, 200, value.text);
      c.check(value.json as Echoed);
      assert.deepEqual(comparable(value), comparable(await plain.request(req)), c.path);
    }
  });

  test('an API whose basic auth reads the body never takes the fast path', async () => {
    const ok = await counted(() =>
      fast.request({ method: 'POST', path: '/body/x', body: 'u=alice&p=pw1', fresh: true }),
    );
    assert.equal(ok.value.status, 200, ok.value.text);
    assert.equal((ok.value.json as Echoed).body, 'u=alice&p=pw1');
    assert.deepEqual([ok.fast, ok.handoffs], [0, 1]);
    const refused = await counted(() =>
      fast.request({ method: 'POST', path: '/body/x', body: 'u=alice', fresh: true }),
    );
    assert.equal(refused.value.status, 401);
    assert.deepEqual([refused.fast, refused.handoffs], [0, 1]);
  });

  test('pipelined requests: refusals between accepted ones, each answered in order', async () => {
    const raw =
      get('/tok/1', auth) +
      get('/tok/2') +
      'POST /tok/3 HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 5\r\n\r\nhello' +
      last('/tok/4', 'GET', auth);
    const { value, fast: n, handoffs } = await counted(() => exchange(fast.port, raw));
    assert.deepEqual(statuses(value), [200, 401, 401, 200]);
    assert.deepEqual(
      [...value.matchAll(/"path":"([^"]+)"/g)].map((m) => m[1]),
      ['/tok/1', '/tok/4'],
    );
    // The refused POST's body was all there: dropped, and the connection goes on. (node:http
    // closes the connection after it when its parser has not reached the end of that body.)
    assert.deepEqual([n, handoffs], [4, 0]);
  });

  test('a refusal before the body has arrived closes the connection, on both entrances', async () => {
    const head = 'POST /tok/u HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 100000\r\n\r\n';
    for (const gw of [fast, plain]) {
      const text = await converse(gw.port, `${head}${'x'.repeat(10)}`, get('/tok/next', auth));
      assert.deepEqual(statuses(text), [401], text);
      assert.match(text, /connection: close/i);
    }
  });

  test('node:http: 413 for a body too large to read whole closes the connection', async () => {
    const head = 'POST /body/x HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 3000000\r\n\r\n';
    const text = await converse(fast.port, `${head}${'u'.repeat(1_100_000)}`, get('/tok/next', auth));
    assert.deepEqual(statuses(text), [413], text);
    assert.match(text, /connection: close/i);
  });

  test('the observer sees every request on both entrances', async () => {
    for (const which of ['fast', 'plain'] as const) {
      const gw = which === 'fast' ? fast : plain;
      observed[which] = [];
      started[which] = 0;
      for (const path of ['/t/ok', '/t/refuse', '/t/throw', '/tok/a'])
        await gw.request({ path, fresh: true });
      await waitFor(`the ${which} observer`, () => observed[which].length === 4);
      assert.equal(started[which], 4);
      assert.deepEqual(observed[which], [200, 429, 500, 401], which);
    }
  });

  test('a retired route table keeps its middleware open until its fast-path request has finished', async () => {
    const before = closed;
    const held = counted(() => fast.request({ path: '/t/hold', fresh: true }));
    await waitFor('the request to reach the upstream', () => echo.held() === 1);
    // The API changes, so the reload compiles it again and retires the route serving the request.
    const update = await fast.admin(
      'PUT',
      '/svc/apis/t-probe',
      keyless('t-probe', '/t/', echo.url, { tags: ['v2'] }),
    );
    assert.equal(update.status, 200, update.text);
    await fast.reload();
    assert.equal(closed, before, 'middleware closed under a running request');
    echo.release();
    const { value, fast: n } = await held;
    assert.equal(value.status, 200);
    assert.equal(n, 1);
    await waitFor('the retired middleware to close', () => closed > before);
  });
});
