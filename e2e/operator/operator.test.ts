/**
 * The operator end to end: a real control plane, real gateway processes, a real upstream and
 * the operator as a process. Each test drives the cluster with kubectl and observes what a user
 * would: traffic through the gateway, the gateway's management API, resource status.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type Proc,
} from '../harness/processes.ts';
import {
  applyManifest,
  readyOf,
  startWorld,
  statusOf,
  stopWorld,
  type OperatorWorld,
  type Status,
} from './helpers.ts';

const SECRET = 'e2e-gateway-secret';
const SECRET2 = 'e2e-second-gateway-secret';
const RESYNC = '2s';

let cp: ControlPlane;
let dir: string;
let gw: GatewayProc;
let gw2: GatewayProc;
let upstream: OperatorWorld['upstream'];
let operator: Proc | undefined;
let operatorRuns = 0;
let metricsUrl = '';

async function runOperator(): Promise<Proc> {
  operatorRuns++;
  const proc = await startOperator({
    name: `operator-${operatorRuns}`,
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    env: { WATCH_NAMESPACE: 'team-a,team-b', SVC_RESYNC_PERIOD: RESYNC, LOG_LEVEL: 'debug' },
  });
  metricsUrl = `${proc.opsUrl}/metrics`;
  return proc;
}

before(async () => {
  ({ cp, dir, gw, gw2, upstream } = await startWorld({
    name: 'operator',
    namespaces: ['team-a', 'team-b', 'team-c'],
    secrets: [SECRET, SECRET2],
  }));
  operator = await runOperator();
});

after(async () => {
  await operator?.stop();
  await stopWorld({ cp, dir, gw, gw2, upstream });
});

const apiId = (ns: string, name: string): string => Buffer.from(`${ns}/${name}`).toString('base64url');

function apiManifest(ns: string, name: string, listenPath: string, extra = ''): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: ${ns}}
spec:
  name: ${name}
  use_keyless: true
  proxy: {listen_path: ${listenPath}, target_url: "${upstream.url}", strip_listen_path: true}
${extra}`;
}

const apply = (manifest: string): Promise<void> => applyManifest(cp, manifest);

/** The upstream path seen for a request through the gateway, or undefined when not proxied. */
async function proxiedPath(gateway: GatewayProc, path: string): Promise<string | undefined> {
  const r = await httpRequest(`${gateway.url}${path}`);
  if (r.status !== 200 || r.headers['x-upstream'] === undefined) return undefined;
  return (JSON.parse(r.body) as { path: string }).path;
}

async function served(gateway: GatewayProc, path: string, upstreamPath: string): Promise<void> {
  await waitFor(`${gateway.url}${path} to reach the upstream as ${upstreamPath}`, async () => {
    return (await proxiedPath(gateway, path)) === upstreamPath;
  });
}

async function notServed(gateway: GatewayProc, path: string): Promise<void> {
  await waitFor(`${gateway.url}${path} to answer 404`, async () => {
    return (await httpRequest(`${gateway.url}${path}`)).status === 404;
  });
}

async function gatewayApi(gateway: GatewayProc, id: string): Promise<{ status: number; body: string }> {
  return httpRequest(`${gateway.url}/svc/apis/${id}`, { headers: { 'x-svc-authorization': gateway.secret } });
}

const status = (kind: string, ns: string, name: string): Promise<Status> => statusOf(cp, kind, ns, name);

/** Successful ApiDefinition reconciles so far, from the operator's /metrics. */
async function reconciles(): Promise<number> {
  const text = (await httpRequest(metricsUrl)).body;
  const m = /^svc_reconcile_total\{controller="apidefinition",result="success"\} (\d+)$/m.exec(text);
  return Number(m?.[1] ?? 0);
}

test('apply: the API serves traffic and its status shows the derived ID and Ready', async () => {
  await apply(apiManifest('team-a', 'orders', '/orders/'));
  await served(gw, '/orders/list?x=1', '/list');
  const st = await waitFor('status Ready=True', async () => {
    const s = await status('apidefinition', 'team-a', 'orders');
    return readyOf(s)?.status === 'True' ? s : undefined;
  });
  assert.equal(st.api_id, apiId('team-a', 'orders'));
  assert.equal(typeof st.latestCRDSpecHash, 'string');
  assert.equal((st.latestTransaction as { status: string }).status, 'Successful');
  // Events are written in the background, after the status.
  await waitFor('a Created event', async () => {
    const events = await cp.kubectl([
      'get',
      'events',
      '-n',
      'team-a',
      '--field-selector',
      'involvedObject.name=orders',
      '-o',
      'json',
    ]);
    return (JSON.parse(events.stdout) as { items: { reason: string }[] }).items.some(
      (e) => e.reason === 'Created',
    );
  });
});

