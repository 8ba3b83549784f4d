/**
 * OAuth 2.0 access tokens listed and revoked in the dashboard, with real processes: a dashboard
 * (SQLite) and a gateway of two workers in mode pro on a Redis store. A token the gateway issues
 * at `{listen_path}oauth/token` is listed on the dashboard under its client (its hash, never the
 * token); another organisation neither sees nor revokes it; revoked there (one token, then all of
 * a client's), it is refused by the gateway on every worker, while the client's other tokens
 * keep working until they are revoked too; one revoked at the gateway is listed no more. The audit log names each revocation. A token revoked
 * while the gateway is down (Redis keeps it) is refused once the gateway is back.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { tryRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { startProWorld, writeStockOauth, type ProWorld } from '../harness/pro.ts';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
let world: ProWorld;
let a: DashboardTenant;
let b: DashboardTenant;
let gateway: GatewayProc;
let client: { id: string; secret: string };
/** Every secret and token the test saw: none may be in a log. */
const secrets: string[] = [];

function call(
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return tryRequest(gateway.url + path, opts);
}

/** A new access token of the client, from the gateway. */
async function issue(): Promise<string> {
  const r = await call('/stock/oauth/token', {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  assert.equal(r.status, 200, r.body);
  const token = (JSON.parse(r.body) as { access_token: string }).access_token;
  secrets.push(token);
  return token;
}

/** Statuses of `n` requests with the token, each on a fresh connection (both workers answer). */
async function statuses(token: string, n = 6): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++)
    out.push((await call('/stock/get', { headers: { authorization: `Bearer ${token}` } })).status);
  return out;
}

/** The token hashes the dashboard lists for the client, as `who` sees them. */
async function listed(who: DashboardTenant = a): Promise<{ status: number; hashes: string[]; text: string }> {
  const r = await dashboardCall(world.dashboard.url, 'GET', `/api/apis/oauth/stock/${client.id}/tokens`, {
    auth: who.system.key,
  });
  const rows = r.status === 200 ? (JSON.parse(r.text) as { token_hash: string }[]) : [];
  return { status: r.status, hashes: rows.map((t) => t.token_hash).sort(), text: r.text };
}

