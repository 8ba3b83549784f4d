/**
 * Seed behaviours of the operator end to end, against one control plane with the CRDs, real
 * gateway processes, a real upstream and the operator as a process:
 * - a SecurityPolicy whose `spec.id` names a policy made by hand in the gateway adopts it: the
 *   keys made against it keep working and now get the resource's limits;
 * - an ApiDefinition deleted and applied again is recreated with the same ID, so a key made
 *   against it keeps working;
 * - `SVC_TLS_INSECURE_SKIP_VERIFY` against a gateway whose management API is served over HTTPS
 *   with a self-signed certificate (`--control-tls`): without it the operator refuses the
 *   certificate and the status says why (and names the setting); with it the API is pushed and
 *   served.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import {
  freePort,
  httpRequest,
  startEchoUpstream,
  startGateway,
  startNode,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
  type Proc,
} from '../harness/processes.ts';
import {
  admin,
  apiDefinitionManifest,
  applyManifest,
  readyOf,
  root,
  waitForStatus,
  waitReady,
  isReady,
} from './helpers.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const ORG = 'e2e-org';
const NS = 'seed';
const TLS_NS = 'seed-tls';

let cp: ControlPlane;
let dir: string;
let gw: GatewayProc;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let operator: OperatorProc;
/** A gateway whose management API is served over HTTPS with a self-signed certificate. */
let tlsGw: Proc;
let tlsPort: number;
let tlsUrl: string;
const TLS_SECRET = 'e2e-seed-tls-secret';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-seed-'));
  // Started first, so that it comes up while the control plane does (it is waited for in its test).
  const cert = selfSignedCert();
  tlsPort = await freePort();
  const controlPort = await freePort();
  tlsUrl = `https://127.0.0.1:${controlPort}`;
  tlsGw = startNode({
    name: 'seed-tls-gateway',
    script: 'gateway/main.ts',
    args: [
      ...[
        '--port',
        String(tlsPort),
        '--host',
        '127.0.0.1',
        '--workers',
        '1',
        '--data-dir',
        join(dir, 'tls-gw'),
      ],
      ...['--control-port', String(controlPort), '--control-tls'],
      ...['--tls-cert', cert.certFile, '--tls-key', cert.keyFile],
    ],
    env: { SVC_GW_SECRET: TLS_SECRET },
    logDir: dir,
  });
  cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
  for (const ns of [NS, TLS_NS, 'svc-operator-system', 'svc-tls-operator'])
    await cp.kubectl(['create', 'namespace', ns]);
  upstream = await startEchoUpstream();
  gw = await startGateway({
    name: 'seed-gateway',
    secret: 'e2e-seed-secret',
    dataDir: join(dir, 'gw'),
    logDir: dir,
  });
  operator = await startOperator({
    name: 'seed-operator',
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    org: ORG,
    env: { WATCH_NAMESPACE: NS },
  });
});

after(async () => {
  await stopAll(tlsGw, operator, gw, upstream, cp);
});

/** A protected ApiDefinition in `ns` proxying `/<name>/` to the echo upstream. */
const apiManifest = (ns: string, name: string): string =>
  apiDefinitionManifest({ ns, name, target: upstream.url, protect: true });

/** The status of a client request through the gateway with `key`. */
async function call(path: string, key: string): Promise<number> {
  return (await httpRequest(`${gw.url}${path}`, { headers: { authorization: key } })).status;
}

const rightsTo = (apiId: string): Record<string, unknown> => ({
  [apiId]: { api_id: apiId, api_name: apiId, versions: ['Default'] },
});