test('changing the listen path: the new path serves, the old one gives 404', async () => {
  await apply(apiManifest('team-a', 'moving', '/moving-v1/'));
  await served(gw, '/moving-v1/a', '/a');
  await apply(apiManifest('team-a', 'moving', '/moving-v2/'));
  await served(gw, '/moving-v2/a', '/a');
  await notServed(gw, '/moving-v1/a');
});

test('delete: gone from the gateway and the resource is released', async () => {
  await apply(apiManifest('team-a', 'doomed', '/doomed/'));
  await served(gw, '/doomed/x', '/x');
  await cp.kubectl(['delete', 'apidefinition', 'doomed', '-n', 'team-a', '--wait=true', '--timeout=30s']);
  assert.equal((await gatewayApi(gw, apiId('team-a', 'doomed'))).status, 404);
  await notServed(gw, '/doomed/x');
});

test('drift: an edit and a delete made directly in the gateway are reverted at the next resync', async () => {
  await apply(apiManifest('team-a', 'drifty', '/drifty/'));
  await served(gw, '/drifty/x', '/x');
  const id = apiId('team-a', 'drifty');
  const held = JSON.parse((await gatewayApi(gw, id)).body) as { proxy: Record<string, unknown> };
  const edited = { ...held, proxy: { ...held.proxy, listen_path: '/hijacked/' } };
  const put = await httpRequest(`${gw.url}/svc/apis/${id}`, {
    method: 'PUT',
    headers: { 'x-svc-authorization': SECRET, 'content-type': 'application/json' },
    body: JSON.stringify(edited),
  });
  assert.equal(put.status, 200, put.body);
  const stored = JSON.parse((await gatewayApi(gw, id)).body) as { proxy: { listen_path: string } };
  assert.equal(stored.proxy.listen_path, '/hijacked/', 'the edit is in the gateway');
  await httpRequest(`${gw.url}/svc/reload`, { headers: { 'x-svc-authorization': SECRET } });
  // Reverted by the operator at a resync: the gateway holds the manifest's listen path again.
  await waitFor('the edit reverted in the gateway', async () => {
    const held = JSON.parse((await gatewayApi(gw, id)).body) as { proxy: { listen_path: string } };
    return held.proxy.listen_path === '/drifty/';
  });
  await served(gw, '/drifty/x', '/x');
  await notServed(gw, '/hijacked/x');

  const del = await httpRequest(`${gw.url}/svc/apis/${id}`, {
    method: 'DELETE',
    headers: { 'x-svc-authorization': SECRET },
  });
  assert.equal(del.status, 200, del.body);
  await httpRequest(`${gw.url}/svc/reload`, { headers: { 'x-svc-authorization': SECRET } });
  await notServed(gw, '/drifty/x');
  await served(gw, '/drifty/x', '/x');
});

test('only watched namespaces are reconciled', async () => {
  await apply(apiManifest('team-c', 'ignored', '/ignored/'));
  await apply(apiManifest('team-b', 'watched', '/watched/'));
  await served(gw, '/watched/x', '/x');
  // Wait until every watched object has been reconciled twice more (two resyncs); by then an
  // object in an unwatched namespace would have been reconciled too.
  const watched = await cp.kubectl(['get', 'apidefinitions', '-A', '-o', 'name']);
  const objects = watched.stdout.trim().split('\n').length;
  const before = await reconciles();
  await waitFor('two resyncs', async () => (await reconciles()) >= before + 2 * objects);
  assert.equal((await gatewayApi(gw, apiId('team-c', 'ignored'))).status, 404);
  const metrics = (await httpRequest(metricsUrl)).body;
  for (const name of ['svc_reconcile_duration_seconds_count', 'svc_workqueue_depth', 'svc_reconcile_total']) {
    assert.match(metrics, new RegExp(`^${name}\\{controller="apidefinition"`, 'm'), name);
  }
  assert.deepEqual(await status('apidefinition', 'team-c', 'ignored'), {});
});

