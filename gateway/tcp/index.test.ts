/**
 * TCP and TLS APIs through a real gateway, against a real TCP upstream (a throw-away
 * redis-server spoken to in RESP): bytes piped both ways, TLS terminated with the API's
 * certificate, IP allow and block lists and the API-wide rate limit per connection (a refused
 * connection is reset before the upstream sees a byte), port clashes refused at write time by
 * field, and the port opening and closing with reloads.
 */
import assert from 'node:assert/strict';
import { connect as connectTcp, createServer, type Socket } from 'node:net';
import { connect as connectTls, TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';
import { selfSignedCert } from '../testing/certs.ts';
import { makeCert } from '../testing/client-certs.ts';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

/** What a client saw on one connection: the bytes it read, and how it ended. */
interface Seen {
  data: string;
  error: string | undefined;
}

/**
 * Opens a connection (TLS when `tls` is given), sends `commands` one after the other, each once
 * the answer to the one before has come (`expect` replies, or the connection ended), and returns
 * everything read.
 */
function talk(
  port: number,
  commands: string[],
  tls?: { ca: string | Buffer; servername: string; peer?: (fingerprint: string) => void },
): Promise<Seen> {
  return new Promise((resolve) => {
    let data = '';
    let error: string | undefined;
    let sent = 0;
    const socket: Socket =
      tls === undefined
        ? connectTcp({ port, host: '127.0.0.1' })
        : connectTls({ port, host: '127.0.0.1', ca: tls.ca, servername: tls.servername });
    const next = (): void => {
      const c = commands[sent++];
      if (c === undefined) socket.end();
      else socket.write(`${c}\r\n`);
    };
    socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
      if (socket instanceof TLSSocket) {
        const fp = socket.getPeerCertificate().fingerprint256;
        tls?.peer?.(fp.replaceAll(':', '').toLowerCase());
      }
      next();
    });
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString();
      if (data.endsWith('\r\n')) next();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => {
      resolve({ data, error });
    });
    socket.setTimeout(20_000, () => socket.destroy(new Error('timed out')));
  });
}

/**
 * A connection the gateway reset: nothing read, and the reset seen on the read (ECONNRESET) or, when
 * it came before the client's first write went out, on that write (EPIPE).
 */
function assertReset(seen: Seen): void {
  assert.equal(seen.data, '');
  assert.ok(
    seen.error === 'ECONNRESET' || seen.error === 'EPIPE',
    `expected a reset, got ${String(seen.error)}`,
  );
}

/** A TCP API as the reference operator's sample writes it. */
function tcpApi(
  id: string,
  port: number,
  target: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    api_id: id,
    org_id: 'org1',
    name: id,
    protocol: 'tcp',
    active: true,
    listen_port: port,
    proxy: { target_url: target },
    ...extra,
  };
}

