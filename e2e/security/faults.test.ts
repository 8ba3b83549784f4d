/**
 * Issue 30's features under faults, as an outside reviewer tries them against real processes:
 * the gateway (`gateway/main.ts`, its workers), a Redis server as a TCP upstream and a gRPC
 * plugin server of its own (testdata/grpc-plugin-server.ts).
 *
 * - Killed, not stopped: SIGKILL the gateway's workers (or the whole gateway) mid TCP pipe: the
 *   TCP client sees its connection closed, not hung, and the restarted workers serve the port
 *   again. SIGKILL the gRPC plugin server mid call: the request gets the documented 500 within
 *   the plugin time limit, other APIs answer meanwhile, and a restarted server is used again.
 *   A JavaScript hook that loops or ends its worker thread, a virtual endpoint that loops or
 *   runs out of memory: 500 within the time limit, other requests unaffected.
 * - Clients leaving early: mid `oauth/token` body, mid virtual endpoint, mid TLS handshake, mid
 *   TCP connect: the gateway keeps serving, logs no unhandled error, and its open handles and
 *   file descriptors (`/metrics`) come back to where they were.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { startRedis, type TestRedis } from '../../gateway/testing/redis-server.ts';
import {
  freePort,
  startEchoUpstream,
  startNode,
  waitFor,
  type GatewayProc,
  type Proc,
} from '../harness/processes.ts';
import {
  alive,
  backToBaseline,
  openResources,
  request as httpRequest,
  stockApi,
  STOCK_POLICY,
  useSecuritySuite,
  virtualEndpoint,
  virtualVersions,
  within,
  workersOf,
} from './start.ts';

const { dir, closers, admin, gateway } = useSecuritySuite('faults', 'faultsSecretQm4Wz8');
const TIMEOUT_MS = 3000;
/** What a loaded machine may add to the plugin time limit before an answer counts as late. */
const SLACK_MS = 4000;

/** The plugin directory: hooks that answer, loop, or end their worker thread. */
function pluginDir(): string {
  const d = join(dir, 'plugins');
  mkdirSync(d, { recursive: true });
  writeFileSync(
    join(d, 'hooks.ts'),
    `export function ok(): unknown { return { setHeaders: { 'x-ok': '1' } }; }
export function loop(): void { while (true) { /* never returns */ } }
export function die(req: { headers: Record<string, string> }): unknown {
  if (req.headers['x-die'] !== undefined) process.exit(3);
  return {};
}
`,
  );
  return d;
}

/** An API whose POST /x is answered by the virtual endpoint `source` (function `v`). */
function virtualApi(id: string, target: string, source: string): Record<string, unknown> {
  return {
    api_id: id,
    name: id,
    use_keyless: true,
    proxy: { listen_path: `/${id}/`, target_url: target, strip_listen_path: true },
    version_data: virtualVersions(virtualEndpoint('/x', source)),
  };
}

const pluginApi = (id: string, target: string, hooks: Record<string, unknown>): Record<string, unknown> => ({
  api_id: id,
  name: id,
  use_keyless: true,
  custom_middleware: hooks,
  proxy: { listen_path: `/${id}/`, target_url: target, strip_listen_path: true },
});

async function put(gw: GatewayProc, path: string, body: unknown): Promise<void> {
  const r = await httpRequest(gw.url + path, { method: 'POST', headers: admin, body: JSON.stringify(body) });
  assert.equal(r.status, 200, `${path}: ${r.body}`);
}

async function reload(gw: GatewayProc): Promise<void> {
  const r = await httpRequest(`${gw.url}/svc/reload`, { headers: admin });
  assert.equal(r.status, 200, r.body);
}

/** A request, with how long its answer took. */
async function timed(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; ms: number }> {
  const t0 = Date.now();
  const r = await httpRequest(url, opts);
  return { status: r.status, body: r.body, ms: Date.now() - t0 };
}

/** A TCP connection that sent PING and read PONG; `closed` resolves when the gateway closes it. */
async function pingConnection(port: number): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const socket = net.connect(port, '127.0.0.1');
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      resolve();
    }),
  );
  socket.on('error', () => undefined);
  const pong = await new Promise<string>((resolve, reject) => {
    socket.once('data', (d: Buffer) => {
      resolve(d.toString());
    });
    socket.once('error', reject);
    socket.write('PING\r\n');
  });
  assert.equal(pong, '+PONG\r\n');
  return { socket, closed };
}

/** PING on a new connection: the answer, or the error. */
async function ping(port: number): Promise<string> {
  try {
    const c = await pingConnection(port);
    c.socket.destroy();
    return '+PONG';
  } catch (err) {
    return String(err);
  }
}