test('an OperatorContext points resources at a second gateway, and cannot go while used', async () => {
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: gw2-conf, namespace: team-a}
stringData: {SVC_AUTH: ${SECRET2}, SVC_ORG: second-org}
---
apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: second, namespace: team-a}
spec:
  env: {mode: ce, url: "${gw2.url}"}
  secretRef: {name: gw2-conf}
`);
  await apply(apiManifest('team-a', 'elsewhere', '/elsewhere/', '  contextRef: {name: second}\n'));
  await served(gw2, '/elsewhere/x', '/x');
  assert.equal((await gatewayApi(gw, apiId('team-a', 'elsewhere'))).status, 404, 'not on the first gateway');
  const held = JSON.parse((await gatewayApi(gw2, apiId('team-a', 'elsewhere'))).body) as { org_id: string };
  assert.equal(held.org_id, 'second-org', 'org from the context secret');

  const ctx = await waitFor('context status lists the API', async () => {
    const s = await status('operatorcontext', 'team-a', 'second');
    const linked = s.linked_apis as { name: string }[] | undefined;
    return linked?.some((l) => l.name === 'elsewhere') ? s : undefined;
  });
  assert.equal(readyOf(ctx)?.status, 'True');

  await cp.kubectl(['delete', 'operatorcontext', 'second', '-n', 'team-a', '--wait=false']);
  const refusing = await waitFor('context refuses to go while used', async () => {
    const s = await status('operatorcontext', 'team-a', 'second');
    return readyOf(s)?.reason === 'InUse' ? s : undefined;
  });
  assert.match(readyOf(refusing)?.message ?? '', /still used by ApiDefinition team-a\/elsewhere/);

  await cp.kubectl(['delete', 'apidefinition', 'elsewhere', '-n', 'team-a', '--wait=true', '--timeout=30s']);
  await notServed(gw2, '/elsewhere/x');
  await waitFor('context gone', async () => {
    const r = await cp.kubectl(['get', 'operatorcontext', 'second', '-n', 'team-a'], { allowFailure: true });
    return r.code !== 0 && r.stderr.includes('NotFound');
  });
});

test('a context applied before its Secret: SecretNotFound, then Ready and used once the Secret appears', async () => {
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: late, namespace: team-b}
spec:
  env: {mode: ce, url: "${gw2.url}"}
  secretRef: {name: late-conf}
`);
  await apply(apiManifest('team-b', 'waiting', '/waiting/', '  contextRef: {name: late}\n'));
  const waiting = await waitFor('the context waits for its Secret', async () => {
    const s = await status('operatorcontext', 'team-b', 'late');
    return readyOf(s)?.reason === 'SecretNotFound' ? s : undefined;
  });
  assert.equal(readyOf(waiting)?.status, 'False');
  assert.match(readyOf(waiting)?.message ?? '', /Secret team-b\/late-conf does not exist/);
  assert.equal(readyOf(await status('apidefinition', 'team-b', 'waiting'))?.reason, 'SecretNotFound');

  // No manual step: the Secret's watch queues the context, whose change queues the API (well
  // before the 60 s recheck).
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: late-conf, namespace: team-b}
stringData: {SVC_AUTH: ${SECRET2}}
`);
  await waitFor(
    'the context Ready once its Secret exists',
    async () => readyOf(await status('operatorcontext', 'team-b', 'late'))?.status === 'True',
    20_000,
  );
  await waitFor(
    'the API Ready',
    async () => readyOf(await status('apidefinition', 'team-b', 'waiting'))?.status === 'True',
    20_000,
  );
  await served(gw2, '/waiting/x', '/x');

  await cp.kubectl(['delete', 'apidefinition', 'waiting', '-n', 'team-b', '--wait=true', '--timeout=30s']);
  await cp.kubectl(['delete', 'operatorcontext', 'late', '-n', 'team-b', '--wait=true', '--timeout=30s']);
});

test('contextRef moves an API to another gateway: it is deleted from the first', async () => {
  await apply(apiManifest('team-a', 'mover', '/mover/'));
  await served(gw, '/mover/x', '/x');
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: move-to, namespace: team-a}
spec: {env: {mode: ce, url: "${gw2.url}", auth: ${SECRET2}}}
`);
  await apply(apiManifest('team-a', 'mover', '/mover/', '  contextRef: {name: move-to}\n'));
  await served(gw2, '/mover/x', '/x');
  await notServed(gw, '/mover/x');
  assert.equal((await gatewayApi(gw, apiId('team-a', 'mover'))).status, 404, 'gone from the first gateway');
  const st = await waitFor('status.pushedTo names the second gateway', async () => {
    const s = await status('apidefinition', 'team-a', 'mover');
    return (s.pushedTo as { url?: string } | undefined)?.url === gw2.url && readyOf(s)?.status === 'True'
      ? s
      : undefined;
  });
  assert.deepEqual(st.pushedTo, { url: gw2.url, contextRef: { name: 'move-to', namespace: 'team-a' } });

  await cp.kubectl(['delete', 'apidefinition', 'mover', '-n', 'team-a', '--wait=true', '--timeout=30s']);
  await notServed(gw2, '/mover/x');
  await cp.kubectl(['delete', 'operatorcontext', 'move-to', '-n', 'team-a', '--wait=true', '--timeout=30s']);
});

