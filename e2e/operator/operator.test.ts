/**
 * The operator end to end: a real control plane, real gateway processes, a real upstream and
 * the operator as a process. Each test drives the cluster with kubectl and observes what a user
 * would: traffic through the gateway, the gateway's management API, resource status.
 *
 * Also runs against a cluster (`SVC_E2E_CLUSTER=1`, `make e2e-cluster`, the node suite
 * e2e/node/cluster-suites.node.ts) with the operator and the gateways installed by the charts,
 * every test with the same assertions: e2e/harness/world.ts gives the operator the suite's
 * settings (a 2 s resync, a WATCH_NAMESPACE list) through its Secret, a second gateway (a second
 * svc-gateway release), and stops and starts the second gateway and the operator (pods there,
 * processes here). One difference the chart makes: its webhooks refuse to delete a context still
 * in use (the API server answers, naming the user), where locally, without webhooks, the
 * operator's finalizer holds it with the reason in its status.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { startWorld, type GatewayEndpoint, type World } from '../harness/world.ts';
import { apiDefinitionManifest, applyManifest, readyOf, statusOf, type Status } from './helpers.ts';

const SECRET = 'e2e-gateway-secret';
const SECRET2 = 'e2e-second-gateway-secret';
const RESYNC = '2s';

let w: World;
/** The suite's namespaces (their own names locally). */
let A: string;
let B: string;
let C: string;

before(async () => {
  w = await startWorld({
    name: 'operator',
    namespaces: ['team-a', 'team-b', 'team-c'],
    secrets: [SECRET, SECRET2],
    operatorEnv: { WATCH_NAMESPACE: 'team-a,team-b', SVC_RESYNC_PERIOD: RESYNC, LOG_LEVEL: 'debug' },
  });
  A = w.ns('team-a');
  B = w.ns('team-b');
  C = w.ns('team-c');
});

after(async () => {
  await w.stop();
});

const apiId = (ns: string, name: string): string => Buffer.from(`${ns}/${name}`).toString('base64url');

const apiManifest = (ns: string, name: string, listenPath: string, extra = ''): string =>
  apiDefinitionManifest({ ns, name, listenPath, target: w.upstream.url, extra });

const apply = (manifest: string): Promise<void> => applyManifest(w, manifest);

/** The upstream path seen for a request through the gateway, or undefined when not proxied. */
async function proxiedPath(gateway: GatewayEndpoint, path: string): Promise<string | undefined> {
  const r = await httpRequest(`${gateway.url}${path}`);
  if (r.status !== 200 || r.headers['x-upstream'] === undefined) return undefined;
  return (JSON.parse(r.body) as { path: string }).path;
}

async function served(gateway: GatewayEndpoint, path: string, upstreamPath: string): Promise<void> {
  await waitFor(`${gateway.url}${path} to reach the upstream as ${upstreamPath}`, async () => {
    return (await proxiedPath(gateway, path)) === upstreamPath;
  });
}

async function notServed(gateway: GatewayEndpoint, path: string): Promise<void> {
  await waitFor(`${gateway.url}${path} to answer 404`, async () => {
    return (await httpRequest(`${gateway.url}${path}`)).status === 404;
  });
}

async function gatewayApi(gateway: GatewayEndpoint, id: string): Promise<{ status: number; body: string }> {
  return httpRequest(`${gateway.url}/svc/apis/${id}`, { headers: { 'x-svc-authorization': gateway.secret } });
}

const status = (kind: string, ns: string, name: string): Promise<Status> => statusOf(w, kind, ns, name);

/** Successful ApiDefinition reconciles so far, from the operator's /metrics. */
async function reconciles(): Promise<number> {
  const text = await w.operatorMetrics();
  const m = /^svc_reconcile_total\{controller="apidefinition",result="success"\} (\d+)$/m.exec(text);
  return Number(m?.[1] ?? 0);
}

