/**
 * OAuth 2.0 client credentials in mode pro, with real processes: a dashboard (SQLite) and a
 * gateway of two workers loading from it. A client registered through the dashboard gets a token
 * at the gateway's `{listen_path}oauth/token`, and the token is served; once the client is
 * deleted in the dashboard its token is refused on every worker (403 `Key not authorised`, the
 * gateway's answer to a revoked token) and it gets no new one. A client deleted while the gateway
 * was down loses its tokens when the gateway is back. The gateway's own client writes are refused
 * (the dashboard owns them), and no log holds a secret or a token.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, writeStockOauth, type ProWorld } from '../harness/pro.ts';
import { tryRequest, waitFor, type GatewayProc } from '../harness/processes.ts';

const NODE_SECRET = 'e2e-node-secret-oauth-0123456789';
const GW_SECRET = 'pro-gateway-oauth-secret';
let w: ProWorld;
let a: DashboardTenant;
let gateway: GatewayProc | undefined;
/** Every secret and token the test saw: none may be in a log. */
const secrets: string[] = [];

async function startProGateway(): Promise<GatewayProc> {
  // The log is appended to across restarts: this start's workers are the next ones serving.
  const serving = (log: string): number => log.split('"message":"all workers serving"').length - 1;
  const logFile = join(w.dir, 'gw-oauth.log');
  const seen = existsSync(logFile) ? serving(readFileSync(logFile, 'utf8')) : 0;
  const g = await w.startGateway({
    name: 'gw-oauth',
    secret: GW_SECRET,
    org: a.org,
    dataDir: join(w.dir, 'gw'),
    workers: 2,
    // Two workers start slowly on a loaded machine.
    startTimeoutMs: 90_000,
    pollMs: 300,
  });
  // Both workers have loaded their routes (a worker takes connections before its first load is
  // in, answering 404 meanwhile: /hello answering says only that one worker listens).
  await waitFor('both workers serving', () => serving(g.log()) > seen, 90_000);
  // The API is loaded: a request without a token is refused by the OAuth check.
  await waitFor('/stock/ loaded', async () => (await call(g, '/stock/get')).status === 400, 60_000);
  return g;
}

function call(
  g: GatewayProc,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return tryRequest(g.url + path, opts);
}

/** A client registered through the dashboard: its ID and secret. */
async function register(description: string): Promise<{ id: string; secret: string }> {
  const r = await dashboardCall(w.dashboard.url, 'POST', '/api/apis/oauth/stock', {
    auth: a.system.key,
    body: { policy_id: 'stock-clients', description },
  });
  assert.equal(r.status, 200, r.text);
  const client = { id: String(r.body.client_id), secret: String(r.body.secret) };
  secrets.push(client.secret);
  return client;
}

async function token(
  g: GatewayProc,
  client: { id: string; secret: string },
): Promise<{ status: number; body: string }> {
  return call(g, '/stock/oauth/token', {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
}

/** Statuses of `n` requests with the bearer token, each on a fresh connection (both workers answer). */
async function statuses(g: GatewayProc, accessToken: string, n = 8): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push((await call(g, '/stock/get', { headers: { authorization: `Bearer ${accessToken}` } })).status);
  }
  return out;
}

before(async () => {
  w = await startProWorld({
    name: 'oauth',
    nodeSecret: NODE_SECRET,
    dashboardName: 'dashboard-oauth',
    upstream: 'stock',
  });
  a = await w.tenant('oauth-a');
  await writeStockOauth(w, a, { use_keyless: false });
  gateway = await startProGateway();
});

after(() => w.stop());

