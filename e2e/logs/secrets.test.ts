/**
 * No secret reaches a log, in any process: a dashboard, a gateway in mode pro loading from it
 * and a gateway on its own store, all real processes at log level debug. The run uses every
 * place a secret travels in a URL or beside it: keys in the path of the dashboard's and the
 * gateway's key calls (GET, PUT, DELETE, reset, 404 for another organisation's key, 403 with a
 * wrong management secret), tokens in a query parameter (the API's own name and `api_key`) and
 * in a cookie on proxied APIs, refused ones firing AuthFailure events to a log handler and a
 * webhook (its URL holding a token), basic-auth passwords right and wrong, user keys, the admin,
 * node and gateway secrets.
 * Then every line every process wrote, and every event delivered, is searched for each secret.
 * The operator's run: its own management URL and an OperatorContext's, each holding a password
 * (`https://user:password@host`), the gateway secret and a context's secret; its log, the
 * Kubernetes Events it records and the statuses it writes are searched the same way.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  DASHBOARD_ADMIN_SECRET,
  createTenant,
  dashboardCall,
  startDashboardProc,
  type DashboardProc,
} from '../harness/dashboard.ts';
import { API_VERSION } from '../../schemas/common.ts';
import { startControlPlane } from '../harness/control-plane.ts';
import {
  freePort,
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type Proc,
} from '../harness/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-secrets-'));
const NODE_SECRET = 'nodeSecretXq7Lw2Pz9Rk4';
const GW_SECRET = 'gwSecretHc3Nv8Tb1Ym6';
const WRONG_GW_SECRET = 'wrongGwSecretJd5Fs0Qa';
const CUSTOM_KEY = 'customKeyVb2Mn7Xc4Zl9';
const UNKNOWN_KEY = 'unknownKeyGh6Tr1We3Pu8';
const BAD_QUERY_TOKEN = 'badQueryTokenKs4Dj9Lx2';
const BAD_API_KEY = 'badApiKeyParamRt5Ey0Ui7';
const BAD_COOKIE_TOKEN = 'badCookieTokenNm8Bv3Cx6';
const BAD_HEADER_TOKEN = 'badHeaderTokenQw1Az5Sx0';
const ALICE_PASSWORD = 'alicePasswordPo9Iu4Yt7';
const WRONG_PASSWORD = 'wrongPasswordLk2Jh6Gf1';
const ANN_PASSWORD = 'annPasswordMn3Bv8Cx5Za';
const HOOK_TOKEN = 'hookTokenWs6Ed1Rf8Tg3';

const OP_GW_SECRET = 'opGwSecretYh4Uj7Ik2Ol5';
const OP_URL_PASSWORD = 'opUrlPasswordZa8Sx3Dc6';
const CTX_URL_PASSWORD = 'ctxUrlPasswordFv1Gb9Hn4';
const CTX_AUTH = 'ctxAuthSecretJm7Kl2Qw5';

const procs: Proc[] = [];
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const p of procs) await p.stop();
  for (const c of closers) await c();
});

/** Receives event webhooks; keeps their bodies. */
async function startReceiver(): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  // A token in the webhook's URL, as some receivers take it.
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hook?token=${HOOK_TOKEN}`, bodies };
}

const access = (...ids: string[]): Record<string, unknown> =>
  Object.fromEntries(ids.map((id) => [id, { api_id: id, api_name: id, versions: ['Default'] }]));

/** AuthFailure to the log handler and to the webhook. */
const authFailureEvents = (hook: string): Record<string, unknown> => ({
  event_handlers: {
    events: {
      AuthFailure: [
        { handler_name: 'eh_log_handler', handler_meta: { prefix: 'secrets' } },
        { handler_name: 'eh_web_hook_handler', handler_meta: { target_path: hook, method: 'POST' } },
      ],
    },
  },
});

/** A keyed API reading its token from the header, the query parameter `param` and the cookie `sess`. */
const tokenApi = (id: string, target: string, param: string, hook: string): Record<string, unknown> => ({
  api_id: id,
  name: id,
  use_keyless: false,
  use_standard_auth: true,
  auth: { use_param: true, param_name: param, use_cookie: true, cookie_name: 'sess' },
  proxy: { listen_path: `/${id}/`, target_url: target, strip_listen_path: true },
  ...authFailureEvents(hook),
});

const basicApi = (id: string, target: string, hook: string, org?: string): Record<string, unknown> => ({
  api_id: id,
  name: id,
  use_keyless: false,
  use_basic_auth: true,
  ...(org === undefined ? {} : { org_id: org }),
  proxy: { listen_path: `/${id}/`, target_url: target, strip_listen_path: true },
  ...authFailureEvents(hook),
});

async function status(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<number> {
  const r = await httpRequest(url, {
    method: opts.method ?? 'GET',
    headers: {
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...opts.headers,
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  return r.status;
}

const basic = (user: string, password: string): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

/** Lines of `text` holding one of `secrets`, each named by `where` and what the secret is. */
function leaksIn(where: string, text: string, secrets: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    for (const [what, secret] of secrets) if (line.includes(secret)) out.push(`${where}: ${what}: ${line}`);
  }
  return out;
}

/** How many lines of `p`'s log have a message starting with `message`. */
const lines = (p: Proc, message: string): number =>
  p
    .log()
    .split('\n')
    .filter((l) => l.includes(`"message":"${message}`)).length;

