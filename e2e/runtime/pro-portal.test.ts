/**
 * The developer portal (docs/portal.md), with real processes: a dashboard (SQLite) and a gateway
 * in mode pro with streams on Bento. A developer of one organisation signs up (approved by hand,
 * or at once where the organisation says so), requests keys (approved by hand and automatically),
 * calls the API through the gateway with them, revokes one, subscribes a webhook to a product's
 * events and receives a stream's messages signed with its secret; another organisation's
 * developer sees none of it, on the `/portal/{org}/` paths or on the organisation's domain.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { streamsDocument } from '../../gateway/streams/testing.ts';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { startProWorld, writeApi, writePolicy, type ProWorld } from '../harness/pro.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const NODE_SECRET = 'e2e-node-secret-portal-0123';
const GW_SECRET = 'pro-portal-gateway-secret';
let w: ProWorld;
let a: DashboardTenant;
let b: DashboardTenant;
let gw: GatewayProc;
let feedSecret = '';

interface Hit {
  path: string;
  body: string;
  headers: IncomingHttpHeaders;
}
const hits: Hit[] = [];
let hooks: Server;
let hooksUrl = '';

/** A call of the developer API of `org` (`/portal/{org}/api/...`), with a session token. */
async function dev(
  org: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; host?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; text: string; headers: IncomingHttpHeaders }> {
  const headers: Record<string, string> = {};
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.host !== undefined) headers.host = opts.host;
  const base = opts.host === undefined ? `${w.dashboard.url}/portal/${org}/api` : `${w.dashboard.url}/api`;
  const r = await httpRequest(base + path, {
    method,
    headers,
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(r.body) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: r.status, body, text: r.body, headers: r.headers };
}

/** An admin API call as `t`'s system user that must answer 200. */
async function admin(
  t: DashboardTenant,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const r = await dashboardCall(w.dashboard.url, method, path, {
    auth: t.system.key,
    ...(body === undefined ? {} : { body }),
  });
  assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
  return r.body;
}

/** Signs up and signs in a developer of `org` (approving it through `t` when it is pending). */
async function developer(
  org: string,
  t: DashboardTenant,
  email: string,
): Promise<{ id: string; token: string }> {
  const reg = await dev(org, 'POST', '/register', {
    body: { email, password: 'correct horse', name: email },
  });
  assert.equal(reg.status, 200, reg.text);
  const id = String(reg.body.id);
  if (reg.body.status === 'pending')
    await admin(t, 'PUT', `/api/portal/developers/${id}`, { status: 'active' });
  const login = await dev(org, 'POST', '/login', { body: { email, password: 'correct horse' } });
  assert.equal(login.status, 200, login.text);
  return { id, token: String(login.body.token) };
}

async function gatewayStatus(path: string, key?: string): Promise<number> {
  try {
    return (await httpRequest(gw.url + path, key === undefined ? {} : { headers: { authorization: key } }))
      .status;
  } catch {
    return 0;
  }
}