describe('killed, not stopped', () => {
  let redis: TestRedis;
  let echo: Awaited<ReturnType<typeof startEchoUpstream>>;
  before(async () => {
    redis = await startRedis();
    closers.push(() => redis.stop());
    echo = await startEchoUpstream();
    closers.push(echo.close);
  });

  /** A gateway of two workers serving Redis as the TCP API `cache` on a port of its own. */
  async function startTcpGateway(name: string): Promise<{ gw: GatewayProc; tcpPort: number }> {
    const tcpPort = await freePort();
    const gw = await gateway(name, { workers: 2 });
    await put(gw, '/svc/apis', {
      api_id: 'cache',
      name: 'cache',
      protocol: 'tcp',
      listen_port: tcpPort,
      proxy: { target_url: `tcp://127.0.0.1:${String(redis.port)}` },
    });
    await reload(gw);
    await waitFor('both workers serving', () => gw.log().includes('"message":"all workers serving"'));
    return { gw, tcpPort };
  }

  test('SIGKILL of the workers mid TCP pipe: the client sees the close, restarted workers serve the port', async () => {
    const { gw, tcpPort } = await startTcpGateway('tcp-kill');
    const conns = [await pingConnection(tcpPort), await pingConnection(tcpPort)];
    const workers = workersOf(gw.pid);
    assert.equal(workers.length, 2, `workers of ${String(gw.pid)}`);
    for (const w of workers) process.kill(w, 'SIGKILL');
    for (const [i, c] of conns.entries()) {
      assert.equal(await within(c.closed, 5000), 'closed', `connection ${String(i)} closed, not hung`);
    }
    await waitFor('new workers', () => {
      const now = workersOf(gw.pid);
      return now.length === 2 && now.every((w) => !workers.includes(w));
    });
    await waitFor('the TCP port serving again', async () => (await ping(tcpPort)) === '+PONG', 60_000);
    for (let i = 0; i < 4; i++) assert.equal(await ping(tcpPort), '+PONG', `connection ${String(i)}`);
  });

  test('SIGKILL of the whole gateway mid TCP pipe: the client sees the close, no worker stays behind', async () => {
    const { gw, tcpPort } = await startTcpGateway('tcp-kill-all');
    const c = await pingConnection(tcpPort);
    const workers = workersOf(gw.pid);
    process.kill(gw.pid, 'SIGKILL');
    assert.equal(await within(c.closed, 5000), 'closed', 'the connection closed, not hung');
    await waitFor('the workers gone with their primary', () => workers.every((w) => !alive(w)));
    assert.notEqual(await ping(tcpPort), '+PONG');
  });

  test('JavaScript hooks and virtual endpoints that loop, exit or run out of memory: 500 in time, others unaffected', async () => {
    const gw = await gateway('plugins-kill', {
      env: {
        SVC_GW_PLUGIN_DIR: pluginDir(),
        SVC_GW_ENABLE_JSVM: 'true',
        SVC_GW_PLUGIN_TIMEOUT_MS: String(TIMEOUT_MS),
      },
    });
    const hook = (name: string): Record<string, unknown> => ({
      driver: 'svc',
      pre: [{ name, path: 'hooks.ts' }],
    });
    await put(gw, '/svc/apis', pluginApi('ok', echo.url, hook('ok')));
    await put(gw, '/svc/apis', pluginApi('loop', echo.url, hook('loop')));
    await put(gw, '/svc/apis', pluginApi('die', echo.url, hook('die')));
    await put(
      gw,
      '/svc/apis',
      virtualApi(
        'vok',
        echo.url,
        'function v(r) { return SvcJsResponse({Body: "v:" + r.Body, Code: 201, Headers: {}}, {}); }',
      ),
    );
    await put(gw, '/svc/apis', virtualApi('vloop', echo.url, 'function v() { while (true) {} }'));
    await put(
      gw,
      '/svc/apis',
      virtualApi(
        'voom',
        echo.url,
        'function v() { var a = []; while (true) a.push(new Array(1e6).fill(1)); }',
      ),
    );
    await reload(gw);
    assert.equal((await timed(`${gw.url}/ok/x`)).status, 200);

    const INTERNAL = /^\{"error":"Internal error \(ID [0-9a-f-]{36}\)"\}$/;
    for (const path of ['/loop/x', '/vloop/x', '/voom/x']) {
      const method = path.startsWith('/v') ? 'POST' : 'GET';
      const slow = timed(gw.url + path, { method, body: 'b' });
      // Meanwhile, other APIs answer: the hook runs off the gateway's event loop.
      let slowDone = false;
      void slow.then(() => (slowDone = true));
      const fast = await timed(`${gw.url}/ok/x`);
      const fastVirtual = await timed(`${gw.url}/vok/x`, { method: 'POST', body: 'hi' });
      assert.equal(fast.status, 200, `${path}: another API meanwhile`);
      assert.equal(fastVirtual.status, 201, `${path}: another virtual endpoint meanwhile`);
      assert.equal(fastVirtual.body, 'v:hi');
      if (path !== '/voom/x') assert.equal(slowDone, false, `${path}: the others answered first`);
      const r = await slow;
      assert.equal(r.status, 500, `${path}: ${r.body}`);
      assert.match(r.body, INTERNAL);
      assert.ok(r.ms < TIMEOUT_MS + SLACK_MS, `${path}: answered in ${String(r.ms)} ms`);
    }
    // A hook whose worker thread exits: 500 at once (not at the time limit), and the next call works.
    const died = await timed(`${gw.url}/die/x`, { headers: { 'x-die': '1' } });
    assert.equal(died.status, 500, died.body);
    assert.match(died.body, INTERNAL);
    assert.ok(died.ms < TIMEOUT_MS + SLACK_MS, `answered in ${String(died.ms)} ms`);
    assert.equal((await timed(`${gw.url}/die/x`)).status, 200, 'a new worker for the next call');
    // And every hook again, after all that.
    assert.equal((await timed(`${gw.url}/loop/x`)).status, 500);
    assert.equal((await timed(`${gw.url}/ok/x`)).status, 200);
    assert.equal((await timed(`${gw.url}/vok/x`, { method: 'POST', body: 'again' })).body, 'v:again');
    assert.doesNotMatch(gw.log(), /unhandled|uncaught/i);
  });

  test('SIGKILL of the gRPC plugin server mid call: 500 within the time limit, others unaffected, a restarted server is used', async () => {
    const grpcPort = await freePort();
    const startPlugin = async (name: string): Promise<Proc> => {
      const p = startNode({
        name,
        script: 'e2e/security/testdata/grpc-plugin-server.ts',
        args: [String(grpcPort)],
        logDir: dir,
      });
      closers.push(() => p.stop());
      await waitFor(`${name} listening`, () => p.log().includes('listening'));
      return p;
    };
    const plugin = await startPlugin('grpc-plugin-1');
    const gw = await gateway('grpc-kill', {
      env: {
        SVC_GW_COPROCESS_GRPC_SERVER: `tcp://127.0.0.1:${String(grpcPort)}`,
        SVC_GW_PLUGIN_TIMEOUT_MS: String(TIMEOUT_MS),
      },
    });
    const grpcHook = (name: string): Record<string, unknown> => ({
      driver: 'grpc',
      pre: [{ name, path: '' }],
    });
    await put(gw, '/svc/apis', pluginApi('gok', echo.url, grpcHook('Ok')));
    await put(gw, '/svc/apis', pluginApi('ghang', echo.url, grpcHook('Hang')));
    await put(gw, '/svc/apis', pluginApi('plain', echo.url, { driver: 'svc' }));
    await reload(gw);
    const ok = await timed(`${gw.url}/gok/x`);
    assert.equal(ok.status, 200, ok.body);
    assert.equal((JSON.parse(ok.body) as { headers: Record<string, string> }).headers['x-plugin'], 'ok');

    // A call in flight when the server dies.
    const hung = timed(`${gw.url}/ghang/x`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(plugin.pid, 'SIGKILL');
    await plugin.exited;
    const plain = await timed(`${gw.url}/plain/x`);
    assert.equal(plain.status, 200, 'an API without plugins answers meanwhile');
    const r = await hung;
    assert.equal(r.status, 500, r.body);
    assert.match(r.body, /^\{"error":"Internal error \(ID [0-9a-f-]{36}\)"\}$/);
    assert.ok(r.ms < TIMEOUT_MS + SLACK_MS, `answered in ${String(r.ms)} ms`);
    // While it is down: fail closed, in time.
    const down = await timed(`${gw.url}/gok/x`);
    assert.equal(down.status, 500, down.body);
    assert.ok(down.ms < TIMEOUT_MS + SLACK_MS, `answered in ${String(down.ms)} ms`);
    // Restarted on the same address: used again without a reload.
    await startPlugin('grpc-plugin-2');
    await waitFor(
      'the gRPC plugin used again',
      async () => (await timed(`${gw.url}/gok/x`)).status === 200,
      30_000,
    );
    assert.doesNotMatch(gw.log(), /unhandled|uncaught/i);
  });
});

/** Opens a connection, writes `data` (if any), and destroys it once `afterMs` have passed. */
async function leaveEarly(port: number, data: string | Buffer | undefined, afterMs = 50): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) =>
    socket.once('connect', () => {
      resolve();
    }),
  );
  if (data !== undefined) socket.write(data);
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  socket.destroy();
}