test('no secret used in a full run reaches a log line of any process, nor an event', async () => {
  const upstream = await startEchoUpstream();
  closers.push(upstream.close);
  const receiver = await startReceiver();
  const secrets = new Map<string, string>([
    ['dashboard admin secret', DASHBOARD_ADMIN_SECRET],
    ['node secret', NODE_SECRET],
    ['gateway secret', GW_SECRET],
    ['wrong gateway secret', WRONG_GW_SECRET],
    ['custom key', CUSTOM_KEY],
    ['unknown key', UNKNOWN_KEY],
    ['bad query token', BAD_QUERY_TOKEN],
    ['bad api_key', BAD_API_KEY],
    ['bad cookie token', BAD_COOKIE_TOKEN],
    ['bad header token', BAD_HEADER_TOKEN],
    ['alice password', ALICE_PASSWORD],
    ['wrong password', WRONG_PASSWORD],
    ['ann password', ANN_PASSWORD],
    ['webhook token', HOOK_TOKEN],
  ]);

  // The dashboard, its tenants, and what the pro gateway serves of tenant a.
  const dashboard: DashboardProc = await startDashboardProc({
    name: 'dashboard',
    logDir: dir,
    dataDir: join(dir, 'dashboard'),
    args: ['--node-secret', NODE_SECRET, '--log-level', 'debug'],
  });
  procs.push(dashboard);
  const a = await createTenant(dashboard.url, 'sec-a');
  const b = await createTenant(dashboard.url, 'sec-b');
  for (const t of [a, b]) {
    secrets.set(`${t.org} system user key`, t.system.key);
    secrets.set(`${t.org} reader key`, t.reader.key);
  }
  const db = async (method: string, path: string, auth: string, body?: unknown): Promise<number> =>
    (await dashboardCall(dashboard.url, method, path, { auth, ...(body === undefined ? {} : { body }) }))
      .status;
  assert.equal(
    await db('POST', '/api/apis', a.system.key, {
      api_definition: tokenApi('ptok', upstream.url, 'api_key', receiver.url),
    }),
    200,
  );
  assert.equal(
    await db('POST', '/api/apis', a.system.key, {
      api_definition: basicApi('pbasic', upstream.url, receiver.url),
    }),
    200,
  );
  // Keys by path: created, read, changed, reset, read by another organisation (404), deleted.
  const created = await dashboardCall(dashboard.url, 'POST', '/api/keys', {
    auth: a.system.key,
    body: { access_rights: access('ptok') },
  });
  assert.equal(created.status, 200, created.text);
  const dashKey = String(created.body.key_id);
  secrets.set('dashboard key', dashKey);
  const spare = await dashboardCall(dashboard.url, 'POST', '/api/keys', {
    auth: a.system.key,
    body: { access_rights: access('ptok') },
  });
  const spareKey = String(spare.body.key_id);
  secrets.set('dashboard key deleted', spareKey);
  assert.equal(await db('GET', `/api/keys/${dashKey}`, a.system.key), 200);
  assert.equal(await db('GET', `/api/keys/${dashKey}`, a.reader.key), 200);
  assert.equal(await db('PUT', `/api/keys/${dashKey}`, a.system.key, { access_rights: access('ptok') }), 200);
  assert.equal(await db('POST', `/api/keys/${dashKey}/reset`, a.system.key), 200);
  assert.equal(await db('GET', `/api/keys/${dashKey}`, b.system.key), 404, "another organisation's key");
  assert.equal(await db('DELETE', `/api/keys/${dashKey}`, b.system.key), 404);
  assert.equal(await db('POST', `/api/keys/${dashKey}/reset`, b.system.key), 404);
  assert.equal(await db('PUT', `/api/keys/${dashKey}`, a.reader.key, {}), 403);
  assert.equal(await db('GET', `/api/keys/${dashKey}`, 'not-a-user'), 401);
  assert.equal(await db('GET', `/api/keys/${dashKey}/nothing`, a.system.key), 404);
  assert.equal(await db('DELETE', `/api/keys/${spareKey}`, a.system.key), 200);
  assert.equal(await db('GET', `/api/keys/${spareKey}?hashed=false`, a.system.key), 404);
  assert.equal(
    await db('POST', '/api/apis/keys/basic/ann', a.system.key, {
      basic_auth_data: { password: ANN_PASSWORD },
      access_rights: access('pbasic'),
    }),
    200,
  );
  assert.equal(
    (await dashboardCall(dashboard.url, 'GET', '/admin/organisations', { admin: true })).status,
    200,
  );

  const pro: GatewayProc = await startGateway({
    name: 'gateway-pro',
    secret: GW_SECRET,
    dataDir: join(dir, 'gateway-pro'),
    logDir: dir,
    env: {
      SVC_GW_DASHBOARD_URL: dashboard.url,
      SVC_GW_NODE_SECRET: NODE_SECRET,
      SVC_GW_DASHBOARD_ORGS: a.org,
      SVC_GW_LOG_LEVEL: 'debug',
    },
  });
  procs.push(pro);
  await waitFor('the pro gateway to serve the dashboard key', async () => {
    return (await status(`${pro.url}/ptok/x?api_key=${dashKey}`)) === 200;
  });
  const ce: GatewayProc = await startGateway({
    name: 'gateway',
    secret: GW_SECRET,
    dataDir: join(dir, 'gateway'),
    logDir: dir,
    env: { SVC_GW_LOG_LEVEL: 'debug' },
  });
  procs.push(ce);
  const admin = { 'x-svc-authorization': GW_SECRET };
  const gw = (method: string, path: string, body?: unknown, headers = admin): Promise<number> =>
    status(ce.url + path, { method, headers, body });
  assert.equal(await gw('POST', '/svc/apis', tokenApi('tok', upstream.url, 'k', receiver.url)), 200);
  assert.equal(await gw('POST', '/svc/apis', basicApi('basic', upstream.url, receiver.url, 'acme')), 200);
  assert.equal(await gw('GET', '/svc/reload'), 200);
  // Keys by path on the management API.
  assert.equal(await gw('POST', `/svc/keys/${CUSTOM_KEY}`, { access_rights: access('tok') }), 200);
  assert.equal(await gw('GET', `/svc/keys/${CUSTOM_KEY}`), 200);
  assert.equal(await gw('PUT', `/svc/keys/${CUSTOM_KEY}`, { access_rights: access('tok') }), 200);
  assert.equal(await gw('POST', `/svc/keys/${CUSTOM_KEY}/reset?api_id=tok`), 200);
  assert.equal(await gw('GET', `/svc/keys/${UNKNOWN_KEY}`), 404);
  assert.equal(await gw('DELETE', `/svc/keys/${UNKNOWN_KEY}`), 404);
  assert.equal(await gw('POST', `/svc/keys/${UNKNOWN_KEY}/reset`), 404);
  assert.equal(
    await gw('GET', `/svc/keys/${CUSTOM_KEY}`, undefined, { 'x-svc-authorization': WRONG_GW_SECRET }),
    403,
  );
  const hashed = createHash('sha256').update(CUSTOM_KEY).digest('hex');
  assert.equal(await gw('GET', `/svc/keys/${hashed}?hashed=true`), 200);
  const generated = await httpRequest(`${ce.url}/svc/keys`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({ access_rights: access('tok') }),
  });
  assert.equal(generated.status, 200, generated.body);
  const generatedKey = (JSON.parse(generated.body) as { key: string }).key;
  secrets.set('generated gateway key', generatedKey);
  assert.equal(await gw('GET', `/svc/keys/${generatedKey}`), 200);
  assert.equal(
    await gw('POST', '/svc/keys/alice', {
      org_id: 'acme',
      basic_auth_data: { password: ALICE_PASSWORD },
      access_rights: access('basic'),
    }),
    200,
  );

  // Tokens in the query and the cookie, good and bad; basic-auth passwords, right and wrong.
  const proxied: [string, string, Record<string, string>, number][] = [
    [ce.url, `/tok/x?k=${CUSTOM_KEY}`, {}, 200],
    [ce.url, `/tok/x?page=2&k=${generatedKey}`, {}, 200],
    [ce.url, '/tok/x', { cookie: `sess=${CUSTOM_KEY}` }, 200],
    [ce.url, `/tok/x?k=${BAD_QUERY_TOKEN}`, {}, 403],
    [ce.url, '/tok/x', { cookie: `theme=dark; sess=${BAD_COOKIE_TOKEN}` }, 403],
    [ce.url, '/tok/x', { authorization: BAD_HEADER_TOKEN }, 403],
    [ce.url, `/tok/x?api_key=${BAD_API_KEY}`, {}, 401],
    [ce.url, '/basic/x', basic('alice', ALICE_PASSWORD), 200],
    [ce.url, '/basic/x', basic('alice', WRONG_PASSWORD), 401],
    [ce.url, '/basic/x', basic('nobody', WRONG_PASSWORD), 401],
    [pro.url, `/ptok/x?api_key=${dashKey}`, {}, 200],
    [pro.url, '/ptok/x', { cookie: `sess=${dashKey}` }, 200],
    [pro.url, `/ptok/x?api_key=${BAD_API_KEY}`, {}, 403],
    [pro.url, '/ptok/x', { cookie: `sess=${BAD_COOKIE_TOKEN}` }, 403],
    [pro.url, '/pbasic/x', basic('ann', ANN_PASSWORD), 200],
    [pro.url, '/pbasic/x', basic('ann', WRONG_PASSWORD), 401],
  ];
  for (const [base, path, headers, want] of proxied) {
    assert.equal(await status(base + path, { headers }), want, `${base}${path} ${JSON.stringify(headers)}`);
  }
  assert.equal(await gw('DELETE', `/svc/keys/${CUSTOM_KEY}`), 200);
  assert.equal(await status(`${ce.url}/tok/x?k=${CUSTOM_KEY}`), 403, 'the deleted key');

  // Refusals: 4 on the gateway (bad query, cookie, header token; the deleted key) and 2 basic;
  // 2 and 1 on the pro gateway. Each is a log line and a webhook delivery.
  await waitFor('the AuthFailure events logged and delivered', () => {
    return lines(ce, 'gateway event') >= 6 && lines(pro, 'gateway event') >= 3 && receiver.bodies.length >= 9;
  });
  for (const p of procs) await p.stop();

  const leaks: string[] = [];
  for (const p of procs) leaks.push(...leaksIn(p.name, p.log(), secrets));
  for (const body of receiver.bodies) leaks.push(...leaksIn('webhook', body, secrets));
  assert.deepEqual(leaks, [], `secrets in the logs:\n${leaks.join('\n')}`);
  // The lines are still there, naming the key by the start of its hash.
  const stored = createHash('sha256').update(dashKey).digest('hex').slice(0, 12);
  assert.ok(dashboard.log().includes(`/api/keys/[redacted:${stored}]/reset`), 'the reset call is logged');
  assert.ok(ce.log().includes(`"key_hash":"${hashed}"`), 'the key calls are logged by hash');
});

