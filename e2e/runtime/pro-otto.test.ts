/**
 * Otto (TykJS) middleware written through the dashboard, with real processes: a dashboard
 * (SQLite) and a gateway in mode pro with `enable_jsvm` and a `plugin_dir`. The dashboard checks
 * what every part checks (the shared rules: the driver, the hooks it runs, a `.js` path) and
 * refuses the rest with 400 naming the field, as the gateway's own API does; the middleware file
 * itself is on the gateway's disk, under its `plugin_dir`, which the dashboard does not have (and
 * gateways of one organisation may each have their own), so the gateway checks it when it loads
 * the API: an API whose file is there is served with its middleware, one whose file is missing
 * is left out (404) while the others serve, logged as an error naming the field and the file,
 * and listed with that reason in the gateway's `GET /svc/applied` (`left_out`) and in the
 * dashboard's `GET /api/nodes/apis/{id}` (the gateway reports it there); once the file is there,
 * the next reload serves it.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dashboardCall, type DashboardTenant } from '../harness/dashboard.ts';
import { httpRequest, tryRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { startProWorld, type ProWorld } from '../harness/pro.ts';

const GW_SECRET = 'pro-otto-gateway-secret';
let world: ProWorld;
let pluginDir: string;
let a: DashboardTenant;
let gateway: GatewayProc;

const TAG = `var tagRequest = new TykJS.TykMiddleware.NewMiddleware({});
tagRequest.NewProcessRequest(function (request, session, spec) {
  request.SetHeaders["X-Otto-Tag"] = "from-" + spec.APIID;
  return tagRequest.ReturnData(request, {});
});
`;

/** A keyless classic API with one otto `pre` hook, as the dashboard takes it. */
const ottoApi = (id: string, hook: Record<string, unknown>, stage = 'pre'): Record<string, unknown> => ({
  api_definition: {
    api_id: id,
    name: id,
    use_keyless: true,
    proxy: { listen_path: `/${id}/`, target_url: world.upstream.url, strip_listen_path: true },
    custom_middleware: { driver: 'otto', [stage]: stage === 'auth_check' ? hook : [hook] },
  },
});

function get(path: string): Promise<{ status: number; body: string }> {
  return tryRequest(gateway.url + path);
}

const REASON = "custom_middleware.pre[0].path: middleware/later.js can't be read in plugin_dir";

/** The gateways the dashboard lists for the API `id`, with what each serves of it. */
async function nodesOf(id: string): Promise<{ api?: unknown; left_out?: string }[]> {
  const r = await dashboardCall(world.dashboard.url, 'GET', `/api/nodes/apis/${id}`, { auth: a.system.key });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text) as { api?: unknown; left_out?: string }[];
}

before(async () => {
  world = await startProWorld({ name: 'otto', nodeSecret: 'e2e-node-secret-otto-0123456789' });
  pluginDir = join(world.dir, 'plugins');
  mkdirSync(join(pluginDir, 'middleware'), { recursive: true });
  writeFileSync(join(pluginDir, 'middleware', 'tag.js'), TAG);
  a = await world.tenant('pro-otto');
  for (const [id, file] of [
    ['tagged', 'tag.js'],
    ['later', 'later.js'],
  ] as const) {
    const r = await dashboardCall(world.dashboard.url, 'POST', '/api/apis', {
      auth: a.system.key,
      body: ottoApi(id, { name: 'tagRequest', path: `middleware/${file}` }),
    });
    assert.equal(r.status, 200, `${id}: ${r.text}`);
  }
  gateway = await world.startGateway({
    name: 'gw-otto',
    secret: GW_SECRET,
    dataDir: join(world.dir, 'gw'),
    org: a.org,
    pollMs: 300,
    env: { SVC_GW_PLUGIN_DIR: pluginDir, SVC_GW_ENABLE_JSVM: 'true' },
  });
});

after(async () => {
  await world.stop();
});

test('the dashboard refuses what the shared rules refuse, naming the field', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      ottoApi('r-auth', { name: 'tagRequest', path: 'middleware/tag.js' }, 'auth_check'),
      /custom_middleware\.auth_check: .*otto \(TykJS\) auth_check hook is not run by this gateway/,
    ],
    [
      ottoApi('r-ts', { name: 'tagRequest', path: 'middleware/tag.ts' }),
      /custom_middleware\.pre\[0\]\.path: .*an otto \(TykJS\) middleware is a \.js file/,
    ],
  ];
  for (const [body, message] of cases) {
    const r = await dashboardCall(world.dashboard.url, 'POST', '/api/apis', { auth: a.system.key, body });
    assert.equal(r.status, 400, r.text);
    assert.match(r.text, message);
  }
});

test('an API whose file is under the gateway plugin_dir: served with its middleware', async () => {
  await waitFor('the tagged API served', async () => (await get('/tagged/x')).status === 200);
  const echoed = JSON.parse((await get('/tagged/x')).body) as { headers: Record<string, string> };
  assert.equal(echoed.headers['x-otto-tag'], 'from-tagged');
});

test('an API whose file the gateway does not have: left out, logged and listed with the reason', async () => {
  assert.equal((await get('/later/x')).status, 404);
  const applied = await httpRequest(`${gateway.url}/svc/applied`, {
    headers: { 'x-svc-authorization': GW_SECRET },
  });
  assert.equal(applied.status, 200, applied.body);
  const body = JSON.parse(applied.body) as {
    apis: Record<string, unknown>;
    left_out: Record<string, string>;
  };
  assert.ok(body.apis.tagged, 'the other API is served');
  assert.equal(body.apis.later, undefined);
  assert.match(
    body.left_out.later ?? '',
    /^custom_middleware\.pre\[0\]\.path: middleware\/later\.js can't be read in plugin_dir/,
  );
  assert.match(
    gateway.log(),
    /apis left out of the routes.*middleware\/later\.js can't be read in plugin_dir/,
  );
  // The dashboard, where the API was written, says which gateway left it out and why.
  await waitFor('the dashboard to hold the reason', async () => {
    const node = (await nodesOf('later'))[0];
    return node?.api === undefined && (node?.left_out ?? '').startsWith(REASON);
  });
  const node = (await nodesOf('tagged'))[0];
  assert.ok(node?.api, 'the dashboard sees the other API served');
  assert.equal(node.left_out, undefined);
});

test('the file put under plugin_dir: the next change the dashboard announces serves it', async () => {
  writeFileSync(join(pluginDir, 'middleware', 'later.js'), TAG);
  // A change the dashboard announces makes the gateway reload (here, the API's name).
  const body = ottoApi('later', { name: 'tagRequest', path: 'middleware/later.js' });
  (body.api_definition as Record<string, unknown>).name = 'later, its file there';
  const r = await dashboardCall(world.dashboard.url, 'PUT', '/api/apis/later', { auth: a.system.key, body });
  assert.equal(r.status, 200, r.text);
  await waitFor('the later API served', async () => (await get('/later/x')).status === 200);
  const applied = await httpRequest(`${gateway.url}/svc/applied`, {
    headers: { 'x-svc-authorization': GW_SECRET },
  });
  assert.deepEqual((JSON.parse(applied.body) as { left_out: unknown }).left_out, {});
  await waitFor('the dashboard to see it served', async () => {
    const node = (await nodesOf('later'))[0];
    return node?.api !== undefined && node.left_out === undefined;
  });
});