/** The first bytes of a TLS ClientHello (a record header and part of the handshake). */
const PARTIAL_CLIENT_HELLO = Buffer.from('160301020001000200030300', 'hex');

describe('clients leaving early', () => {
  test('mid oauth/token, mid virtual endpoint, mid TLS handshake, mid TCP connect: nothing leaks', async () => {
    const redis = await startRedis();
    closers.push(() => redis.stop());
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    const cert = selfSignedCert();
    const tcpPort = await freePort();
    const tlsPort = await freePort();
    const gw = await gateway('early', {
      env: {
        SVC_GW_ENABLE_JSVM: 'true',
        SVC_GW_METRICS_ENABLED: 'true',
        SVC_GW_PLUGIN_TIMEOUT_MS: String(TIMEOUT_MS),
        SVC_GW_TLS_CERT_FILE: cert.certFile,
        SVC_GW_TLS_KEY_FILE: cert.keyFile,
      },
    });
    await put(gw, '/svc/apis', stockApi(echo.url));
    await put(gw, '/svc/policies', STOCK_POLICY);
    await put(gw, '/svc/apis', virtualApi('vloop', echo.url, 'function v() { while (true) {} }'));
    await put(
      gw,
      '/svc/apis',
      virtualApi(
        'vok',
        echo.url,
        'function v(r) { return SvcJsResponse({Body: "v:" + r.Body, Code: 200, Headers: {}}, {}); }',
      ),
    );
    for (const [id, protocol, port] of [
      ['tcpcache', 'tcp', tcpPort],
      ['tlscache', 'tls', tlsPort],
    ] as const) {
      await put(gw, '/svc/apis', {
        api_id: id,
        name: id,
        protocol,
        listen_port: port,
        proxy: { target_url: `tcp://127.0.0.1:${String(redis.port)}` },
      });
    }
    await reload(gw);
    const created = await httpRequest(`${gw.url}/svc/oauth/clients/create`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ api_id: 'stock', policy_id: 'stock-clients' }),
    });
    assert.equal(created.status, 200, created.body);
    const client = JSON.parse(created.body) as { client_id: string; secret: string };
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.secret}`).toString('base64')}`;
    const tokenOk = async (): Promise<boolean> => {
      const r = await httpRequest(`${gw.url}/stock/oauth/token`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      });
      return r.status === 200;
    };
    const everythingServes = async (): Promise<void> => {
      assert.ok(await tokenOk(), 'a token is issued');
      const v = await timed(`${gw.url}/vok/x`, { method: 'POST', body: 'hi' });
      assert.equal(v.body, 'v:hi');
      assert.equal(await ping(tcpPort), '+PONG');
    };
    // Warm up every path once, then take the baseline.
    await everythingServes();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const baseline = await openResources(gw);

    const port = Number(new URL(gw.url).port);
    const head = (path: string, length: number, extra = ''): string =>
      `POST ${path} HTTP/1.1\r\nhost: x\r\n${extra}content-type: application/x-www-form-urlencoded\r\ncontent-length: ${String(length)}\r\n\r\n`;
    const rounds = 10;
    for (let i = 0; i < rounds; i++) {
      // Mid oauth/token: the headers, half the form, gone.
      await leaveEarly(
        port,
        `${head('/stock/oauth/token', 200, `authorization: ${basic}\r\n`)}grant_type=cli`,
      );
      // Mid oauth/token, before its body starts.
      await leaveEarly(port, head('/stock/oauth/token', 30));
      // Mid virtual endpoint: its function is running (looping) when the client goes.
      await leaveEarly(port, `${head('/vloop/x', 2)}hi`, 150);
      // Mid virtual endpoint body.
      await leaveEarly(port, `${head('/vok/x', 100)}partial`);
      // Mid TLS handshake: part of a ClientHello; and a connection that sends nothing.
      await leaveEarly(tlsPort, PARTIAL_CLIENT_HELLO);
      await leaveEarly(tlsPort, undefined, 0);
      // Mid TCP API connection: connected and gone, with and without a command sent.
      await leaveEarly(tcpPort, undefined, 0);
      await leaveEarly(tcpPort, 'PING\r\n', 0);
    }
    await everythingServes();
    // Handles and descriptors come back (the looping function's worker is stopped at its limit).
    await backToBaseline(gw, baseline);
    assert.ok(alive(gw.pid), 'the gateway is still running');
    assert.doesNotMatch(gw.log(), /unhandled|uncaught/i);
  });
});