test('the operator logs no secret of its connections, nor writes one in its Events or statuses', async () => {
  const cp = await startControlPlane({
    crdDir: join(import.meta.dirname, '..', '..', 'charts', 'svc-operator', 'crds'),
  });
  closers.push(() => cp.stop());
  for (const ns of ['shop', 'svc-operator-system']) await cp.kubectl(['create', 'namespace', ns]);
  const upstream = await startEchoUpstream();
  closers.push(upstream.close);
  const gw = await startGateway({
    name: 'op-gateway',
    secret: OP_GW_SECRET,
    dataDir: join(dir, 'op-gateway'),
    logDir: dir,
    env: { SVC_GW_LOG_LEVEL: 'debug' },
  });
  procs.push(gw);
  // The operator's own URL holds a password (a gateway behind a proxy that wants one).
  const operator = await startOperator({
    name: 'operator',
    gateway: { ...gw, url: `http://svc-operator:${OP_URL_PASSWORD}@127.0.0.1:${gw.port}` },
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    env: { WATCH_NAMESPACE: 'shop', LOG_LEVEL: 'debug', SVC_RESYNC_PERIOD: '3s' },
  });
  procs.push(operator);
  // A context whose gateway does not answer: every reconcile of its API fails, naming the URL.
  const closed = await freePort();
  await cp.kubectl(['apply', '-f', '-'], {
    input: `apiVersion: ${API_VERSION}
kind: ApiDefinition
metadata: {name: orders, namespace: shop}
spec:
  name: orders
  use_keyless: true
  proxy: {listen_path: /orders/, target_url: "${upstream.url}", strip_listen_path: true}
---
apiVersion: v1
kind: Secret
metadata: {name: away-conf, namespace: shop}
stringData: {SVC_AUTH: ${CTX_AUTH}}
---
apiVersion: ${API_VERSION}
kind: OperatorContext
metadata: {name: away, namespace: shop}
spec:
  env: {mode: ce, url: "http://ctx-user:${CTX_URL_PASSWORD}@127.0.0.1:${closed}", org: shop}
  secretRef: {name: away-conf}
---
apiVersion: ${API_VERSION}
kind: ApiDefinition
metadata: {name: away, namespace: shop}
spec:
  name: away
  use_keyless: true
  contextRef: {name: away}
  proxy: {listen_path: /away/, target_url: "${upstream.url}", strip_listen_path: true}
`,
  });
  await waitFor('the operator to push orders', async () => (await status(`${gw.url}/orders/x`)) === 200);
  await waitFor('a failed push of away logged', () => lines(operator, 'reconcile failed') > 0);
  const events = async (): Promise<string> =>
    (await cp.kubectl(['get', 'events', '-n', 'shop', '-o', 'json'])).stdout;
  await waitFor('an Event about away', async () => (await events()).includes('"name": "away"'));
  const statuses = async (): Promise<string> => {
    const out = await cp.kubectl(['get', 'apidefinitions,operatorcontexts', '-n', 'shop', '-o', 'json']);
    const list = JSON.parse(out.stdout) as { items: { status?: unknown }[] };
    return list.items.map((i) => JSON.stringify(i.status, null, 1)).join('\n');
  };
  await waitFor('the statuses written', async () =>
    (await statuses()).includes('"reason": "GatewayUnavailable"'),
  );
  await operator.stop();
  await gw.stop();

  const secrets = new Map([
    ['gateway secret', OP_GW_SECRET],
    ["password in the operator's URL", OP_URL_PASSWORD],
    ["password in the context's URL", CTX_URL_PASSWORD],
    ["context's secret", CTX_AUTH],
  ]);
  const leaks = [
    ...leaksIn('operator', operator.log(), secrets),
    ...leaksIn('op-gateway', gw.log(), secrets),
    ...leaksIn('events', await events(), secrets),
    // The statuses the operator writes (the spec holds what the user wrote).
    ...leaksIn('status', await statuses(), secrets),
  ];
  assert.deepEqual(leaks, [], `secrets in the logs:\n${leaks.join('\n')}`);
  assert.match(operator.log(), /svc-operator:\[redacted\]@127\.0\.0\.1/);
});
