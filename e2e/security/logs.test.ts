/**
 * No secret of issue 30's features reaches a log: a gateway process at log level debug (its
 * stdout and stderr captured), used as a client would use it, right and wrong: OAuth client
 * secrets (given and generated; HTTP Basic, the form, JSON), access tokens (issued, used, sent
 * in a query, revoked, unknown), a gRPC plugin's tokens and auth headers (accepted, refused, and
 * sent to a hook whose call fails), a JavaScript plugin and a virtual endpoint that fail with
 * credentials in the request, a certificate's private key (uploaded, used by a TLS API, and
 * refused with the wrong certificate), basic-auth passwords, the management secret. Then every
 * line is searched for each value.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { test } from 'node:test';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { startRedis } from '../../gateway/testing/redis-server.ts';
import { freePort, startEchoUpstream, startNode, waitFor, type GatewayProc } from '../harness/processes.ts';
import {
  b64,
  request as httpRequest,
  STOCK_POLICY,
  useSecuritySuite,
  virtualEndpoint,
  virtualVersions,
} from './start.ts';

const GW_SECRET = 'gwSecretLogsQz3Xv8Nm1';
const CLIENT_SECRET = 'clientSecretGiven7Hj2Kl9Pw4';
const WRONG_CLIENT_SECRET = 'wrongClientSecretTy6Ui1Op3';
const BAD_BEARER = 'badBearerTokenAs4Df8Gh2';
const GRPC_TOKEN = 'grpcGoodTokenZx5Cv9Bn3';
const BAD_GRPC_TOKEN = 'grpcBadTokenMq2We7Rt1';
const GRPC_AUTH_HEADER = 'grpcApiKeyHeaderYu8Io3Pa6';
const JS_TOKEN = 'jsPluginTokenSd1Fg5Hj9';
const VIRTUAL_TOKEN = 'virtualTokenKl4Zx8Cv2';
const BODY_PASSWORD = 'bodyPasswordBn6Mq1We5';
const BASIC_PASSWORD = 'basicPasswordRt3Yu7Io2';
const WRONG_BASIC_PASSWORD = 'wrongBasicPasswordPa9Sd4';

const { dir, closers, admin: adminHeaders, gateway } = useSecuritySuite('sec-logs', GW_SECRET);

const basic = (user: string, password: string): string => `Basic ${b64(`${user}:${password}`)}`;
const FORM = 'application/x-www-form-urlencoded';

/** Lines of `text` holding one of `secrets`, each named. */
function leaksIn(text: string, secrets: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    for (const [what, secret] of secrets)
      if (secret !== '' && line.includes(secret)) out.push(`${what}: ${line}`);
  }
  return out;
}

/** The base64 lines of a PEM block. */
const pemBody = (pem: string): string[] =>
  pem
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= 16 && !l.startsWith('-----'));

