/**
 * Bad input to issue 30's management endpoints, as an outside reviewer sends it to a real gateway
 * process: each refused with 400 naming the field, and nothing stored (the stored state read back
 * is the same as before). Then what is at rest: an OAuth client's secret and its access tokens
 * are stored hashed, in the files store and in Redis, and a certificate's private key is not kept
 * in clear.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { before, describe, test } from 'node:test';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { startRedis, type TestRedis } from '../../gateway/testing/redis-server.ts';
import { freePort, startEchoUpstream, waitFor, type GatewayProc } from '../harness/processes.ts';
import { request as httpRequest, stockApi, STOCK_POLICY, useSecuritySuite } from './start.ts';

const { dir, closers, admin, gateway } = useSecuritySuite('input', 'inputSecretVb7Kd2');

async function call(
  gw: GatewayProc,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return httpRequest(gw.url + path, {
    method,
    headers: admin,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

const tcpApi = (id: string, port: unknown, protocol = 'tcp'): Record<string, unknown> => ({
  api_id: id,
  name: id,
  protocol,
  listen_port: port,
  proxy: { target_url: 'tcp://127.0.0.1:6399' },
});

const httpApi = (id: string, port: number, target: string): Record<string, unknown> => ({
  api_id: id,
  name: id,
  use_keyless: true,
  listen_port: port,
  proxy: { listen_path: `/${id}/`, target_url: target, strip_listen_path: true },
});

/** Every stored API, as the management API lists them (sorted by ID). */
async function apis(gw: GatewayProc): Promise<string> {
  const r = await call(gw, 'GET', '/svc/apis');
  assert.equal(r.status, 200);
  return JSON.stringify((JSON.parse(r.body) as { api_id: string }[]).map((a) => a.api_id).sort());
}

describe('TCP and TLS API ports', () => {
  let gw: GatewayProc;
  let echoUrl: string;
  before(async () => {
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    echoUrl = echo.url;
    const cert = selfSignedCert();
    gw = await gateway('ports', {
      env: { SVC_GW_TLS_CERT_FILE: cert.certFile, SVC_GW_TLS_KEY_FILE: cert.keyFile },
    });
  });

  test('bad listen_port values: 400 naming listen_port, nothing stored', async () => {
    const taken = await freePort();
    assert.equal((await call(gw, 'POST', '/svc/apis', tcpApi('first', taken))).status, 200);
    const before = await apis(gw);
    const cases: [string, unknown, string?][] = [
      ['port 0', 0],
      ['no port', undefined],
      ['port 65536', 65536],
      ['a negative port', -1],
      ['a fraction', 1.5],
      ['a string', '7001'],
      ['a huge number', 1e12],
      ['the gateway port', gw.port],
      ['the port of another tcp API', taken],
      ['the port of another tcp API, as tls', taken, 'tls'],
    ];
    for (const [name, port, protocol] of cases) {
      const r = await call(gw, 'POST', '/svc/apis', tcpApi('bad', port, protocol));
      assert.equal(r.status, 400, `${name}: ${r.body}`);
      assert.match(r.body, /listen_port/, `${name}: names the field`);
      const u = await call(gw, 'PUT', '/svc/apis/first', tcpApi('first', port === taken ? gw.port : port));
      assert.equal(u.status, 400, `${name} (update): ${u.body}`);
    }
    assert.equal(await apis(gw), before, 'nothing stored');
  });

  test('a tcp API on the port of an HTTP API, and the reverse: 400 naming listen_port, nothing stored', async () => {
    const httpPort = await freePort();
    const tcpPort = await freePort();
    assert.equal((await call(gw, 'POST', '/svc/apis', httpApi('web', httpPort, echoUrl))).status, 200);
    assert.equal((await call(gw, 'POST', '/svc/apis', tcpApi('pipe', tcpPort))).status, 200);
    const before = await apis(gw);
    const r1 = await call(gw, 'POST', '/svc/apis', tcpApi('clash', httpPort));
    assert.equal(r1.status, 400, r1.body);
    assert.match(r1.body, /listen_port/);
    const r2 = await call(gw, 'POST', '/svc/apis', httpApi('clash', tcpPort, echoUrl));
    assert.equal(r2.status, 400, r2.body);
    assert.match(r2.body, /listen_port/);
    assert.equal(await apis(gw), before, 'nothing stored');
  });
});