test('gateway down: Ready=False with a reason, then converges when it is back', async () => {
  await gw2.stop();
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: flaky, namespace: team-b}
spec: {env: {mode: ce, url: "${gw2.url}", auth: ${SECRET2}}}
`);
  await apply(apiManifest('team-b', 'patient', '/patient/', '  contextRef: {name: flaky}\n'));
  const st = await waitFor('Ready=False while the gateway is down', async () => {
    const s = await status('apidefinition', 'team-b', 'patient');
    return readyOf(s)?.status === 'False' ? s : undefined;
  });
  assert.equal(readyOf(st)?.reason, 'GatewayUnavailable');
  assert.match(readyOf(st)?.message ?? '', /unreachable/);
  assert.equal((st.latestTransaction as { status: string }).status, 'Failed');
  await waitFor('a Warning event for the failure', async () => {
    const ev = await cp.kubectl([
      'get',
      'events',
      '-n',
      'team-b',
      '--field-selector',
      'involvedObject.name=patient',
      '-o',
      'json',
    ]);
    return (JSON.parse(ev.stdout) as { items: { type: string; reason: string }[] }).items.some(
      (e) => e.type === 'Warning' && e.reason === 'GatewayUnavailable',
    );
  });

  gw2 = await startGateway({
    name: 'gateway-2b',
    secret: SECRET2,
    dataDir: join(dir, 'gw2'),
    logDir: dir,
    port: gw2.port,
  });
  await served(gw2, '/patient/x', '/x');
  await waitFor(
    'Ready=True after the gateway came back',
    async () => {
      return readyOf(await status('apidefinition', 'team-b', 'patient'))?.status === 'True';
    },
    60_000,
  );
});

test('operator restart: changes made while it was down converge, drift is reverted', async () => {
  await apply(apiManifest('team-a', 'kept', '/kept/'));
  await apply(apiManifest('team-a', 'removed', '/removed/'));
  await served(gw, '/kept/x', '/x');
  await served(gw, '/removed/x', '/x');
  await operator?.stop();

  // While the operator is down: a new API, an edited one, a deleted one, and drift in the gateway.
  await apply(apiManifest('team-a', 'added-offline', '/added-offline/'));
  await apply(apiManifest('team-a', 'kept', '/kept-v2/'));
  await cp.kubectl(['delete', 'apidefinition', 'removed', '-n', 'team-a', '--wait=false']);
  const ordersId = apiId('team-a', 'orders');
  const del = await httpRequest(`${gw.url}/svc/apis/${ordersId}`, {
    method: 'DELETE',
    headers: { 'x-svc-authorization': SECRET },
  });
  assert.equal(del.status, 200);
  await httpRequest(`${gw.url}/svc/reload`, { headers: { 'x-svc-authorization': SECRET } });
  await notServed(gw, '/orders/x');

  operator = await runOperator();
  await served(gw, '/added-offline/x', '/x');
  await served(gw, '/kept-v2/x', '/x');
  await notServed(gw, '/kept/x');
  await notServed(gw, '/removed/x');
  await served(gw, '/orders/x', '/x');
});