test('apply: the API serves traffic and its status shows the derived ID and Ready', async () => {
  await apply(apiManifest(A, 'orders', '/orders/'));
  await served(w.gateway, '/orders/list?x=1', '/list');
  const st = await waitFor('status Ready=True', async () => {
    const s = await status('apidefinition', A, 'orders');
    return readyOf(s)?.status === 'True' ? s : undefined;
  });
  assert.equal(st.api_id, apiId(A, 'orders'));
  assert.equal(typeof st.latestCRDSpecHash, 'string');
  assert.equal((st.latestTransaction as { status: string }).status, 'Successful');
  // Events are written in the background, after the status.
  await waitFor('a Created event', async () => {
    const events = await w.kubectl([
      'get',
      'events',
      '-n',
      A,
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
  await apply(apiManifest(A, 'moving', '/moving-v1/'));
  await served(w.gateway, '/moving-v1/a', '/a');
  await apply(apiManifest(A, 'moving', '/moving-v2/'));
  await served(w.gateway, '/moving-v2/a', '/a');
  await notServed(w.gateway, '/moving-v1/a');
});

test('delete: gone from the gateway and the resource is released', async () => {
  await apply(apiManifest(A, 'doomed', '/doomed/'));
  await served(w.gateway, '/doomed/x', '/x');
  await w.kubectl(['delete', 'apidefinition', 'doomed', '-n', A, '--wait=true', '--timeout=30s']);
  assert.equal((await gatewayApi(w.gateway, apiId(A, 'doomed'))).status, 404);
  await notServed(w.gateway, '/doomed/x');
});

test('drift: an edit and a delete made directly in the gateway are reverted at the next resync', async () => {
  await apply(apiManifest(A, 'drifty', '/drifty/'));
  await served(w.gateway, '/drifty/x', '/x');
  const id = apiId(A, 'drifty');
  const held = JSON.parse((await gatewayApi(w.gateway, id)).body) as { proxy: Record<string, unknown> };
  const edited = { ...held, proxy: { ...held.proxy, listen_path: '/hijacked/' } };
  const put = await httpRequest(`${w.gateway.url}/svc/apis/${id}`, {
    method: 'PUT',
    headers: { 'x-svc-authorization': w.gateway.secret, 'content-type': 'application/json' },
    body: JSON.stringify(edited),
  });
  // The PUT's 200 is the gateway's word that it stored the edit. Reading it back here would race
  // the suite's 2 s resync (under load the operator can revert before the read, as CI saw).
  assert.equal(put.status, 200, put.body);
  assert.deepEqual(JSON.parse(put.body), { key: id, status: 'ok', action: 'modified' });
  await httpRequest(`${w.gateway.url}/svc/reload`, {
    headers: { 'x-svc-authorization': w.gateway.secret },
  });
  // Reverted by the operator at a resync: the gateway holds the manifest's listen path again.
  await waitFor('the edit reverted in the gateway', async () => {
    const held = JSON.parse((await gatewayApi(w.gateway, id)).body) as { proxy: { listen_path: string } };
    return held.proxy.listen_path === '/drifty/';
  });
  await served(w.gateway, '/drifty/x', '/x');
  await notServed(w.gateway, '/hijacked/x');

  // Deleted directly: the DELETE's 200 says it is gone (a 404 read afterwards would race the
  // resync again); the operator puts it back and it is served.
  const del = await httpRequest(`${w.gateway.url}/svc/apis/${id}`, {
    method: 'DELETE',
    headers: { 'x-svc-authorization': w.gateway.secret },
  });
  assert.equal(del.status, 200, del.body);
  await httpRequest(`${w.gateway.url}/svc/reload`, {
    headers: { 'x-svc-authorization': w.gateway.secret },
  });
  await waitFor(
    'the deleted API back in the gateway',
    async () => (await gatewayApi(w.gateway, id)).status === 200,
  );
  await served(w.gateway, '/drifty/x', '/x');
});

test('only watched namespaces are reconciled', async () => {
  await apply(apiManifest(C, 'ignored', '/ignored/'));
  await apply(apiManifest(B, 'watched', '/watched/'));
  await served(w.gateway, '/watched/x', '/x');
  // Wait until every watched object has been reconciled twice more (two resyncs); by then an
  // object in an unwatched namespace would have been reconciled too.
  // The suite's objects (in a cluster, other namespaces' are not the suite's to count).
  let objects = 0;
  for (const ns of [A, B, C]) {
    const listed = await w.kubectl(['get', 'apidefinitions', '-n', ns, '-o', 'name']);
    objects += listed.stdout.split('\n').filter((l) => l !== '').length;
  }
  const before = await reconciles();
  await waitFor('two resyncs', async () => (await reconciles()) >= before + 2 * objects);
  assert.equal((await gatewayApi(w.gateway, apiId(C, 'ignored'))).status, 404);
  const metrics = await w.operatorMetrics();
  for (const name of ['svc_reconcile_duration_seconds_count', 'svc_workqueue_depth', 'svc_reconcile_total']) {
    assert.match(metrics, new RegExp(`^${name}\\{controller="apidefinition"`, 'm'), name);
  }
  assert.deepEqual(await status('apidefinition', C, 'ignored'), {});
});

test('an OperatorContext points resources at a second gateway, and cannot go while used', async () => {
  const gw2 = await w.secondGateway();
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: gw2-conf, namespace: ${A}}
stringData: {SVC_AUTH: ${gw2.secret}, SVC_ORG: second-org}
---
apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: second, namespace: ${A}}
spec:
  env: {mode: ce, url: "${gw2.operatorUrl}"}
  secretRef: {name: gw2-conf}
`);
  await apply(apiManifest(A, 'elsewhere', '/elsewhere/', '  contextRef: {name: second}\n'));
  await served(gw2, '/elsewhere/x', '/x');
  assert.equal((await gatewayApi(w.gateway, apiId(A, 'elsewhere'))).status, 404, 'not on the first gateway');
  const held = JSON.parse((await gatewayApi(gw2, apiId(A, 'elsewhere'))).body) as {
    org_id: string;
  };
  assert.equal(held.org_id, 'second-org', 'org from the context secret');

  const ctx = await waitFor('context status lists the API', async () => {
    const s = await status('operatorcontext', A, 'second');
    const linked = s.linked_apis as { name: string }[] | undefined;
    return linked?.some((l) => l.name === 'elsewhere') ? s : undefined;
  });
  assert.equal(readyOf(ctx)?.status, 'True');

  const del = await w.kubectl(['delete', 'operatorcontext', 'second', '-n', A, '--wait=false'], {
    allowFailure: true,
  });
  if (w.cluster) {
    // The chart's webhooks are on: the API server refuses the delete, naming the user.
    assert.notEqual(del.code, 0, 'the delete of a used context is refused');
    assert.match(
      del.stderr,
      new RegExp(`OperatorContext ${A}/second is still used by ApiDefinition ${A}/elsewhere`),
    );
  } else {
    // No webhooks: the operator's finalizer holds the context and its status says why.
    assert.equal(del.code, 0, del.stderr);
    const refusing = await waitFor('context refuses to go while used', async () => {
      const s = await status('operatorcontext', A, 'second');
      return readyOf(s)?.reason === 'InUse' ? s : undefined;
    });
    assert.match(readyOf(refusing)?.message ?? '', new RegExp(`still used by ApiDefinition ${A}/elsewhere`));
  }
  const ctx2 = await w.kubectl(['get', 'operatorcontext', 'second', '-n', A], { allowFailure: true });
  assert.equal(ctx2.code, 0, 'the context is still there while used');

  await w.kubectl(['delete', 'apidefinition', 'elsewhere', '-n', A, '--wait=true', '--timeout=30s']);
  await notServed(gw2, '/elsewhere/x');
  if (w.cluster) await w.kubectl(['delete', 'operatorcontext', 'second', '-n', A, '--wait=false']);
  await waitFor('context gone', async () => {
    const r = await w.kubectl(['get', 'operatorcontext', 'second', '-n', A], { allowFailure: true });
    return r.code !== 0 && r.stderr.includes('NotFound');
  });
});

test('a context applied before its Secret: SecretNotFound, then Ready and used once the Secret appears', async () => {
  const gw2 = await w.secondGateway();
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: late, namespace: ${B}}
spec:
  env: {mode: ce, url: "${gw2.operatorUrl}"}
  secretRef: {name: late-conf}
`);
  await apply(apiManifest(B, 'waiting', '/waiting/', '  contextRef: {name: late}\n'));
  const waiting = await waitFor('the context waits for its Secret', async () => {
    const s = await status('operatorcontext', B, 'late');
    return readyOf(s)?.reason === 'SecretNotFound' ? s : undefined;
  });
  assert.equal(readyOf(waiting)?.status, 'False');
  assert.match(readyOf(waiting)?.message ?? '', new RegExp(`Secret ${B}/late-conf does not exist`));
  assert.equal(readyOf(await status('apidefinition', B, 'waiting'))?.reason, 'SecretNotFound');

  // No manual step: the Secret's watch queues the context, whose change queues the API (well
  // before the 60 s recheck).
  await apply(`apiVersion: v1
kind: Secret
metadata: {name: late-conf, namespace: ${B}}
stringData: {SVC_AUTH: ${gw2.secret}}
`);
  await waitFor(
    'the context Ready once its Secret exists',
    async () => readyOf(await status('operatorcontext', B, 'late'))?.status === 'True',
    20_000,
  );
  await waitFor(
    'the API Ready',
    async () => readyOf(await status('apidefinition', B, 'waiting'))?.status === 'True',
    20_000,
  );
  await served(gw2, '/waiting/x', '/x');

  await w.kubectl(['delete', 'apidefinition', 'waiting', '-n', B, '--wait=true', '--timeout=30s']);
  await w.kubectl(['delete', 'operatorcontext', 'late', '-n', B, '--wait=true', '--timeout=30s']);
});

test('contextRef moves an API to another gateway: it is deleted from the first', async () => {
  const gw2 = await w.secondGateway();
  await apply(apiManifest(A, 'mover', '/mover/'));
  await served(w.gateway, '/mover/x', '/x');
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: move-to, namespace: ${A}}
spec: {env: {mode: ce, url: "${gw2.operatorUrl}", auth: ${gw2.secret}}}
`);
  await apply(apiManifest(A, 'mover', '/mover/', '  contextRef: {name: move-to}\n'));
  await served(gw2, '/mover/x', '/x');
  await notServed(w.gateway, '/mover/x');
  assert.equal((await gatewayApi(w.gateway, apiId(A, 'mover'))).status, 404, 'gone from the first gateway');
  const st = await waitFor('status.pushedTo names the second gateway', async () => {
    const s = await status('apidefinition', A, 'mover');
    return (s.pushedTo as { url?: string } | undefined)?.url === gw2.operatorUrl &&
      readyOf(s)?.status === 'True'
      ? s
      : undefined;
  });
  assert.deepEqual(st.pushedTo, { url: gw2.operatorUrl, contextRef: { name: 'move-to', namespace: A } });

  await w.kubectl(['delete', 'apidefinition', 'mover', '-n', A, '--wait=true', '--timeout=30s']);
  await notServed(gw2, '/mover/x');
  await w.kubectl(['delete', 'operatorcontext', 'move-to', '-n', A, '--wait=true', '--timeout=30s']);
});

test('gateway down: Ready=False with a reason, then converges when it is back', async () => {
  const gw2 = await w.secondGateway();
  await w.stopSecondGateway();
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: flaky, namespace: ${B}}
spec: {env: {mode: ce, url: "${gw2.operatorUrl}", auth: ${gw2.secret}}}
`);
  await apply(apiManifest(B, 'patient', '/patient/', '  contextRef: {name: flaky}\n'));
  const st = await waitFor('Ready=False while the gateway is down', async () => {
    const s = await status('apidefinition', B, 'patient');
    return readyOf(s)?.status === 'False' ? s : undefined;
  });
  assert.equal(readyOf(st)?.reason, 'GatewayUnavailable');
  assert.match(readyOf(st)?.message ?? '', /unreachable/);
  assert.equal((st.latestTransaction as { status: string }).status, 'Failed');
  await waitFor('a Warning event for the failure', async () => {
    const ev = await w.kubectl([
      'get',
      'events',
      '-n',
      B,
      '--field-selector',
      'involvedObject.name=patient',
      '-o',
      'json',
    ]);
    return (JSON.parse(ev.stdout) as { items: { type: string; reason: string }[] }).items.some(
      (e) => e.type === 'Warning' && e.reason === 'GatewayUnavailable',
    );
  });

  const back = await w.startSecondGateway();
  await served(back, '/patient/x', '/x');
  await waitFor(
    'Ready=True after the gateway came back',
    async () => {
      return readyOf(await status('apidefinition', B, 'patient'))?.status === 'True';
    },
    60_000,
  );
});