describe('headers that frame a message', () => {
  test('added by response_processors or the version header settings: 400 naming the entry, nothing stored; other headers served', async () => {
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    const gw = await gateway('framing');
    const api = (extra: Record<string, unknown>): Record<string, unknown> => ({
      api_id: 'framed',
      name: 'framed',
      use_keyless: true,
      proxy: { listen_path: '/framed/', target_url: echo.url, strip_listen_path: true },
      ...extra,
    });
    const injector = (add: Record<string, string>): Record<string, unknown> => ({
      response_processors: [{ name: 'header_injector', options: { add_headers: add } }],
    });
    const version = (settings: Record<string, unknown>): Record<string, unknown> => ({
      version_data: { not_versioned: true, versions: { Default: { name: 'Default', ...settings } } },
    });
    const before = await apis(gw);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'header_injector content-length',
        injector({ 'Content-Length': '1' }),
        /response_processors\[0\]\.options\.add_headers\.Content-Length: Forbidden/,
      ],
      [
        'header_injector transfer-encoding',
        injector({ 'transfer-encoding': 'chunked' }),
        /add_headers\.transfer-encoding: Forbidden/,
      ],
      ['header_injector connection', injector({ connection: 'close' }), /add_headers\.connection: Forbidden/],
      [
        'global_response_headers content-length',
        version({ global_response_headers: { 'content-length': '1' } }),
        /global_response_headers\.content-length: Forbidden/,
      ],
      [
        'global_headers transfer-encoding',
        version({ global_headers: { 'Transfer-Encoding': 'chunked' } }),
        /global_headers\.Transfer-Encoding: Forbidden/,
      ],
      [
        'transform_response_headers upgrade',
        version({
          extended_paths: {
            transform_response_headers: [
              { path: '/x', method: 'GET', add_headers: { upgrade: 'websocket' } },
            ],
          },
        }),
        /add_headers\.upgrade: Forbidden/,
      ],
    ];
    for (const [name, extra, field] of cases) {
      const r = await call(gw, 'POST', '/svc/apis', api(extra));
      assert.equal(r.status, 400, `${name}: ${r.body}`);
      assert.match(r.body, field, `${name}: ${r.body}`);
    }
    assert.equal(await apis(gw), before, 'nothing stored');
    // Other headers are added, and the answer's length is its body's.
    assert.equal((await call(gw, 'POST', '/svc/apis', api(injector({ 'x-served-by': 'svc' })))).status, 200);
    assert.equal((await call(gw, 'GET', '/svc/reload')).status, 200);
    const r = await httpRequest(`${gw.url}/framed/x`);
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-served-by'], 'svc');
    assert.equal((JSON.parse(r.body) as { path: string }).path, '/x');
  });
});

