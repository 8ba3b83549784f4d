/**
 * An operator newer than what the cluster has (issue 28: the chart of an earlier release upgraded
 * to today's image): the ApiKey kind not installed, or not granted to the operator's
 * ServiceAccount. The operator must become ready and serve the kinds it can list, say which
 * controller waits and why (log, `svc_controller_waiting`), and start that controller by itself
 * once the CRD is installed or the RBAC granted. A real control plane, a real gateway, the
 * operator as a process; in the RBAC case under a ServiceAccount token with the chart's own
 * ClusterRole, less its ApiKey rules.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { httpRequest, waitFor, type OperatorProc } from '../harness/processes.ts';
import {
  apiDefinitionManifest,
  applyManifest,
  root,
  startWorld,
  startWorldOperator,
  stopWorld,
  waitReady,
  type OperatorWorld,
} from './helpers.ts';

const ORG = 'e2e-org';
const NS = 'mk';
const KEY_CRD = join(root, 'charts', 'svc-operator', 'crds', 'svc.svc.io_apikeys.yaml');
/** The informer's backoff reaches 30 s; the controller must start within a few of them. */
const START_MS = 90_000;

let w: OperatorWorld;
const running: OperatorProc[] = [];

before(async () => {
  w = await startWorld({
    name: 'missing-kinds',
    namespaces: [NS, 'mk-lease-crd', 'mk-lease-rbac', 'mk-lease-graphs'],
    secrets: ['e2e-mk-secret-0001', 'e2e-mk-secret-0002'],
  });
});

after(async () => {
  for (const o of running) await o.stop();
  await stopWorld(w);
});

/** The chart's templates/rbac.yaml documents, rendered for namespace `ns` (labels dropped). */
function chartRbac(ns: string): string[] {
  const text = readFileSync(join(root, 'charts', 'svc-operator', 'templates', 'rbac.yaml'), 'utf8');
  return text
    .split(/^---$/m)
    .slice(1)
    .map((doc) =>
      doc
        .split('\n')
        .filter((l) => !l.includes('{{-') && !l.trimStart().startsWith('labels:') && !l.startsWith('#'))
        .join('\n')
        .replaceAll('{{ .Release.Namespace }}', ns),
    )
    .filter((doc) => /kind: (ClusterRole|Role|ClusterRoleBinding|RoleBinding)\n/.test(doc))
    .filter((doc) => doc.includes('svc-operator-manager-') || doc.includes('svc-operator-leader-election-'));
}

/** The ApiKey rules taken out of the chart's ClusterRole: what a chart older than ApiKey grants. */
const withoutApiKeys = (doc: string): string =>
  doc
    .replaceAll(', apikeys,', ',')
    .replaceAll(', apikeys]', ']')
    .split('\n')
    .filter((l) => !l.includes('- apikeys/'))
    .join('\n');

async function metric(o: OperatorProc, controller: string): Promise<string | undefined> {
  const r = await httpRequest(`${o.opsUrl}/metrics`);
  return new RegExp(`^svc_controller_waiting\\{controller="${controller}"\\} (\\d+)$`, 'm').exec(r.body)?.[1];
}

/** An ApiDefinition, a policy and an ApiKey for it; `tag` keeps each case's names apart. */
function apiManifest(tag: string): string {
  return `${apiDefinitionManifest({ ns: NS, name: tag, target: w.upstream.url, protect: true })}---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: ${tag}-plan, namespace: ${NS}}
spec:
  name: ${tag}-plan
  access_rights_array: [{name: ${tag}}]
`;
}

/** A Secret holding a key's value and the ApiKey that names it. */
const keyManifest = (tag: string): string => `apiVersion: v1
kind: Secret
metadata: {name: ${tag}-key, namespace: ${NS}}
stringData: {key: ${tag}-key-value-0123456789abcdef}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: ${tag}-key, namespace: ${NS}}
spec:
  policies: [${tag}-plan]
  secretRef: {name: ${tag}-key}
`;

/**
 * Ready with kinds missing. A standby is ready before it leads; once leading, the operator is
 * ready when its controllers start (those whose kinds it can list), so readiness is read then.
 */
async function readyOnceStarted(o: OperatorProc): Promise<void> {
  await waitFor(
    'the controllers to start',
    () => o.log().includes('"message":"controllers started"'),
    30_000,
  );
  assert.equal((await httpRequest(`${o.opsUrl}/readyz`)).status, 200, 'ready with kinds missing');
}

/**
 * What both cases assert: the operator is ready with the ApiKey controller waiting, the other
 * kinds reconciled and served; once `mend` runs, the ApiKey controller starts and a key works.
 */
