/**
 * The gateway as a real process (`node gateway/main.ts`): it refuses to start without a secret,
 * keeps its APIs across a restart, runs several workers on one port, and shares APIs with
 * another node through Redis.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { send } from '../testing/client.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import {
  keyless,
  spawnGateway,
  spawnWorkers,
  type GatewayProcess,
  allWorkersServing,
} from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { selfSignedCert } from '../testing/certs.ts';
import { makeCert } from '../testing/client-certs.ts';
import { tlsGet } from '../testing/tls-client.ts';
import { WORKER_MALLOC_ARENAS, WORKER_SEMI_SPACE_MIB, workerEnv, workerExecArgv } from '../server/cluster.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const MAIN = join(import.meta.dirname, '..', 'main.ts');

const echo = useEcho();

/** Upstream name, or the status when the gateway did not proxy. */
async function served(gw: { port: number }, path: string): Promise<string | number> {
  const r = await send({ port: gw.port, path, fresh: true });
  return r.status === 200 ? (r.json as Echoed).upstream : r.status;
}

test('workers: the semi-space bound is added unless the node flags or NODE_OPTIONS set one', () => {
  const bound = `--max-semi-space-size=${String(WORKER_SEMI_SPACE_MIB)}`;
  assert.deepEqual(workerExecArgv(['--enable-source-maps'], undefined), ['--enable-source-maps', bound]);
  assert.deepEqual(workerExecArgv(['--max-semi-space-size=32'], undefined), ['--max-semi-space-size=32']);
  assert.deepEqual(workerExecArgv([], '--max-old-space-size=512 --max_semi_space_size=2'), []);
  assert.deepEqual(workerExecArgv([], '--max-old-space-size=512'), [bound]);
});

/**
 * Run in each process of a gateway (NODE_OPTIONS): appends the URL of every module it loads to
 * `$SVC_TEST_MODULES_DIR/<pid>`. Double quotes only: they are escaped in the data: URL.
 */
const RECORD_MODULES = [
  'import { registerHooks } from "node:module";',
  'import { appendFileSync } from "node:fs";',
  'const out = process.env.SVC_TEST_MODULES_DIR + "/" + String(process.pid);',
  'registerHooks({ load(url, context, next) { appendFileSync(out, url + "\\n"); return next(url, context); } });',
].join('\n');

/** Libraries that only some APIs need (GraphQL, JWT, gRPC plugins, Redis, certificates, YAML). */
const ON_USE = /\/node_modules\/(graphql|ws|jose|@grpc\/[^/]+|protobufjs|ioredis|@peculiar\/[^/]+|yaml)\//;

test('--workers 2 serving a keyless API: no process loads a library only some APIs need; workers bound their malloc arenas', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-modules-'));
  const seen = mkdtempSync(join(tmpdir(), 'svc-gw-modules-seen-'));
  const gw = await spawnGateway(['--workers', '2', '--data-dir', dataDir], {
    env: {
      NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(RECORD_MODULES)}`,
      SVC_TEST_MODULES_DIR: seen,
    },
  });
  try {
    await gw.addApi(keyless('plain', '/plain/', echo().url));
    await gw.reload();
    assert.equal(await served(gw, '/plain/x'), 'echo');
    const pids = readdirSync(seen);
    const workers = pids.filter((pid) => pid !== String(gw.child.pid));
    assert.equal(workers.length, 2, `the primary and two workers recorded their modules: ${pids.join(', ')}`);
    for (const pid of pids) {
      const urls = readFileSync(join(seen, pid), 'utf8').split('\n');
      assert.ok(
        urls.some((u) => u.endsWith('/gateway/server/gateway.ts')),
        `process ${pid} recorded the gateway's modules`,
      );
      assert.deepEqual(
        urls.filter((u) => ON_USE.test(u)),
        [],
        `process ${pid} loaded none of them`,
      );
    }
    for (const pid of workers) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      assert.ok(environ.includes(`MALLOC_ARENA_MAX=${String(WORKER_MALLOC_ARENAS)}`), `worker ${pid}`);
    }
  } finally {
    await gw.stop();
  }
});

test('workers: the malloc arena bound is added unless the environment sets one', () => {
  assert.deepEqual(workerEnv({}), { MALLOC_ARENA_MAX: String(WORKER_MALLOC_ARENAS) });
  assert.deepEqual(workerEnv({ MALLOC_ARENA_MAX: '8' }), {});
});