describe('TCP API ports with --workers 2', () => {
  test('a port clash is refused whichever worker takes the write (each keeps no stale view of the others)', async () => {
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    const gw = await gateway('ports-workers', { workers: 2 });
    // Both workers serving: fresh connections then alternate between them.
    await waitFor('both workers', () => gw.log().includes('"message":"all workers serving"'), 120_000);
    // Every worker has seen a write of an API on a port of its own before the clashing ones.
    for (let i = 0; i < 4; i++) {
      const r = await call(gw, 'POST', '/svc/apis', tcpApi(`warm${String(i)}`, await freePort()));
      assert.equal(r.status, 200, r.body);
    }
    const httpPort = await freePort();
    const tcpPort = await freePort();
    assert.equal((await call(gw, 'POST', '/svc/apis', httpApi('web', httpPort, echo.url))).status, 200);
    assert.equal((await call(gw, 'POST', '/svc/apis', tcpApi('pipe', tcpPort))).status, 200);
    const before = await apis(gw);
    for (let i = 0; i < 4; i++) {
      const r1 = await call(gw, 'POST', '/svc/apis', tcpApi(`clash${String(i)}`, httpPort));
      assert.equal(r1.status, 400, `tcp on the http port, write ${String(i)}: ${r1.body}`);
      assert.match(r1.body, /listen_port/);
      const r2 = await call(gw, 'POST', '/svc/apis', httpApi(`clash${String(i)}`, tcpPort, echo.url));
      assert.equal(r2.status, 400, `http on the tcp port, write ${String(i)}: ${r2.body}`);
      assert.match(r2.body, /listen_port/);
      const r3 = await call(gw, 'POST', '/svc/apis', tcpApi(`clash${String(i)}`, tcpPort, 'tls'));
      assert.equal(r3.status, 400, `tls on the tcp port, write ${String(i)}: ${r3.body}`);
    }
    assert.equal(await apis(gw), before, 'nothing stored');
    // And the reload serves every stored API: none was left out.
    const reload = await call(gw, 'GET', '/svc/reload');
    assert.equal(reload.status, 200, reload.body);
    assert.doesNotMatch(reload.body, /left out/);
  });
});

describe('a gateway run as a user, as the chart runs it', () => {
  test('a listen_port it may not open: 400 naming listen_port at write; left out at reload, which still applies the rest', async () => {
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    const dataDir = join(dir, 'as-user');
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dir, 0o755);
    chmodSync(dataDir, 0o777);
    const cert = selfSignedCert();
    chmodSync(dirname(cert.keyFile), 0o755);
    chmodSync(cert.keyFile, 0o644);
    const gw = await gateway('as-user', {
      env: { SVC_GW_TLS_CERT_FILE: cert.certFile, SVC_GW_TLS_KEY_FILE: cert.keyFile },
      ...(process.getuid?.() === 0 ? { user: 65532 } : {}),
    });
    assert.equal(
      (await call(gw, 'POST', '/svc/apis', { ...httpApi('web', 0, echo.url), listen_port: 0 })).status,
      200,
    );
    assert.equal((await call(gw, 'GET', '/svc/reload')).status, 200);
    const before = await apis(gw);
    const cases: [string, Record<string, unknown>][] = [
      ['tcp on port 80', tcpApi('low', 80)],
      ['tls on port 443', tcpApi('low', 443, 'tls')],
      ['https on port 443', { ...httpApi('low', 443, echo.url), protocol: 'https' }],
      ['http on port 81', httpApi('low', 81, echo.url)],
    ];
    for (const [name, def] of cases) {
      const r = await call(gw, 'POST', '/svc/apis', def);
      assert.equal(r.status, 400, `${name}: ${r.body}`);
      assert.match(r.body, /listen_port: Invalid value: port \d+ needs a privilege/, `${name}: ${r.body}`);
    }
    assert.equal(await apis(gw), before, 'nothing stored');
    // One already in the store (written by hand, or by a gateway that could open it): left out at
    // reload, and the reload still applies everything else: a deleted API stops being served.
    writeFileSync(
      join(dataDir, 'apis', 'low.json'),
      JSON.stringify({
        ...tcpApi('low', 80),
        proxy: { listen_path: '', target_url: 'tcp://127.0.0.1:6399' },
      }),
    );
    assert.equal((await call(gw, 'DELETE', '/svc/apis/web')).status, 200);
    const reload = await call(gw, 'GET', '/svc/reload');
    assert.equal(reload.status, 200, reload.body);
    assert.match(reload.body, /left out: API low: listen_port: Invalid value: port 80 needs a privilege/);
    assert.equal((await httpRequest(`${gw.url}/web/x`)).status, 404, 'the deleted API is gone');
    // A port it may open is served.
    const high = await freePort();
    assert.equal((await call(gw, 'POST', '/svc/apis', httpApi('high', high, echo.url))).status, 200);
    assert.equal((await call(gw, 'GET', '/svc/reload')).status, 200);
    assert.equal((await httpRequest(`http://127.0.0.1:${String(high)}/high/x`)).status, 200);
  });
});