/** Waits until every worker refuses the token, and answers the refusal. */
async function refusedEverywhere(token: string, what: string): Promise<{ status: number; body: string }> {
  let last: number[] = [];
  await waitFor(
    what,
    async () => {
      last = await statuses(token, 4);
      return last.every((s) => s !== 200);
    },
    10_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the last statuses: ${JSON.stringify(last)}`);
  });
  return call('/stock/get', { headers: { authorization: `Bearer ${token}` } });
}

before(async () => {
  world = await startProWorld({
    name: 'oauth-tokens',
    nodeSecret: 'e2e-node-secret-oauth-tokens-0123',
    dashboardName: 'dashboard-oauth-tokens',
    upstream: 'stock',
    redis: true,
  });
  a = await world.tenant('tokens-a');
  b = await world.tenant('tokens-b');
  await writeStockOauth(world, a);
  const made = await dashboardCall(world.dashboard.url, 'POST', '/api/apis/oauth/stock', {
    auth: a.system.key,
    body: { policy_id: 'stock-clients', description: 'the stock robot' },
  });
  assert.equal(made.status, 200, made.text);
  client = { id: String(made.body.client_id), secret: String(made.body.secret) };
  secrets.push(client.secret);
  gateway = await startProGateway();
});

/** The gateway of two workers in mode pro on Redis, once both workers serve the API. */
async function startProGateway(): Promise<GatewayProc> {
  // The log is appended to across restarts: this start's workers are the next ones serving.
  const serving = (log: string): number => log.split('"message":"all workers serving"').length - 1;
  const logFile = join(world.dir, 'gw-oauth-tokens.log');
  const seen = existsSync(logFile) ? serving(readFileSync(logFile, 'utf8')) : 0;
  const g = await world.startGateway({
    name: 'gw-oauth-tokens',
    secret: 'pro-gateway-oauth-tokens-secret',
    dataDir: join(world.dir, 'gw'),
    org: a.org,
    workers: 2,
    startTimeoutMs: 90_000,
    pollMs: 300,
  });
  gateway = g;
  await waitFor('both workers serving', () => serving(g.log()) > seen, 90_000);
  await waitFor('/stock/ loaded', async () => (await call('/stock/get')).status === 400, 60_000);
  return g;
}

after(async () => {
  await world.stop();
});

test('a token the gateway issued is listed in the dashboard; revoked there, the gateway refuses it', async () => {
  const first = await issue();
  const second = await issue();
  assert.deepEqual(await statuses(first), Array(6).fill(200));
  assert.deepEqual(await statuses(second), Array(6).fill(200));
  // The gateway reports each token it issues: the dashboard lists both, by hash only.
  let seen = await listed();
  await waitFor('both tokens listed', async () => (seen = await listed()).hashes.length === 2, 10_000);
  assert.deepEqual(seen.hashes, [sha(first), sha(second)].sort());
  assert.ok(!seen.text.includes(first) && !seen.text.includes(second), seen.text);

  // Another organisation neither sees nor revokes them.
  assert.equal((await listed(b)).status, 404);
  for (const [method, path, body] of [
    ['GET', `/api/apis/oauth/stock/${client.id}/tokens/${sha(first)}`, undefined],
    ['DELETE', `/api/apis/oauth/stock/${client.id}/tokens/${sha(first)}`, undefined],
    ['DELETE', `/api/apis/oauth/stock/${client.id}/tokens`, undefined],
    ['POST', `/api/apis/oauth/${client.id}/revoke`, { token: first }],
    ['POST', `/api/apis/oauth/${client.id}/revoke_all`, {}],
  ] as const) {
    const r = await dashboardCall(world.dashboard.url, method, path, { auth: b.system.key, body });
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
  }
  // A reader of organisation a sees them but revokes nothing.
  const reader = await dashboardCall(
    world.dashboard.url,
    'DELETE',
    `/api/apis/oauth/stock/${client.id}/tokens`,
    {
      auth: a.reader.key,
    },
  );
  assert.equal(reader.status, 403, reader.text);
  assert.deepEqual(await statuses(first), Array(6).fill(200));

  // Revoked in the dashboard by its listed hash: refused on every worker; the other one serves.
  const one = await dashboardCall(
    world.dashboard.url,
    'DELETE',
    `/api/apis/oauth/stock/${client.id}/tokens/${sha(first)}`,
    { auth: a.system.key },
  );
  assert.equal(one.status, 200, one.text);
  const refused = await refusedEverywhere(first, 'the revoked token refused on every worker');
  assert.equal(refused.status, 403, refused.body);
  assert.match(refused.body, /Key not authorised/);
  assert.deepEqual(await statuses(first), Array(6).fill(403));
  assert.deepEqual(await statuses(second), Array(6).fill(200));
  assert.deepEqual((await listed()).hashes, [sha(second)]);

  // All the client's tokens, at the reference's path: the second one and a third go.
  const third = await issue();
  await waitFor('the third token listed', async () => (await listed()).hashes.length === 2, 10_000);
  const all = await dashboardCall(world.dashboard.url, 'POST', `/api/apis/oauth/${client.id}/revoke_all`, {
    auth: a.system.key,
    body: {},
  });
  assert.equal(all.status, 200, all.text);
  assert.equal(all.body.Message, 'tokens revoked successfully');
  for (const t of [second, third]) {
    const r = await refusedEverywhere(t, 'every token of the client refused');
    assert.equal(r.status, 403, r.body);
  }
  assert.deepEqual((await listed()).hashes, []);
  // The client itself still gets new tokens, which serve.
  const fresh = await issue();
  assert.deepEqual(await statuses(fresh), Array(6).fill(200));
  await waitFor('the new token listed', async () => (await listed()).hashes.length === 1, 10_000);
  // Revoked at the gateway itself (RFC 7009, its management API): the dashboard lists it no more.
  const atGateway = await call('/svc/oauth/revoke', {
    method: 'POST',
    headers: {
      'x-svc-authorization': 'pro-gateway-oauth-tokens-secret',
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token: fresh, client_id: client.id }).toString(),
  });
  assert.equal(atGateway.status, 200, atGateway.body);
  assert.equal((await refusedEverywhere(fresh, 'the token revoked at the gateway refused')).status, 403);
  await waitFor(
    'the token revoked at the gateway unlisted',
    async () => (await listed()).hashes.length === 0,
    10_000,
  );

  const audit = await dashboardCall(world.dashboard.url, 'GET', '/api/audit?p=-1', { auth: a.system.key });
  const revoked = (audit.body.entries as { kind: string; action: string; object_id: string }[])
    .filter((e) => e.kind === 'oauth-tokens')
    .map((e) => [e.action, e.object_id])
    .sort();
  assert.deepEqual(
    revoked,
    [sha(first), sha(second), sha(third)].sort().map((h) => ['delete', h]),
  );
});

test('a token revoked while the gateway is down is refused once it is back', async () => {
  const token = await issue();
  assert.deepEqual(await statuses(token, 4), Array(4).fill(200));
  await waitFor('the token listed', async () => (await listed()).hashes.includes(sha(token)), 10_000);
  await gateway.stop();
  const revoked = await dashboardCall(world.dashboard.url, 'POST', `/api/apis/oauth/${client.id}/revoke`, {
    auth: a.system.key,
    body: { token, token_type_hint: 'access_token' },
  });
  assert.equal(revoked.status, 200, revoked.text);
  assert.equal(revoked.body.Message, 'token revoked successfully');
  // Redis kept the token while the gateway was down; back, it learns of the revocation.
  await startProGateway();
  const r = await refusedEverywhere(token, 'the token refused after the restart');
  assert.equal(r.status, 403, r.body);
  assert.deepEqual(await statuses(token), Array(6).fill(403));
});

test('no log holds a client secret or an access token', () => {
  const logs = readdirSync(world.dir).filter((f) => f.endsWith('.log'));
  assert.ok(logs.length >= 2, logs.join(', '));
  for (const f of logs) {
    const text = readFileSync(join(world.dir, f), 'utf8');
    for (const s of secrets) assert.ok(!text.includes(s), `a secret or token in ${f}`);
  }
});