async function waitGateway(path: string, status: number, key?: string): Promise<void> {
  let last = 0;
  await waitFor(
    `${path} to answer ${status}`,
    async () => {
      last = await gatewayStatus(path, key);
      return last === status;
    },
    20_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)} (last ${last})`);
  });
}

before(async () => {
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ path: req.url ?? '/', body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
  hooksUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}`;

  w = await startProWorld({ name: 'portal', nodeSecret: NODE_SECRET });
  a = await w.tenant('portal-a');
  b = await w.tenant('portal-b');
  await writeApi(w, a, 'orders', { use_keyless: false });
  await writePolicy(w, a, 'orders-pol', 'orders');
  const oas = { openapi: '3.0.3', info: { title: 'Orders', version: '1' }, paths: { '/x': { get: {} } } };
  await admin(a, 'PUT', '/api/portal/products/orders', {
    name: 'Orders',
    policy_id: 'orders-pol',
    docs: { doc_type: 'oas', documentation: oas },
    subscribable_events: ['order.created', 'order.shipped'],
  });
  await admin(a, 'PUT', '/api/portal/products/orders-auto', {
    name: 'Orders (instant)',
    api_id: 'orders',
    key_approval: 'auto',
    subscribable_events: ['order.created'],
  });
  await admin(a, 'PUT', '/api/portal/catalogues/public', { name: 'Public', apis: ['orders', 'orders-auto'] });
  feedSecret = String(
    (await admin(a, 'POST', '/api/portal/products/orders/actions/feed-secret')).feed_secret,
  );
  // The stream names the product `orders` by its feed.
  const streams = await dashboardCall(w.dashboard.url, 'POST', '/api/apis/streams', {
    auth: a.system.key,
    contentType: 'application/vnd.svc.streams.oas',
    body: streamsDocument('events', {
      created: {
        input: { http_server: { path: '/in', ws_path: '' } },
        output: {
          portal_webhook: {
            event_type: 'order.created',
            portal_url: `${w.dashboard.url}/portal/${a.org}/webhooks/orders`,
            secret: feedSecret,
          },
        },
      },
    }),
  });
  assert.equal(streams.status, 200, streams.text);
  // Organisation b approves its developers at once and has a product of its own.
  await admin(b, 'PUT', '/api/portal/config', { developer_approval: 'auto' });
  await writeApi(w, b, 'b-api', { use_keyless: false }, '/b/');
  await admin(b, 'PUT', '/api/portal/products/b-product', {
    name: 'B',
    api_id: 'b-api',
    key_approval: 'auto',
  });
  await admin(b, 'PUT', '/api/portal/catalogues/all', { apis: ['b-product'] });
  gw = await w.startGateway({
    name: 'gw-portal',
    secret: GW_SECRET,
    org: a.org,
    pollMs: 300,
    env: { SVC_GW_STREAMING_ENABLED: 'true', SVC_GW_ANALYTICS_FLUSH_INTERVAL_MS: '200' },
  });
  await waitGateway('/orders/x', 401);
});

after(async () => {
  try {
    await stopAll(w);
  } finally {
    hooks.closeAllConnections();
    hooks.close();
  }
});

test('portal: a developer signs up pending, cannot sign in until approved by hand, then can', async () => {
  const reg = await dev(a.org, 'POST', '/register', {
    body: { email: 'Ada@Dev.example', password: 'correct horse', name: 'Ada' },
  });
  assert.equal(reg.status, 200, reg.text);
  assert.equal(reg.body.status, 'pending');
  const again = await dev(a.org, 'POST', '/register', {
    body: { email: 'ada@dev.example', password: 'another one' },
  });
  assert.equal(again.status, 409, 'the e-mail is taken in this organisation');
  const short = await dev(a.org, 'POST', '/register', {
    body: { email: 'x@dev.example', password: 'short' },
  });
  assert.equal(short.status, 400);
  assert.match(short.text, /password: /);

  const early = await dev(a.org, 'POST', '/login', {
    body: { email: 'ada@dev.example', password: 'correct horse' },
  });
  assert.equal(early.status, 403, early.text);
  assert.match(early.text, /pending/);
  const wrong = await dev(a.org, 'POST', '/login', {
    body: { email: 'ada@dev.example', password: 'wrong horse' },
  });
  const nobody = await dev(a.org, 'POST', '/login', {
    body: { email: 'no@dev.example', password: 'wrong horse' },
  });
  assert.equal(wrong.status, 401);
  assert.equal(nobody.status, 401);
  assert.equal(wrong.text, nobody.text, 'a wrong password and an unknown e-mail look the same');

  // The reader of the organisation has no portal permission; its admin does.
  const reader = await dashboardCall(w.dashboard.url, 'GET', '/api/portal/developers', {
    auth: a.reader.key,
  });
  assert.equal(reader.status, 403, reader.text);
  const list = await admin(a, 'GET', '/api/portal/developers');
  const ada = (list.developers as Record<string, unknown>[]).find((d) => d.email === 'ada@dev.example');
  assert.ok(ada !== undefined, JSON.stringify(list));
  assert.equal(ada.status, 'pending');
  assert.equal(JSON.stringify(list).includes('scrypt'), false, 'no password hash is answered');
  await admin(a, 'PUT', `/api/portal/developers/${String(ada.id)}`, { status: 'active' });

  const login = await dev(a.org, 'POST', '/login', {
    body: { email: 'ada@dev.example', password: 'correct horse' },
  });
  assert.equal(login.status, 200, login.text);
  assert.match(
    String(login.headers['set-cookie']),
    new RegExp(`^svc_portal=\\w+; Path=/portal/${a.org}/; HttpOnly; SameSite=Strict`),
  );
  const me = await dev(a.org, 'GET', '/me', { token: String(login.body.token) });
  assert.equal(me.status, 200, me.text);
  assert.equal(me.body.email, 'ada@dev.example');
  // The cookie authenticates as well as the Bearer token.
  const byCookie = await httpRequest(`${w.dashboard.url}/portal/${a.org}/api/me`, {
    headers: { cookie: String(login.headers['set-cookie']).split(';')[0] ?? '' },
  });
  assert.equal(byCookie.status, 200, byCookie.body);
  const out = await dev(a.org, 'POST', '/logout', { token: String(login.body.token) });
  assert.equal(out.status, 200);
  assert.equal((await dev(a.org, 'GET', '/me', { token: String(login.body.token) })).status, 401);
});