describe('gateway process', () => {
  test('refuses to start without a secret, saying why', () => {
    const r = spawnSync(process.execPath, [MAIN, '--port', '0'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^svc-gateway: invalid configuration:\n {2}- secret: required/);
    assert.match(r.stderr, /--secret, the environment variable SVC_GW_SECRET/);
  });

  test('refuses unknown flags, naming them', () => {
    const r = spawnSync(process.execPath, [MAIN, '--secret', 's', '--prot', '1'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /flag --prot: unknown/);
  });

  test('files store: APIs survive a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-restart-'));
    const args = ['--workers', '1', '--data-dir', dataDir];
    let gw: GatewayProcess = await spawnGateway(args);
    try {
      await gw.addApi(keyless('kept', '/kept/', echo().url));
      await gw.reload();
      assert.equal(await served(gw, '/kept/x'), 'echo');
      assert.equal(await gw.stop(), 0, 'a clean stop on SIGTERM');
      assert.deepEqual(readdirSync(join(dataDir, 'apis')), ['kept.json']);
      gw = await spawnGateway(args);
      assert.equal(await served(gw, '/kept/x'), 'echo', 'served from the data directory, no call needed');
    } finally {
      await gw.stop();
    }
  });

  test('--workers 2: two processes share the port and a reload reaches both', async () => {
    const gw = await spawnWorkers('svc-gw-workers-');
    try {
      // The first worker serves; the second may still be starting: the node reload waits for it.
      await gw.addApi(keyless('w', '/w/', echo().url));
      await gw.reload();
      await allWorkersServing(gw);
      const pids = new Set([...gw.stderr().matchAll(/"message":"listening","pid":(\d+)/g)].map((m) => m[1]));
      assert.equal(pids.size, 2, `listening workers: ${[...pids].join(', ')}`);
      // Each worker's young generation is bounded (issue 33 item 4: V8's own size kept 100 MiB
      // more per worker at 10,000 APIs).
      for (const pid of pids) {
        const argv = readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').split('\0');
        assert.ok(argv.includes(`--max-semi-space-size=${String(WORKER_SEMI_SPACE_MIB)}`), argv.join(' '));
      }
      // Fresh connections are spread over the workers: every one must serve the new API.
      for (let i = 0; i < 8; i++) assert.equal(await served(gw, '/w/x'), 'echo', `request ${i}`);
      // Any worker answers the management API with what is on disk.
      for (let i = 0; i < 4; i++) {
        const r = await send({
          port: gw.port,
          path: '/svc/apis/w',
          headers: { 'x-svc-authorization': 'test-secret' },
          fresh: true,
        });
        assert.equal(r.status, 200);
      }
      assert.equal(await gw.stop(), 0);
    } finally {
      await gw.stop();
    }
  });

  test('--workers 2: an API written through one worker is read back from every worker, before any reload', async () => {
    const gw = await spawnWorkers('svc-gw-workers-');
    const auth = { 'x-svc-authorization': 'test-secret' };
    // Fresh connections alternate between the workers: each read may reach the one that wrote.
    const read = async (id: string): Promise<{ status: number; target?: string }> => {
      const r = await send({ port: gw.port, path: `/svc/apis/${id}`, headers: auth, fresh: true });
      return { status: r.status, target: (r.json as { proxy?: { target_url?: string } }).proxy?.target_url };
    };
    const write = async (method: 'POST' | 'PUT', id: string, target: string): Promise<void> => {
      const r = await send({
        port: gw.port,
        method,
        path: method === 'POST' ? '/svc/apis' : `/svc/apis/${id}`,
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(keyless(id, `/${id}/`, target)),
        fresh: true,
      });
      assert.equal(r.status, 200, r.text);
    };
    try {
      await allWorkersServing(gw);
      for (let n = 0; n < 4; n++) {
        const id = `rw${n}`;
        // Both workers asked first (each keeps what it read), then the write through one of them.
        for (let i = 0; i < 2; i++) assert.equal((await read(id)).status, 404);
        await write('POST', id, `${echo().url}/v1`);
        for (let i = 0; i < 4; i++)
          assert.deepEqual(
            await read(id),
            { status: 200, target: `${echo().url}/v1` },
            `${id} read ${i} after its create`,
          );
        await write('PUT', id, `${echo().url}/v2`);
        for (let i = 0; i < 4; i++)
          assert.deepEqual(
            await read(id),
            { status: 200, target: `${echo().url}/v2` },
            `${id} read ${i} after its update`,
          );
      }
    } finally {
      await gw.stop();
    }
  });
  test('--workers 2: a certificate uploaded or deleted through one worker is seen by every worker (reads and mutual TLS)', async () => {
    const serverCert = selfSignedCert();
    const gw = await spawnWorkers('svc-gw-workers-certs-', [
      '--tls-cert',
      serverCert.certFile,
      '--tls-key',
      serverCert.keyFile,
    ]);
    const auth = { 'x-svc-authorization': 'test-secret' };
    const client = await makeCert('rotating-client');
    const certId = `org1${client.fingerprint}`;
    // Fresh connections alternate between the workers.
    const read = async (): Promise<number> =>
      (await send({ port: gw.port, path: `/svc/certs/${certId}`, headers: auth, fresh: true })).status;
    const reloadNode = async (): Promise<void> => {
      const r = await send({ port: gw.port, path: '/svc/reload/group', headers: auth, fresh: true });
      assert.equal(r.status, 200, r.text);
    };
    try {
      await allWorkersServing(gw);
      const tlsPort = await freePort();
      // The API lists the certificate before it is uploaded: every worker looks it up (absent).
      await gw.addApi(
        keyless('mtls', '/mtls/', echo().url, {
          protocol: 'https',
          listen_port: tlsPort,
          org_id: 'org1',
          use_mutual_tls_auth: true,
          client_certificates: [certId],
        }),
      );
      await reloadNode();
      for (let i = 0; i < 4; i++) assert.equal(await read(), 404, `read ${i} before the upload`);
      const up = await send({
        port: gw.port,
        method: 'POST',
        path: '/svc/certs?org_id=org1',
        headers: auth,
        body: client.cert,
        fresh: true,
      });
      assert.equal(up.status, 200, up.text);
      for (let i = 0; i < 8; i++) assert.equal(await read(), 200, `read ${i} after the upload`);
      await reloadNode();
      for (let i = 0; i < 8; i++) {
        const r = await tlsGet(tlsPort, '/mtls/x', { client });
        assert.equal(r.status, 200, `request ${i} with the uploaded certificate: ${JSON.stringify(r.json)}`);
      }
      const del = await send({
        port: gw.port,
        method: 'DELETE',
        path: `/svc/certs/${certId}`,
        headers: auth,
        fresh: true,
      });
      assert.equal(del.status, 200, del.text);
      for (let i = 0; i < 8; i++) assert.equal(await read(), 404, `read ${i} after the delete`);
      await reloadNode();
      for (let i = 0; i < 8; i++) {
        const r = await tlsGet(tlsPort, '/mtls/x', { client });
        assert.equal(r.status, 403, `request ${i} with the deleted certificate: ${JSON.stringify(r.json)}`);
      }
    } finally {
      await gw.stop();
    }
  });
});