test('no secret of OAuth, gRPC and JavaScript plugins, certificates or basic auth reaches a log line at debug', async () => {
  const echo = await startEchoUpstream();
  closers.push(echo.close);
  const redis = await startRedis();
  closers.push(() => redis.stop());
  const grpcPort = await freePort();
  const plugin = startNode({
    name: 'logs-grpc-plugin',
    script: 'e2e/security/testdata/grpc-plugin-server.ts',
    args: [String(grpcPort), GRPC_TOKEN],
    logDir: dir,
  });
  closers.push(() => plugin.stop());
  await waitFor('the gRPC plugin server', () => plugin.log().includes('listening'));
  const plugins = join(dir, 'plugins');
  mkdirSync(plugins, { recursive: true });
  writeFileSync(
    join(plugins, 'hooks.ts'),
    `export function refuse(): unknown { return { refuse: { status: 401, message: 'no' } }; }
export function boom(): never { throw new Error('the plugin broke'); }
`,
  );
  const serverCert = selfSignedCert();
  const gw: GatewayProc = await gateway('logs-gateway', {
    env: {
      SVC_GW_LOG_LEVEL: 'debug',
      SVC_GW_PLUGIN_DIR: plugins,
      SVC_GW_ENABLE_JSVM: 'true',
      SVC_GW_COPROCESS_GRPC_SERVER: `tcp://127.0.0.1:${String(grpcPort)}`,
      SVC_GW_TLS_CERT_FILE: serverCert.certFile,
      SVC_GW_TLS_KEY_FILE: serverCert.keyFile,
    },
  });
  const mgmt = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: string }> =>
    httpRequest(gw.url + path, {
      method,
      headers: adminHeaders,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const ok = async (method: string, path: string, body?: unknown): Promise<string> => {
    const r = await mgmt(method, path, body);
    assert.equal(r.status, 200, `${method} ${path}: ${r.body}`);
    return r.body;
  };
  const proxy = (lp: string, extra: Record<string, unknown>): Record<string, unknown> => ({
    api_id: lp,
    name: lp,
    proxy: { listen_path: `/${lp}/`, target_url: echo.url, strip_listen_path: true },
    ...extra,
  });

  // APIs: OAuth, gRPC auth and a failing gRPC hook, JavaScript hooks, a virtual endpoint, basic
  // auth, and a TLS API on an uploaded certificate.
  await ok(
    'POST',
    '/svc/apis',
    proxy('stock', {
      use_keyless: false,
      use_oauth2: true,
      oauth_meta: { allowed_access_types: ['client_credentials'] },
    }),
  );
  await ok('POST', '/svc/policies', STOCK_POLICY);
  await ok(
    'POST',
    '/svc/apis',
    proxy('gauth', {
      use_keyless: false,
      enable_coprocess_auth: true,
      custom_middleware: { driver: 'grpc', auth_check: { name: 'Auth', path: '' } },
    }),
  );
  await ok(
    'POST',
    '/svc/apis',
    proxy('gfail', {
      use_keyless: true,
      custom_middleware: { driver: 'grpc', pre: [{ name: 'Fail', path: '' }] },
    }),
  );
  await ok(
    'POST',
    '/svc/apis',
    proxy('jsrefuse', {
      use_keyless: true,
      custom_middleware: { driver: 'svc', pre: [{ name: 'refuse', path: 'hooks.ts' }] },
    }),
  );
  await ok(
    'POST',
    '/svc/apis',
    proxy('jsboom', {
      use_keyless: true,
      custom_middleware: { driver: 'svc', pre: [{ name: 'boom', path: 'hooks.ts' }] },
    }),
  );
  await ok(
    'POST',
    '/svc/apis',
    proxy('virtual', {
      use_keyless: true,
      version_data: virtualVersions(
        virtualEndpoint('/boom', 'function v() { throw new Error("the function broke"); }'),
        virtualEndpoint('/none', 'function v() { return 42; }'),
      ),
    }),
  );
  await ok('POST', '/svc/apis', proxy('basic', { use_keyless: false, use_basic_auth: true }));
  const cert = selfSignedCert();
  const other = selfSignedCert();
  const uploaded = JSON.parse(
    await ok('POST', '/svc/certs?org_id=acme', `${cert.cert.toString()}${cert.key.toString()}`),
  ) as { id: string };
  // The wrong key for a certificate: refused, and neither key is logged.
  const mismatch = await mgmt(
    'POST',
    '/svc/certs?org_id=acme',
    `${other.cert.toString()}${cert.key.toString()}`,
  );
  assert.equal(mismatch.status, 400, mismatch.body);
  const garbage = await mgmt('POST', '/svc/certs?org_id=acme', other.key.toString());
  assert.equal(garbage.status, 400, garbage.body);
  const tlsPort = await freePort();
  await ok('POST', '/svc/apis', {
    api_id: 'cache',
    name: 'cache',
    protocol: 'tls',
    listen_port: tlsPort,
    certificates: [uploaded.id],
    proxy: { target_url: `tcp://127.0.0.1:${String(redis.port)}` },
  });
  // A TCP API that refuses this client: a line at debug.
  const blockedPort = await freePort();
  await ok('POST', '/svc/apis', {
    api_id: 'blocked',
    name: 'blocked',
    protocol: 'tcp',
    listen_port: blockedPort,
    enable_ip_blacklisting: true,
    blacklisted_ips: ['127.0.0.1'],
    proxy: { target_url: `tcp://127.0.0.1:${String(redis.port)}` },
  });
  await ok('GET', '/svc/reload');

  // OAuth: a given and a generated secret; tokens by Basic, form and JSON; wrong secrets.
  const c1 = JSON.parse(
    await ok('POST', '/svc/oauth/clients/create', {
      api_id: 'stock',
      policy_id: 'stock-clients',
      secret: CLIENT_SECRET,
    }),
  ) as { client_id: string; secret: string };
  const c2 = JSON.parse(
    await ok('POST', '/svc/oauth/clients/create', { api_id: 'stock', policy_id: 'stock-clients' }),
  ) as { client_id: string; secret: string };
  const tokenCalls: [Record<string, string>, string, number][] = [
    [
      { authorization: basic(c1.client_id, CLIENT_SECRET), 'content-type': FORM },
      'grant_type=client_credentials',
      200,
    ],
    [
      { 'content-type': FORM },
      `grant_type=client_credentials&client_id=${c2.client_id}&client_secret=${c2.secret}`,
      200,
    ],
    [
      { 'content-type': 'application/json' },
      JSON.stringify({
        grant_type: 'client_credentials',
        client_id: c1.client_id,
        client_secret: CLIENT_SECRET,
      }),
      200,
    ],
    [
      { authorization: basic(c1.client_id, WRONG_CLIENT_SECRET), 'content-type': FORM },
      'grant_type=client_credentials',
      401,
    ],
    [
      { 'content-type': FORM },
      `grant_type=client_credentials&client_id=${c1.client_id}&client_secret=${WRONG_CLIENT_SECRET}`,
      401,
    ],
    [
      { 'content-type': FORM },
      `grant_type=password&client_id=${c1.client_id}&client_secret=${CLIENT_SECRET}&password=${BODY_PASSWORD}`,
      400,
    ],
  ];
  const tokens: string[] = [];
  for (const [headers, body, want] of tokenCalls) {
    const r = await httpRequest(`${gw.url}/stock/oauth/token`, { method: 'POST', headers, body });
    assert.equal(r.status, want, `${body}: ${r.body}`);
    if (r.status === 200) tokens.push((JSON.parse(r.body) as { access_token: string }).access_token);
  }
  assert.equal(tokens.length, 3);
  const [t1 = '', t2 = '', t3 = ''] = tokens;
  const use = async (
    path: string,
    headers: Record<string, string>,
    want: number,
    method = 'GET',
    body?: string,
  ) => {
    const r = await httpRequest(gw.url + path, { method, headers, ...(body === undefined ? {} : { body }) });
    assert.equal(r.status, want, `${path} ${JSON.stringify(headers)}: ${r.body}`);
  };
  await use('/stock/x', { authorization: `Bearer ${t1}` }, 200);
  await use(`/stock/x?access_token=${t2}`, {}, 400);
  await use('/stock/x', { authorization: `Bearer ${BAD_BEARER}` }, 403);
  await use('/stock/x', { authorization: t2 }, 400);
  // Revoked by its client, then by the management API; then refused.
  await use(
    '/stock/oauth/revoke',
    { authorization: basic(c1.client_id, CLIENT_SECRET), 'content-type': FORM },
    200,
    'POST',
    `token=${t1}`,
  );
  assert.equal((await mgmt('POST', '/svc/oauth/revoke', { token: t3, client_id: c1.client_id })).status, 200);
  await use('/stock/x', { authorization: `Bearer ${t1}` }, 403);
  await use('/stock/x', { authorization: `Bearer ${t3}` }, 403);
  assert.equal((await mgmt('DELETE', `/svc/oauth/clients/stock/${c2.client_id}`)).status, 200);
  await use('/stock/x', { authorization: `Bearer ${t2}` }, 403);

  // gRPC: accepted and refused tokens; an auth header sent to a hook whose call fails.
  await use('/gauth/x', { authorization: GRPC_TOKEN }, 200);
  await use('/gauth/x', { authorization: BAD_GRPC_TOKEN }, 403);
  await use('/gfail/x', { 'x-api-key': GRPC_AUTH_HEADER, authorization: `Bearer ${GRPC_AUTH_HEADER}` }, 500);
  // JavaScript: a refusing hook, a throwing one, a virtual endpoint that throws or answers nothing.
  await use('/jsrefuse/x', { authorization: `Bearer ${JS_TOKEN}` }, 401);
  await use('/jsboom/x', { authorization: `Bearer ${JS_TOKEN}`, cookie: `sid=${JS_TOKEN}` }, 500);
  await use('/virtual/boom', { authorization: VIRTUAL_TOKEN }, 500, 'POST', `password=${BODY_PASSWORD}`);
  await use('/virtual/none', { 'x-api-key': VIRTUAL_TOKEN }, 500, 'POST', `password=${BODY_PASSWORD}`);
  // Basic auth, right and wrong.
  assert.equal(
    (
      await mgmt('POST', '/svc/keys/ann', {
        basic_auth_data: { password: BASIC_PASSWORD },
        access_rights: { basic: { api_id: 'basic', api_name: 'basic', versions: ['Default'] } },
      })
    ).status,
    200,
  );
  await use('/basic/x', { authorization: basic('ann', BASIC_PASSWORD) }, 200);
  await use('/basic/x', { authorization: basic('ann', WRONG_BASIC_PASSWORD) }, 401);
  // The TLS API, on the uploaded certificate's key.
  const pong = await new Promise<string>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: tlsPort, rejectUnauthorized: false }, () => {
      s.write('PING\r\n');
    });
    s.once('data', (d: Buffer) => {
      resolve(d.toString());
      s.destroy();
    });
    s.once('error', reject);
  });
  assert.equal(pong, '+PONG\r\n');
  await new Promise<void>((resolve) => {
    const s = net.connect(blockedPort, '127.0.0.1');
    s.on('error', () => undefined);
    s.once('close', () => {
      resolve();
    });
  });
  // A failure the gateway logs: the management secret, wrong.
  const wrongAdmin = await httpRequest(`${gw.url}/svc/apis`, {
    headers: { 'x-svc-authorization': `x${GW_SECRET}` },
  });
  assert.equal(wrongAdmin.status, 403);

  await waitFor(
    'the failures logged, and the refused connection at debug',
    () => (gw.log().match(/"level":"error"/g) ?? []).length >= 4 && gw.log().includes('"level":"debug"'),
  );
  await gw.stop();
  await plugin.stop();

  const secrets = new Map<string, string>([
    ['management secret', GW_SECRET],
    ['given client secret', CLIENT_SECRET],
    ['generated client secret', c2.secret],
    ['wrong client secret', WRONG_CLIENT_SECRET],
    ['access token 1', t1],
    ['access token 2', t2],
    ['access token 3', t3],
    ['unknown bearer token', BAD_BEARER],
    ['gRPC token', GRPC_TOKEN],
    ['refused gRPC token', BAD_GRPC_TOKEN],
    ['gRPC auth header', GRPC_AUTH_HEADER],
    ['JavaScript plugin token', JS_TOKEN],
    ['virtual endpoint token', VIRTUAL_TOKEN],
    ['password in a body', BODY_PASSWORD],
    ['basic password', BASIC_PASSWORD],
    ['wrong basic password', WRONG_BASIC_PASSWORD],
    ...pemBody(cert.key.toString()).map((l, i) => [`private key line ${String(i)}`, l] as [string, string]),
    ...pemBody(other.key.toString()).map(
      (l, i) => [`other private key line ${String(i)}`, l] as [string, string],
    ),
    ...pemBody(serverCert.key.toString()).map(
      (l, i) => [`gateway key line ${String(i)}`, l] as [string, string],
    ),
  ]);
  const leaks = leaksIn(gw.log(), secrets);
  assert.deepEqual(leaks, [], `secrets in the gateway's log:\n${leaks.join('\n')}`);
  // The log did record the calls (at debug), so the search looked at something.
  assert.match(gw.log(), /oauth token issued/);
  assert.match(gw.log(), /plugin failed/);
});