async function waitsThenStarts(o: OperatorProc, tag: string, reason: RegExp, mend: () => Promise<void>) {
  await readyOnceStarted(o);
  await waitFor('the waiting gauge', async () => (await metric(o, 'apikey')) === '1');
  assert.equal(await metric(o, 'apidefinition'), '0');
  // The log comes through a pipe, the gauge over HTTP: under load the gauge can answer first.
  await waitFor(`the log says ${String(reason)}`, () => reason.test(o.log()), 10_000);
  await waitFor('the log says the controller waits', () =>
    o.log().includes('controller apikey waits until its kinds can be listed'),
  );

  await applyManifest(w.cp, apiManifest(tag));
  await waitReady(w.cp, { kind: 'securitypolicy', ns: NS, name: `${tag}-plan` });
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: tag });
  const value = `${tag}-key-value-0123456789abcdef`;
  const call = async (): Promise<number> =>
    (await httpRequest(`${w.gw.url}/${tag}/x`, { headers: { authorization: value } })).status;
  assert.equal(await call(), 403, 'no key yet: the ApiDefinition is served and protected');

  await mend();
  await applyManifest(w.cp, keyManifest(tag));
  await waitReady(w.cp, { kind: 'apikey', ns: NS, name: `${tag}-key` }, START_MS);
  await waitFor('the key authenticates', async () => (await call()) === 200);
  assert.equal(await metric(o, 'apikey'), '0');
  await waitFor('the log says the controller started', () =>
    o.log().includes('controller apikey started: its kinds are listed now'),
  );
}

test('the ApiKey CRD not installed: the operator is ready, ApiKey waits and starts once the CRD is applied', async () => {
  await w.cp.kubectl(['delete', 'crd', 'apikeys.svc.svc.io', '--wait=true']);
  const o = await startWorldOperator(w, {
    name: 'mk-operator-crd',
    org: ORG,
    env: { WATCH_NAMESPACE: NS, POD_NAMESPACE: 'mk-lease-crd' },
  });
  running.push(o);
  await waitsThenStarts(
    o,
    'crd',
    /ApiKey not served by the API server \(CRD not installed\): waiting for it/,
    async () => {
      await w.cp.kubectl(['apply', '-f', KEY_CRD]);
      await w.cp.kubectl(['wait', '--for=condition=Established', 'crd/apikeys.svc.svc.io', '--timeout=60s']);
    },
  );
  await o.stop();
});

test('the ServiceAccount not granted ApiKey (the chart of an earlier release): the operator is ready, ApiKey waits and starts once granted', async () => {
  const lease = 'mk-lease-rbac';
  const sa = 'svc-operator-controller-manager';
  const docs = chartRbac(lease);
  assert.equal(docs.length, 4, 'the manager and leader-election roles and bindings of the chart');
  await w.cp.kubectl(['create', 'serviceaccount', sa, '-n', lease]);
  await applyManifest(w.cp, docs.map(withoutApiKeys).join('\n---\n'));
  const token = (await w.cp.kubectl(['create', 'token', sa, '-n', lease, '--duration=2h'])).stdout.trim();
  const kubeconfig = join(w.dir, 'sa-kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: w.cp.server, 'certificate-authority': w.cp.caFile } }],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: sa } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  const o = await startWorldOperator(
    { ...w, cp: { ...w.cp, kubeconfig } },
    { name: 'mk-operator-rbac', org: ORG, env: { WATCH_NAMESPACE: NS, POD_NAMESPACE: lease } },
  );
  running.push(o);
  await waitsThenStarts(o, 'rbac', /ApiKey forbidden \(RBAC\): waiting for it/, async () => {
    // `helm upgrade` to the chart of the operator's release: its ClusterRole, ApiKey rules and all.
    await applyManifest(w.cp, docs.join('\n---\n'));
  });
});

test('the SubGraph and SuperGraph CRDs not installed (the chart as of 56a22f5 has five kinds): ApiDefinitions are reconciled and served, the graph controllers wait and start once the CRDs are applied', async () => {
  const crds = ['subgraphs', 'supergraphs'];
  for (const k of crds) await w.cp.kubectl(['delete', 'crd', `${k}.svc.svc.io`, '--wait=true']);
  const o = await startWorldOperator(w, {
    name: 'mk-operator-graphs',
    org: ORG,
    env: { WATCH_NAMESPACE: NS, POD_NAMESPACE: 'mk-lease-graphs' },
  });
  running.push(o);
  await readyOnceStarted(o);
  // The ApiDefinition controller watches SubGraphs and SuperGraphs too (to queue the APIs that
  // serve them): kinds not served have no objects, so it does not wait for them.
  await waitFor('the graph controllers waiting', async () => (await metric(o, 'supergraph')) === '1');
  assert.equal(await metric(o, 'subgraph'), '1');
  assert.equal(await metric(o, 'apidefinition'), '0');
  assert.equal(o.log().includes('controller apidefinition waits'), false);

  const tag = 'graphs';
  await applyManifest(w.cp, apiManifest(tag));
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: tag });
  assert.equal(
    (await httpRequest(`${w.gw.url}/${tag}/x`, { headers: { authorization: 'nobody' } })).status,
    403,
    'the ApiDefinition is served and protected',
  );

  for (const k of crds) {
    await w.cp.kubectl(['apply', '-f', join(root, 'charts', 'svc-operator', 'crds', `svc.svc.io_${k}.yaml`)]);
    await w.cp.kubectl(['wait', '--for=condition=Established', `crd/${k}.svc.svc.io`, '--timeout=60s']);
  }
  await waitFor(
    'the graph controllers to start',
    async () => (await metric(o, 'supergraph')) === '0' && (await metric(o, 'subgraph')) === '0',
    START_MS,
    1_000,
  );
  assert.ok(o.log().includes('controller supergraph started: its kinds are listed now'));
  await o.stop();
});