test('portal: a key approved by hand and one approved automatically call the API through the gateway; a revoked key stops', async () => {
  const d = await developer(a.org, a, 'keys@dev.example');
  const cat = await dev(a.org, 'GET', '/catalogue', { token: d.token });
  assert.equal(cat.status, 200, cat.text);
  assert.deepEqual((cat.body.products as { id: string }[]).map((p) => p.id).sort(), [
    'orders',
    'orders-auto',
  ]);
  const docs = await dev(a.org, 'GET', '/catalogue/orders/docs', { token: d.token });
  assert.equal(docs.status, 200, docs.text);
  assert.equal((docs.body.info as { title: string }).title, 'Orders');

  // By hand: pending, refused to claim, approved by the organisation, claimed once.
  const req = await dev(a.org, 'POST', '/key-requests', { token: d.token, body: { product_id: 'orders' } });
  assert.equal(req.status, 200, req.text);
  assert.equal(req.body.status, 'pending');
  assert.equal(req.body.key, undefined);
  const id = String(req.body.id);
  assert.equal((await dev(a.org, 'POST', `/key-requests/${id}/key`, { token: d.token })).status, 409);
  const pending = await admin(a, 'GET', '/api/portal/key-requests?status=pending');
  assert.ok((pending.key_requests as { id: string }[]).some((r) => r.id === id));
  await admin(a, 'POST', `/api/portal/key-requests/${id}/approve`);
  const claimed = await dev(a.org, 'POST', `/key-requests/${id}/key`, { token: d.token });
  assert.equal(claimed.status, 200, claimed.text);
  const manualKey = String(claimed.body.key);
  assert.equal(
    (await dev(a.org, 'POST', `/key-requests/${id}/key`, { token: d.token })).status,
    409,
    'shown once',
  );
  await waitGateway('/orders/x', 200, manualKey);

  // Automatically: the key comes with the answer.
  const auto = await dev(a.org, 'POST', '/key-requests', {
    token: d.token,
    body: { product_id: 'orders-auto' },
  });
  assert.equal(auto.status, 200, auto.text);
  assert.equal(auto.body.status, 'issued');
  const autoKey = String(auto.body.key);
  await waitGateway('/orders/x', 200, autoKey);

  const keys = await dev(a.org, 'GET', '/keys', { token: d.token });
  const mine = keys.body.keys as { key_id: string; product_id: string }[];
  assert.deepEqual(mine.map((k) => k.product_id).sort(), ['orders', 'orders-auto']);
  assert.equal(keys.text.includes(manualKey), false, 'a key is never shown again');
  const autoId = mine.find((k) => k.product_id === 'orders-auto')?.key_id ?? '';
  // The developer sees its key's traffic, from the analytics the gateway sends the dashboard.
  for (let i = 0; i < 3; i++) assert.equal(await gatewayStatus('/orders/x', autoKey), 200);
  await waitFor('the key usage counted', async () => {
    const u = await dev(a.org, 'GET', `/keys/${autoId}/usage`, { token: d.token });
    return u.status === 200 && Number(u.body.requests) >= 3;
  });
  const otherUsage = await dev(a.org, 'GET', `/keys/${autoId}/usage`, {
    token: (await developer(a.org, a, 'nosy@dev.example')).token,
  });
  assert.equal(otherUsage.status, 404, "another developer's key usage is not found");
  const revoked = await dev(a.org, 'DELETE', `/keys/${autoId}`, { token: d.token });
  assert.equal(revoked.status, 200, revoked.text);
  await waitGateway('/orders/x', 403, autoKey);
  assert.equal(await gatewayStatus('/orders/x', manualKey), 200, 'the other key still works');

  // Another developer of the same organisation sees none of these.
  const other = await developer(a.org, a, 'other@dev.example');
  assert.deepEqual((await dev(a.org, 'GET', '/keys', { token: other.token })).body.keys, []);
  assert.deepEqual((await dev(a.org, 'GET', '/key-requests', { token: other.token })).body.key_requests, []);
  assert.equal((await dev(a.org, 'POST', `/key-requests/${id}/key`, { token: other.token })).status, 404);
  const mineId = mine.find((k) => k.product_id === 'orders')?.key_id ?? '';
  assert.equal((await dev(a.org, 'DELETE', `/keys/${mineId}`, { token: other.token })).status, 404);
});