/** An OAuth API, a policy granting it, and the gateway they are on. */
async function oauthSetup(gw: GatewayProc, target: string): Promise<void> {
  assert.equal((await call(gw, 'POST', '/svc/apis', stockApi(target))).status, 200);
  assert.equal((await call(gw, 'POST', '/svc/policies', STOCK_POLICY)).status, 200);
  assert.equal((await call(gw, 'GET', '/svc/reload')).status, 200);
}

describe('OAuth clients', () => {
  test('fields of the wrong type or value: 400 naming the field, no client stored', async () => {
    const echo = await startEchoUpstream();
    closers.push(echo.close);
    const gw = await gateway('oauth-input');
    await oauthSetup(gw, echo.url);
    const list = async (): Promise<string> => (await call(gw, 'GET', '/svc/oauth/clients/stock')).body;
    const before = await list();
    const good = { api_id: 'stock', policy_id: 'stock-clients' };
    const cases: [string, unknown, RegExp][] = [
      ['a secret that is a number', { ...good, secret: 12345 }, /secret/],
      ['a secret that is an object', { ...good, secret: { v: 'x' } }, /secret/],
      ['a client_id that is a number', { ...good, client_id: 123 }, /client_id/],
      ['a client_id with a slash', { ...good, client_id: 'a/b' }, /client_id/],
      ['a redirect_uri that is a list', { ...good, redirect_uri: ['https://a'] }, /redirect_uri/],
      ['a description that is an object', { ...good, description: { a: 1 } }, /description/],
      ['an api_id that is a number', { ...good, api_id: 7 }, /api_id/],
      ['a policy_id that is a boolean', { ...good, policy_id: true }, /policy_id/],
      ['meta_data that is a string', { ...good, meta_data: 'x' }, /meta_data/],
      ['no api_id', { policy_id: 'stock-clients' }, /api_id/],
      ['an unknown policy', { ...good, policy_id: 'nope' }, /policy_id/],
    ];
    for (const [name, body, field] of cases) {
      const r = await call(gw, 'POST', '/svc/oauth/clients/create', body);
      assert.equal(r.status, 400, `${name}: ${r.body}`);
      assert.match(r.body, field, `${name}: names the field`);
    }
    for (const raw of ['[]', 'not json', '{"api_id":']) {
      const r = await call(gw, 'POST', '/svc/oauth/clients/create', raw);
      assert.equal(r.status, 400, `${raw}: ${r.body}`);
    }
    assert.equal(await list(), before, 'no client stored');
  });
});