describe('TCP and TLS APIs', () => {
  let redis: TestRedis;
  let gw: InProcessGateway;
  const serverCert = selfSignedCert();
  let upstream = '';

  before(async () => {
    redis = await startRedis();
    upstream = `tcp://127.0.0.1:${redis.port}`;
    gw = await startGateway({
      argv: ['--tls-cert', serverCert.certFile, '--tls-key', serverCert.keyFile],
      tls: serverCert,
    });
  });
  after(async () => {
    await stopAll(gw, redis);
  });

  test('bytes both ways: RESP through the API port, as directly', async () => {
    const port = await freePort();
    await gw.addApi(tcpApi('redis-tcp', port, upstream));
    await gw.reload();
    const commands = ['PING', 'SET greeting hello', 'GET greeting'];
    const through = await talk(port, commands);
    assert.equal(through.data, '+PONG\r\n+OK\r\n$5\r\nhello\r\n');
    assert.equal(through.error, undefined);
    assert.deepEqual(await talk(redis.port, commands), through);
    // The definition is listed as written, with the model's empty listen path.
    const stored = await gw.admin('GET', '/svc/apis/redis-tcp');
    assert.equal((stored.json as { proxy: { listen_path: string } }).proxy.listen_path, '');
  });

  test('deleted and reloaded: the port refuses connections', async () => {
    const port = await freePort();
    await gw.addApi(tcpApi('redis-gone', port, upstream));
    await gw.reload();
    assert.equal((await talk(port, ['PING'])).data, '+PONG\r\n');
    assert.equal((await gw.admin('DELETE', '/svc/apis/redis-gone')).status, 200);
    await gw.reload();
    const after = await talk(port, ['PING']);
    assert.deepEqual(after, { data: '', error: 'ECONNREFUSED' });
  });

  test('tls: terminated with the API certificate, plain bytes upstream', async () => {
    const cert = await makeCert('sessions.tls.example');
    const up = await gw.admin('POST', '/svc/certs?org_id=org1', cert.cert + cert.key);
    assert.equal(up.status, 200, up.text);
    const port = await freePort();
    await gw.addApi(
      tcpApi('redis-tls', port, upstream, { protocol: 'tls', certificates: [`org1${cert.fingerprint}`] }),
    );
    await gw.reload();
    let presented = '';
    const seen = await talk(port, ['PING'], {
      ca: cert.cert,
      servername: 'sessions.tls.example',
      peer: (fp) => (presented = fp),
    });
    assert.equal(seen.data, '+PONG\r\n');
    assert.equal(presented, cert.fingerprint);
    // A plain client gets no RESP answer from a TLS port.
    assert.notEqual((await talk(port, ['PING'])).data, '+PONG\r\n');
  });

  test("tls without certificates of its own: the gateway's", async () => {
    const port = await freePort();
    await gw.addApi(tcpApi('redis-tls-default', port, upstream, { protocol: 'tls' }));
    await gw.reload();
    const seen = await talk(port, ['PING'], { ca: serverCert.cert, servername: 'localhost' });
    assert.equal(seen.data, '+PONG\r\n');
  });

  const refusals = [
    {
      name: 'allow list without the client: reset',
      extra: { enable_ip_whitelisting: true, allowed_ips: ['10.1.2.3', '192.168.0.0/16'] },
      served: false,
    },
    {
      name: 'allow list with the client: served',
      extra: { enable_ip_whitelisting: true, allowed_ips: ['127.0.0.0/8'] },
      served: true,
    },
    {
      name: 'block list with the client: reset',
      extra: { enable_ip_blacklisting: true, blacklisted_ips: ['127.0.0.1'] },
      served: false,
    },
    {
      name: 'block list without the client: served',
      extra: { enable_ip_blacklisting: true, blacklisted_ips: ['10.0.0.0/8'] },
      served: true,
    },
  ];
  for (const c of refusals) {
    test(`ip lists: ${c.name}`, async () => {
      const port = await freePort();
      const id = `redis-ip-${refusals.indexOf(c)}`;
      await gw.addApi(tcpApi(id, port, upstream, c.extra));
      await gw.reload();
      const seen = await talk(port, ['PING']);
      if (c.served) assert.deepEqual(seen, { data: '+PONG\r\n', error: undefined });
      else assertReset(seen);
    });
  }

  test('global_rate_limit counts connections, not the commands on them', async () => {
    const port = await freePort();
    await gw.addApi(tcpApi('redis-limited', port, upstream, { global_rate_limit: { rate: 2, per: 60 } }));
    await gw.reload();
    const many = ['PING', 'PING', 'PING', 'PING', 'PING'];
    assert.equal((await talk(port, many)).data, '+PONG\r\n'.repeat(5));
    assert.equal((await talk(port, many)).data, '+PONG\r\n'.repeat(5));
    assertReset(await talk(port, ['PING']));
  });

  test('a port another process holds: that API is left out, named, and the one beside it serves', async () => {
    const held = await freePort();
    const free = await freePort();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(held, '127.0.0.1', resolve));
    try {
      await gw.addApi(tcpApi('redis-held', held, upstream));
      await gw.addApi(tcpApi('redis-free', free, upstream));
      const res = await gw.admin('GET', '/svc/reload');
      assert.equal(res.status, 200);
      assert.match(
        (res.json as { message: string }).message,
        new RegExp(
          `left out: API redis-held: listen_port: port ${String(held)}: cannot listen: .*EADDRINUSE`,
        ),
      );
      assert.equal((await talk(free, ['PING'])).data, '+PONG\r\n');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    await gw.reload();
    assert.equal((await talk(held, ['PING'])).data, '+PONG\r\n', 'served once the port is free');
    for (const id of ['redis-held', 'redis-free'])
      assert.equal((await gw.admin('DELETE', `/svc/apis/${id}`)).status, 200);
    await gw.reload();
  });

  test('an upstream that refuses: the client connection is closed', async () => {
    const port = await freePort();
    const dead = await freePort();
    await gw.addApi(tcpApi('redis-dead', port, `tcp://127.0.0.1:${dead}`));
    await gw.reload();
    assert.equal((await talk(port, ['PING'])).data, '');
  });

  describe('refused at write time, by field', () => {
    const clashes: {
      name: string;
      def: (port: number) => Record<string, unknown>;
      field: string;
    }[] = [
      {
        name: 'another tcp API on the port',
        def: (p) => tcpApi('clash-tcp', p, upstream),
        field: 'listen_port: port',
      },
      {
        name: 'an http API on the port',
        def: (p) => ({
          api_id: 'clash-http',
          name: 'clash-http',
          use_keyless: true,
          protocol: 'http',
          listen_port: p,
          proxy: { listen_path: '/x/', target_url: 'http://127.0.0.1:1' },
        }),
        field: 'listen_port: port',
      },
      {
        name: 'an HTTP-only setting',
        def: (p) => tcpApi('http-only', p + 1, upstream, { use_basic_auth: true }),
        field: 'use_basic_auth: Forbidden',
      },
      {
        name: 'a listen path',
        def: (p) =>
          tcpApi('listen-path', p + 1, upstream, { proxy: { listen_path: '/r/', target_url: upstream } }),
        field: 'proxy.listen_path: Forbidden',
      },
      {
        name: 'an http upstream',
        def: (p) => tcpApi('http-upstream', p + 1, 'http://127.0.0.1:1'),
        field: 'proxy.target_url: Unsupported value',
      },
      {
        name: 'no listen_port',
        def: () => tcpApi('no-port', 0, upstream),
        field: 'listen_port: Required value',
      },
    ];
    let port = 0;
    before(async () => {
      port = await freePort();
      await gw.addApi(tcpApi('owner', port, upstream));
    });
    for (const c of clashes) {
      test(c.name, async () => {
        const res = await gw.admin('POST', '/svc/apis', c.def(port));
        assert.equal(res.status, 400, res.text);
        const message = (res.json as { message: string }).message;
        assert.ok(message.includes(c.field), message);
      });
    }
  });
});