test('SecurityPolicy spec.id adopts a policy made in the gateway: its keys keep working, with the resource’s limits', async () => {
  await applyManifest(cp, apiManifest(NS, 'adopted'));
  const api = await waitReady(cp, { kind: 'apidefinition', ns: NS, name: 'adopted' });
  const apiId = api.api_id as string;
  // Made by hand in the gateway, before any resource: no limits.
  const made = await admin(gw, 'POST', '/svc/policies', {
    id: 'legacy-gold',
    name: 'legacy gold',
    org_id: ORG,
    state: 'active',
    active: true,
    access_rights: rightsTo(apiId),
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const key = await admin(gw, 'POST', '/svc/keys/legacy-key', {
    org_id: ORG,
    apply_policies: ['legacy-gold'],
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  await waitFor('the API served with the key', async () => (await call('/adopted/x', 'legacy-key')) === 200);
  for (let i = 0; i < 3; i++) assert.equal(await call('/adopted/x', 'legacy-key'), 200, 'no rate limit yet');

  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: gold, namespace: ${NS}}
spec:
  id: legacy-gold
  name: gold
  state: active
  active: true
  rate: 2
  per: 60
  access_rights_array: [{name: adopted}]
`,
  );
  const st = await waitReady(cp, { kind: 'securitypolicy', ns: NS, name: 'gold' });
  assert.equal(st.pol_id, 'legacy-gold', 'the status names the adopted policy');
  const held = await admin(gw, 'GET', '/svc/policies/legacy-gold');
  assert.equal(held.status, 200);
  assert.equal((held.body as { rate?: number }).rate, 2, 'the gateway holds the resource’s policy');
  assert.equal((held.body as { name?: string }).name, 'gold');
  // The key made against the hand-made policy now works under the resource's limits.
  assert.deepEqual(
    [
      await call('/adopted/x', 'legacy-key'),
      await call('/adopted/x', 'legacy-key'),
      await call('/adopted/x', 'legacy-key'),
    ],
    [200, 200, 429],
  );
});

test('an ApiDefinition deleted and applied again keeps its ID, so a key made against it keeps working', async () => {
  const manifest = apiManifest(NS, 'again');
  await applyManifest(cp, manifest);
  const first = await waitReady(cp, { kind: 'apidefinition', ns: NS, name: 'again' });
  const apiId = first.api_id as string;
  const key = await admin(gw, 'POST', '/svc/keys/again-key', { org_id: ORG, access_rights: rightsTo(apiId) });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  await waitFor('the API served with the key', async () => (await call('/again/x', 'again-key')) === 200);

  await cp.kubectl(['delete', 'apidefinition', 'again', '-n', NS, '--wait=true']);
  await waitFor(
    'the API gone from the gateway',
    async () => (await admin(gw, 'GET', `/svc/apis/${apiId}`)).status === 404,
  );
  await waitFor('the API no longer served', async () => (await call('/again/x', 'again-key')) === 404);

  await applyManifest(cp, manifest);
  const second = await waitForStatus(
    cp,
    { kind: 'apidefinition', ns: NS, name: 'again' },
    'Ready again',
    isReady,
  );
  assert.equal(second.api_id, apiId, 'recreated with the same ID');
  await waitFor('the same key works again', async () => (await call('/again/x', 'again-key')) === 200);
});

/** A GET over HTTPS that accepts any certificate (the test's own view of the TLS gateway). */
function httpsGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { headers, rejectUnauthorized: false, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${url} timed out`)));
    req.end();
  });
}

test('SVC_TLS_INSECURE_SKIP_VERIFY: a gateway with a self-signed certificate is refused without it (the status says why), used with it', async () => {
  const url = tlsUrl;
  const port = tlsPort;
  const secret = TLS_SECRET;
  let tlsOperator: OperatorProc | undefined;
  const runOperator = async (run: number, env: Record<string, string>): Promise<OperatorProc> =>
    startOperator({
      name: `seed-tls-operator-${run}`,
      gateway: { ...gw, url, secret },
      kubeconfig: cp.kubeconfig,
      logDir: dir,
      org: ORG,
      // A lease of its own: the suite's other operator leads in svc-operator-system.
      env: { WATCH_NAMESPACE: TLS_NS, POD_NAMESPACE: 'svc-tls-operator', ...env },
    });
  try {
    await waitFor('the TLS gateway', async () => {
      try {
        return (await httpsGet(`${url}/hello`)).status === 200;
      } catch {
        return false;
      }
    });
    tlsOperator = await runOperator(1, {});
    await applyManifest(cp, apiManifest(TLS_NS, 'secure'));
    const refused = await waitForStatus(
      cp,
      { kind: 'apidefinition', ns: TLS_NS, name: 'secure' },
      'the gateway refused',
      (s) => readyOf(s)?.status === 'False',
    );
    const cond = readyOf(refused);
    assert.equal(cond?.reason, 'GatewayUnavailable', JSON.stringify(cond));
    assert.match(cond.message ?? '', /self-signed certificate/, 'the status says why');
    assert.match(cond.message ?? '', /SVC_TLS_INSECURE_SKIP_VERIFY/, 'and what would accept it');
    const none = await httpsGet(`${url}/svc/apis`, { 'x-svc-authorization': secret });
    assert.deepEqual(JSON.parse(none.body), [], 'nothing reached the gateway');
    await tlsOperator.stop();

    tlsOperator = await runOperator(2, { SVC_TLS_INSECURE_SKIP_VERIFY: 'true' });
    const st = await waitReady(cp, { kind: 'apidefinition', ns: TLS_NS, name: 'secure' });
    const apiId = st.api_id as string;
    assert.equal((await httpsGet(`${url}/svc/apis/${apiId}`, { 'x-svc-authorization': secret })).status, 200);
    await waitFor(
      'the API served on the gateway port',
      async () => (await httpRequest(`http://127.0.0.1:${port}/secure/x`)).status === 401,
    );
  } finally {
    await tlsOperator?.stop();
  }
});