describe('two nodes on one Redis', () => {
  let redis: TestRedis;
  let nodeA: GatewayProcess | undefined;
  let nodeB: GatewayProcess | undefined;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await stopAll(nodeA, nodeB, redis);
  });

  test('a write on one node and a group reload: both serve; a restarted node loads everything', async () => {
    const args = ['--workers', '1', '--store', redis.url, '--redis-key-prefix', 'two-nodes:'];
    nodeA = await spawnGateway(args);
    nodeB = await spawnGateway(args);
    const a = nodeA;
    await a.addApi(keyless('shared', '/shared/', echo().url));
    const onB = await send({
      port: nodeB.port,
      path: '/svc/apis/shared',
      headers: { 'x-svc-authorization': 'test-secret' },
    });
    assert.equal(onB.status, 200, 'node B reads what node A wrote');
    assert.equal(await served(nodeB, '/shared/x'), 404, 'not served before a reload');

    const reload = await a.admin('GET', '/svc/reload/group');
    assert.deepEqual(reload.json, { status: 'ok', message: '' });
    assert.equal(await served(a, '/shared/x'), 'echo');
    const b = nodeB;
    await waitFor('node B to reload', async () =>
      (await served(b, '/shared/x')) === 'echo' ? true : undefined,
    );

    assert.equal(await nodeB.stop(), 0);
    nodeB = await spawnGateway(args);
    assert.equal(await served(nodeB, '/shared/x'), 'echo', 'the restarted node loaded the APIs from Redis');

    // And the other way round: a delete on B, a group reload on B, and A stops serving.
    assert.equal((await nodeB.admin('DELETE', '/svc/apis/shared')).status, 200);
    assert.equal((await nodeB.admin('GET', '/svc/reload/group')).status, 200);
    await waitFor('node A to reload', async () =>
      (await served(a, '/shared/x')) === 404 ? true : undefined,
    );
  });
});