test("portal: a key the organisation deletes in the dashboard's keys stops at the gateway and shows revoked in the portal", async () => {
  const d = await developer(a.org, a, 'deleted-key@dev.example');
  const auto = await dev(a.org, 'POST', '/key-requests', {
    token: d.token,
    body: { product_id: 'orders-auto' },
  });
  assert.equal(auto.status, 200, auto.text);
  const key = String(auto.body.key);
  const keyId = String(auto.body.key_id);
  await waitGateway('/orders/x', 200, key);
  await admin(a, 'DELETE', `/api/keys/${keyId}?hashed=true`);
  await waitGateway('/orders/x', 403, key);
  assert.deepEqual((await dev(a.org, 'GET', '/keys', { token: d.token })).body.keys, []);
  const requests = (await dev(a.org, 'GET', '/key-requests', { token: d.token })).body.key_requests as {
    status: string;
  }[];
  assert.deepEqual(
    requests.map((r) => r.status),
    ['revoked'],
  );
  const portalKeys = (await admin(a, 'GET', '/api/portal/keys?p=-1')).keys as { key_id: string }[];
  assert.equal(
    portalKeys.some((k) => k.key_id === keyId),
    false,
  );
  const again = await dev(a.org, 'DELETE', `/keys/${keyId}`, { token: d.token });
  assert.equal(again.status, 410, again.text);
  assert.match(String(again.body.Message), /already revoked/);
});