describe('tls: the handshake comes first, within tls_handshake_timeout_ms', () => {
  const cert = selfSignedCert();
  let gw: InProcessGateway;
  /** A real upstream listener that counts the connections made to it and answers each with OK. */
  let accepted = 0;
  const upstream = createServer((s) => {
    accepted++;
    s.on('error', () => s.destroy());
    s.end('OK\n');
  });

  before(async () => {
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    gw = await startGateway({
      argv: ['--tls-cert', cert.certFile, '--tls-key', cert.keyFile, '--tls-handshake-timeout-ms', '500'],
      tls: cert,
    });
  });
  after(async () => {
    try {
      await stopAll(gw);
    } finally {
      await new Promise<void>((resolve) =>
        upstream.close(() => {
          resolve();
        }),
      );
    }
  });

  test('a client that opens TCP and never sends a ClientHello is closed after the timeout; no upstream connection is made', async () => {
    const port = await freePort();
    const address = upstream.address();
    assert.ok(address !== null && typeof address === 'object');
    await gw.addApi(tcpApi('hs', port, `tcp://127.0.0.1:${String(address.port)}`, { protocol: 'tls' }));
    await gw.reload();
    const t0 = Date.now();
    const closedIn = await new Promise<number>((resolve, reject) => {
      const s = connectTcp({ port, host: '127.0.0.1' });
      s.on('error', () => undefined);
      s.on('close', () => {
        resolve(Date.now() - t0);
      });
      s.setTimeout(10_000, () => {
        s.destroy();
        reject(new Error('the gateway kept a silent connection open for 10 s'));
      });
    });
    assert.ok(closedIn >= 400, `closed after ${String(closedIn)} ms, before the timeout`);
    assert.equal(accepted, 0, 'the upstream was dialled before the handshake');
    // A client that completes its handshake is served: one upstream connection.
    const seen = await talk(port, [], { ca: cert.cert, servername: 'localhost' });
    assert.equal(seen.data, 'OK\n');
    assert.equal(accepted, 1);
  });
});

describe('TCP API ports beside the gateway own ports', () => {
  test('the gateway port, the control port and https_port are refused with 400 naming listen_port', async () => {
    const cert = selfSignedCert();
    const main = await freePort();
    const control = await freePort();
    const https = await freePort();
    const gw = await startGateway({
      argv: [
        '--tls-cert',
        cert.certFile,
        '--tls-key',
        cert.keyFile,
        '--port',
        String(main),
        '--control-port',
        String(control),
        '--https-port',
        String(https),
      ],
      tls: cert,
    });
    try {
      assert.equal(gw.port, main);
      for (const port of [main, control, https]) {
        const res = await gw.admin('POST', '/svc/apis', tcpApi(`own-${port}`, port, 'tcp://127.0.0.1:6379'));
        assert.equal(res.status, 400, res.text);
        assert.match((res.json as { message: string }).message, /listen_port: Invalid value: \d+ is the/);
      }
    } finally {
      await gw.stop();
    }
  });
});