/** Every file under `d`, with its text. */
function filesUnder(d: string): [string, string][] {
  const out: [string, string][] = [];
  for (const name of readdirSync(d)) {
    const p = join(d, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push([p, readFileSync(p, 'utf8')]);
  }
  return out;
}

/** The lines of base64 inside a PEM block (what identifies its content). */
const pemBody = (pem: string): string[] =>
  pem
    .split('\n')
    .filter((l) => l.length >= 32 && !l.startsWith('-----'))
    .map((l) => l.trim());

describe('at rest', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis();
    closers.push(() => redis.stop());
  });

  for (const store of ['files', 'redis'] as const) {
    test(`${store} store: client secrets and access tokens hashed, private keys not in clear`, async () => {
      const echo = await startEchoUpstream();
      closers.push(echo.close);
      const dataDir = join(dir, `rest-${store}`);
      const prefix = `rest-${String(Date.now())}:`;
      const gw = await gateway(`rest-${store}`, {
        env: store === 'redis' ? { SVC_GW_STORE: redis.url, SVC_GW_REDIS_KEY_PREFIX: prefix } : {},
      });
      await oauthSetup(gw, echo.url);
      const given = 'givenClientSecretHy5Rt9Lp2Wq';
      const c1 = await call(gw, 'POST', '/svc/oauth/clients/create', {
        api_id: 'stock',
        policy_id: 'stock-clients',
        secret: given,
      });
      assert.equal(c1.status, 200, c1.body);
      const c2 = await call(gw, 'POST', '/svc/oauth/clients/create', {
        api_id: 'stock',
        policy_id: 'stock-clients',
      });
      assert.equal(c2.status, 200, c2.body);
      const clients = [JSON.parse(c1.body), JSON.parse(c2.body)] as { client_id: string; secret: string }[];
      const tokens: string[] = [];
      for (const c of clients) {
        const r = await httpRequest(`${gw.url}/stock/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=client_credentials&client_id=${c.client_id}&client_secret=${c.secret}`,
        });
        assert.equal(r.status, 200, r.body);
        tokens.push((JSON.parse(r.body) as { access_token: string }).access_token);
      }
      // Reads never answer the secret.
      const read = await call(gw, 'GET', `/svc/oauth/clients/stock/${clients[0]?.client_id ?? ''}`);
      assert.equal(read.status, 200);
      assert.ok(!read.body.includes(given), read.body);
      // A certificate with its private key.
      const cert = selfSignedCert();
      const up = await call(
        gw,
        'POST',
        '/svc/certs?org_id=acme',
        `${cert.cert.toString()}${cert.key.toString()}`,
      );
      assert.equal(up.status, 200, up.body);

      const atRest =
        store === 'files'
          ? filesUnder(dataDir)
              .map(([p, t]) => `${p}\n${t}`)
              .join('\n')
          : execFileSync(
              'redis-cli',
              ['-p', String(redis.port), '--no-raw', 'eval', DUMP, '0', `${prefix}*`],
              {
                encoding: 'utf8',
                maxBuffer: 64 << 20,
              },
            );
      assert.ok(atRest.includes('secret_hash'), `the clients are there (${store})`);
      const secrets = new Map<string, string>([
        ['given client secret', given],
        ['generated client secret', clients[1]?.secret ?? ''],
        ['access token 1', tokens[0] ?? ''],
        ['access token 2', tokens[1] ?? ''],
        ...pemBody(cert.key.toString()).map(
          (l, i) => [`private key line ${String(i)}`, l] as [string, string],
        ),
      ]);
      const found = [...secrets].filter(([, v]) => v !== '' && atRest.includes(v)).map(([k]) => k);
      assert.deepEqual(found, [], `in clear at rest (${store})`);
    });
  }
});

/** A Lua script that dumps every key matching ARGV[1] with its value, whatever its type. */
const DUMP = `
local out = {}
local cursor = "0"
repeat
  local r = redis.call("SCAN", cursor, "MATCH", ARGV[1], "COUNT", 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call("TYPE", k).ok
    table.insert(out, k)
    if t == "string" then table.insert(out, redis.call("GET", k))
    elseif t == "hash" then for _, v in ipairs(redis.call("HGETALL", k)) do table.insert(out, v) end
    elseif t == "list" then for _, v in ipairs(redis.call("LRANGE", k, 0, -1)) do table.insert(out, v) end
    elseif t == "set" then for _, v in ipairs(redis.call("SMEMBERS", k)) do table.insert(out, v) end
    elseif t == "zset" then for _, v in ipairs(redis.call("ZRANGE", k, 0, -1)) do table.insert(out, v) end
    end
  end
until cursor == "0"
return out
`;