test('portal: a webhook subscription receives the product stream events, signed with its secret', async () => {
  const d = await developer(a.org, a, 'hooks@dev.example');
  const before = await dev(a.org, 'POST', '/subscriptions', {
    token: d.token,
    body: { product_id: 'orders', url: `${hooksUrl}/early`, events: ['order.created'] },
  });
  assert.equal(before.status, 403, 'subscribing needs a key of the product');
  // A key of each product (the manual one approved by the organisation).
  const req = await dev(a.org, 'POST', '/key-requests', { token: d.token, body: { product_id: 'orders' } });
  await admin(a, 'POST', `/api/portal/key-requests/${String(req.body.id)}/approve`);
  assert.equal(
    (await dev(a.org, 'POST', `/key-requests/${String(req.body.id)}/key`, { token: d.token })).status,
    200,
  );
  assert.equal(
    (await dev(a.org, 'POST', '/key-requests', { token: d.token, body: { product_id: 'orders-auto' } }))
      .status,
    200,
  );
  const bad = await dev(a.org, 'POST', '/subscriptions', {
    token: d.token,
    body: { product_id: 'orders', url: `${hooksUrl}/x`, events: ['order.deleted'] },
  });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /events\[0\]/);

  const sub = await dev(a.org, 'POST', '/subscriptions', {
    token: d.token,
    body: { product_id: 'orders', url: `${hooksUrl}/orders`, events: ['order.created'] },
  });
  assert.equal(sub.status, 200, sub.text);
  const secret = String(sub.body.secret);
  assert.equal(secret.length, 64);
  // Subscribed to the same event of another product: the stream names `orders`, not it.
  const otherProduct = await dev(a.org, 'POST', '/subscriptions', {
    token: d.token,
    body: { product_id: 'orders-auto', url: `${hooksUrl}/auto`, events: ['order.created'] },
  });
  assert.equal(otherProduct.status, 200, otherProduct.text);
  const listed = await dev(a.org, 'GET', '/subscriptions', { token: d.token });
  assert.equal(listed.text.includes(secret), false, 'the secret is shown once');

  // The feed answers the product's subscriptions behind the feed secret only.
  const feedUrl = `${w.dashboard.url}/portal/${a.org}/webhooks/orders`;
  assert.equal((await httpRequest(feedUrl)).status, 401);
  assert.equal((await httpRequest(feedUrl, { headers: { authorization: 'Bearer nope' } })).status, 401);
  const feed = await httpRequest(feedUrl, { headers: { authorization: `Bearer ${feedSecret}` } });
  assert.equal(feed.status, 200, feed.body);
  const subs = (JSON.parse(feed.body) as { subscriptions: { url: string }[] }).subscriptions;
  assert.deepEqual(
    subs.map((s) => s.url),
    [`${hooksUrl}/orders`],
  );

  const message = '{"order":42}';
  await waitFor(
    'the subscriber to get the message',
    async () => {
      await httpRequest(`${gw.url}/events/in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: message,
      }).catch(() => undefined);
      return hits.some((h) => h.path === '/orders');
    },
    30_000,
    1_000,
  );
  const got = hits.filter((h) => h.path === '/orders');
  for (const h of got) {
    assert.equal(h.body, message);
    assert.equal(h.headers['x-svc-event'], 'order.created');
    assert.equal(
      h.headers['x-svc-signature'],
      `sha256=${createHmac('sha256', secret).update(h.body).digest('hex')}`,
      'signed with the subscription secret',
    );
  }
  assert.equal(
    hits.filter((h) => h.path === '/auto').length,
    0,
    "another product's subscription gets nothing",
  );
});

test("portal: another organisation's developer sees none of it, on the paths or on the portal domain", async () => {
  const ad = await developer(a.org, a, 'iso-a@dev.example');
  const bd = await developer(b.org, b, 'iso-b@dev.example');
  // b approves at once: the developer was active without an approval.
  const bList = await admin(b, 'GET', '/api/portal/developers');
  assert.deepEqual(
    (bList.developers as { email: string }[]).map((d) => d.email),
    ['iso-b@dev.example'],
    "b's admin lists b's developers only",
  );
  const bCat = await dev(b.org, 'GET', '/catalogue', { token: bd.token });
  assert.deepEqual(
    (bCat.body.products as { id: string }[]).map((p) => p.id),
    ['b-product'],
  );
  assert.equal((await dev(b.org, 'GET', '/catalogue/orders', { token: bd.token })).status, 404);
  assert.equal(
    (await dev(b.org, 'POST', '/key-requests', { token: bd.token, body: { product_id: 'orders' } })).status,
    404,
  );
  // A session of one organisation is nobody at the other's portal.
  assert.equal((await dev(a.org, 'GET', '/catalogue', { token: bd.token })).status, 401);
  assert.equal((await dev(b.org, 'GET', '/me', { token: ad.token })).status, 401);
  assert.equal(
    (await dev(a.org, 'POST', '/login', { body: { email: 'iso-b@dev.example', password: 'correct horse' } }))
      .status,
    401,
  );
  // The same e-mail may sign up in both organisations.
  assert.equal(
    (
      await dev(b.org, 'POST', '/register', {
        body: { email: 'iso-a@dev.example', password: 'correct horse' },
      })
    ).status,
    200,
  );
  // b's admin API finds none of a's products, requests or subscriptions.
  const bReqs = await admin(b, 'GET', '/api/portal/key-requests');
  assert.deepEqual(bReqs.key_requests, []);
  assert.deepEqual((await admin(b, 'GET', '/api/portal/subscriptions')).subscriptions, []);
  const aProduct = await dashboardCall(w.dashboard.url, 'GET', '/api/portal/products/orders', {
    auth: b.system.key,
  });
  assert.equal(aProduct.status, 404);
  // The feed of a's product under b's portal is not found there.
  const feed = await httpRequest(`${w.dashboard.url}/portal/${b.org}/webhooks/orders`, {
    headers: { authorization: `Bearer ${feedSecret}` },
  });
  assert.equal(feed.status, 401);

  // On the portal domain (the organisation's cname) the portal is served at the root.
  const onDomain = await dev(a.org, 'GET', '/catalogue', { token: ad.token, host: `${a.org}.example.com` });
  assert.equal(onDomain.status, 200, onDomain.text);
  assert.equal((onDomain.body.products as unknown[]).length, 2);
  const bOnA = await dev(a.org, 'GET', '/catalogue', { token: bd.token, host: `${a.org}.example.com` });
  assert.equal(bOnA.status, 401);
  const page = await httpRequest(`${w.dashboard.url}/`, { headers: { host: `${b.org}.example.com` } });
  assert.equal(page.status, 200);
  assert.match(page.body, /<title>[^<]*[Pp]ortal/);
});