test('a client registered in the dashboard gets a token at the gateway; deleted, its token is refused', async () => {
  const g = gateway;
  assert.ok(g !== undefined);
  const client = await register('the stock robot');
  const issued = await token(g, client);
  assert.equal(issued.status, 200, issued.body);
  const body = JSON.parse(issued.body) as { access_token: string; expires_in: number; token_type: string };
  assert.equal(body.token_type, 'bearer');
  assert.equal(body.expires_in, 3600);
  secrets.push(body.access_token);
  assert.deepEqual(await statuses(g, body.access_token), Array(8).fill(200));
  const served = await call(g, '/stock/get', { headers: { authorization: `Bearer ${body.access_token}` } });
  assert.equal((JSON.parse(served.body) as { upstream: string; path: string }).path, '/get');
  // A wrong secret gets no token.
  const wrong = await token(g, { id: client.id, secret: 'not-the-secret' });
  assert.equal(wrong.status, 401, wrong.body);
  assert.equal((JSON.parse(wrong.body) as { error: string }).error, 'unauthorized_client');
  // The gateway does not take client writes: the dashboard owns them.
  const local = await call(g, '/svc/oauth/clients/create', {
    method: 'POST',
    headers: { 'x-svc-authorization': GW_SECRET, 'content-type': 'application/json' },
    body: JSON.stringify({ api_id: 'stock', policy_id: 'stock-clients' }),
  });
  assert.equal(local.status, 403, local.body);
  assert.match(local.body, /managed in the dashboard/);
  const listed = await call(g, '/svc/oauth/clients/stock', { headers: { 'x-svc-authorization': GW_SECRET } });
  assert.equal(listed.status, 403, listed.body);
  assert.match(listed.body, /list them there \(GET \/api\/apis\/oauth\/\{apiId\}\)/);

  const deleted = await dashboardCall(w.dashboard.url, 'DELETE', `/api/apis/oauth/stock/${client.id}`, {
    auth: a.system.key,
  });
  assert.equal(deleted.status, 200, deleted.text);
  let last: number[] = [];
  await waitFor(
    "the token refused on every worker after the client's deletion",
    async () => {
      last = await statuses(g, body.access_token, 4);
      return last.every((s) => s === 403);
    },
    10_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the last statuses: ${JSON.stringify(last)}`);
  });
  const refused = await call(g, '/stock/get', { headers: { authorization: `Bearer ${body.access_token}` } });
  assert.equal(refused.status, 403);
  assert.match(refused.body, /Key not authorised/);
  assert.deepEqual(await statuses(g, body.access_token), Array(8).fill(403));
  const again = await token(g, client);
  assert.equal(again.status, 401, again.body);
});

test('a client deleted while the gateway is down loses its tokens when the gateway is back', async () => {
  assert.ok(gateway !== undefined);
  const client = await register('deleted while down');
  const issued = await token(gateway, client);
  assert.equal(issued.status, 200, issued.body);
  const accessToken = (JSON.parse(issued.body) as { access_token: string }).access_token;
  secrets.push(accessToken);
  assert.deepEqual(await statuses(gateway, accessToken, 4), Array(4).fill(200));
  await gateway.stop();
  gateway = undefined;
  const deleted = await dashboardCall(w.dashboard.url, 'DELETE', `/api/apis/oauth/stock/${client.id}`, {
    auth: a.system.key,
  });
  assert.equal(deleted.status, 200, deleted.text);
  gateway = await startProGateway();
  const g = gateway;
  let last: number[] = [];
  await waitFor(
    'the token refused after the restart',
    async () => {
      last = await statuses(g, accessToken, 4);
      return last.every((s) => s === 403);
    },
    10_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the last statuses: ${JSON.stringify(last)}`);
  });
  assert.deepEqual(await statuses(g, accessToken), Array(8).fill(403));
});

test('no log holds a client secret or an access token', () => {
  const logs = readdirSync(w.dir).filter((f) => f.endsWith('.log'));
  assert.ok(logs.length >= 2, logs.join(', '));
  assert.ok(secrets.length >= 4);
  for (const f of logs) {
    const text = readFileSync(join(w.dir, f), 'utf8');
    for (const s of secrets) assert.ok(!text.includes(s), `a secret or token in ${f}`);
  }
});