test('operator restart: changes made while it was down converge, drift is reverted', async () => {
  await apply(apiManifest(A, 'kept', '/kept/'));
  await apply(apiManifest(A, 'removed', '/removed/'));
  await served(w.gateway, '/kept/x', '/x');
  await served(w.gateway, '/removed/x', '/x');
  await w.stopOperator();

  // While the operator is down: a new API, an edited one, a deleted one, and drift in the gateway.
  await apply(apiManifest(A, 'added-offline', '/added-offline/'));
  await apply(apiManifest(A, 'kept', '/kept-v2/'));
  await w.kubectl(['delete', 'apidefinition', 'removed', '-n', A, '--wait=false']);
  const ordersId = apiId(A, 'orders');
  const del = await httpRequest(`${w.gateway.url}/svc/apis/${ordersId}`, {
    method: 'DELETE',
    headers: { 'x-svc-authorization': w.gateway.secret },
  });
  assert.equal(del.status, 200);
  await httpRequest(`${w.gateway.url}/svc/reload`, {
    headers: { 'x-svc-authorization': w.gateway.secret },
  });
  await notServed(w.gateway, '/orders/x');

  await w.startOperator();
  await served(w.gateway, '/added-offline/x', '/x');
  await served(w.gateway, '/kept-v2/x', '/x');
  await notServed(w.gateway, '/kept/x');
  await notServed(w.gateway, '/removed/x');
  await served(w.gateway, '/orders/x', '/x');
});
