/**
 * Self-managed certificates and the chart's RBAC, end to end: the chart's ServiceAccount and
 * roles are installed for real, the webhook server runs with that ServiceAccount's token (so
 * every lookup and patch it makes is checked against the chart's least-privilege roles), creates
 * its CA in a Secret and patches the caBundle of the chart's webhook configurations, which the
 * API server then uses to call it over TLS.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { startControlPlane } from '../harness/control-plane.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import { freePort, waitFor } from '../harness/processes.ts';
import {
  apiDefinition,
  configMap,
  oasApi,
  oasDocument,
  operatorContext,
  secret,
  securityPolicy,
} from '../../webhooks/testing.ts';
import {
  NAMESPACE,
  apply,
  getObject,
  localWebhookConfigurations,
  pick,
  renderChart,
  root,
  startWebhookServer,
} from './helpers.ts';
import type { WebhookServer } from './helpers.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const SA = `system:serviceaccount:${NAMESPACE}:svc-operator-controller-manager`;
const CONFIGS = [
  'mutatingwebhookconfiguration/svc-operator-mutating-webhook-configuration',
  'validatingwebhookconfiguration/svc-operator-validating-webhook-configuration',
];

let cp: ControlPlane;
let dir: string;
let saKubeconfig: string;
let port: number;
let server: WebhookServer | undefined;

const start = (name: string): Promise<WebhookServer> =>
  startWebhookServer({
    name,
    kubeconfig: saKubeconfig,
    logDir: dir,
    port,
    args: [
      '--cert-mode=self-managed',
      `--namespace=${NAMESPACE}`,
      '--extra-hosts=127.0.0.1',
      '--resync-seconds=1',
      // As the chart sets it (SVC_WEBHOOK_CA_SECRET_OWNER).
      '--ca-secret-owner=svc-operator-controller-manager',
      // No operator runs here to remove the finalizer the mutating webhook would add: deleted
      // objects would hang in deletion.
      '--finalizers=false',
    ],
  });

async function caSecret(): Promise<Record<string, string>> {
  const s = await getObject(cp, 'secret', 'svc-operator-webhook-ca', NAMESPACE);
  return Object.fromEntries(
    Object.entries(s.data as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  );
}

async function caBundles(): Promise<string[]> {
  const out: string[] = [];
  for (const c of CONFIGS) {
    const r = await cp.kubectl([
      'get',
      c,
      '-o',
      'jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{"\\n"}{end}',
    ]);
    out.push(
      ...r.stdout
        .split('\n')
        .filter((l) => l !== '' || false)
        .map((b) => Buffer.from(b, 'base64').toString()),
    );
  }
  return out;
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svc-webhooks-self-managed-'));
  cp = await startControlPlane({ crdDir: path.join(root, 'charts', 'svc-operator', 'crds') });
  await cp.kubectl(['create', 'namespace', NAMESPACE]);
  const chart = await renderChart();
  const rbac = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].flatMap((k) =>
    pick(chart, k),
  );
  const applied = await apply(cp, rbac);
  assert.equal(applied.code, 0, applied.stderr);
  port = await freePort();
  const configs = await localWebhookConfigurations(port);
  assert.equal((await apply(cp, configs)).code, 0);

  const token = (
    await cp.kubectl(['create', 'token', 'svc-operator-controller-manager', '-n', NAMESPACE, '--duration=1h'])
  ).stdout.trim();
  saKubeconfig = path.join(dir, 'sa.kubeconfig');
  await writeFile(
    saKubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'svc', cluster: { server: cp.server, 'certificate-authority': cp.caFile } }],
      users: [{ name: 'sa', user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'svc', user: 'sa' } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );
  server = await start('webhooks-1');
});

after(async () => {
  await stopAll(server, cp);
});

test('the CA is kept in a Secret and every webhook carries it', async () => {
  const data = await caSecret();
  assert.ok(data['ca.crt'] !== undefined && data['ca.key'] !== undefined);
  assert.equal(new X509Certificate(data['ca.crt']).ca, true);
  const bundles = await caBundles();
  assert.equal(
    bundles.length,
    25,
    'twelve mutating, thirteen validating webhooks (the twelve kinds, and ConfigMaps)',
  );
  for (const b of bundles) assert.equal(b, data['ca.crt']);
});

test("the CA Secret is owned by the chart's ServiceAccount (uninstalled with it), and a Secret without its owner is adopted", async () => {
  const sa = await getObject(cp, 'serviceaccount', 'svc-operator-controller-manager', NAMESPACE);
  const uid = (sa.metadata as { uid: string }).uid;
  const owners = async (): Promise<unknown> =>
    (
      (await getObject(cp, 'secret', 'svc-operator-webhook-ca', NAMESPACE)).metadata as {
        ownerReferences?: unknown;
      }
    ).ownerReferences;
  assert.deepEqual(await owners(), [
    { apiVersion: 'v1', kind: 'ServiceAccount', name: 'svc-operator-controller-manager', uid },
  ]);
  // As a Secret an earlier version wrote: the next resync gives it its owner, the CA unchanged.
  const before = await caSecret();
  const patched = await cp.kubectl([
    'patch',
    'secret',
    'svc-operator-webhook-ca',
    '-n',
    NAMESPACE,
    '--type=json',
    '-p',
    JSON.stringify([{ op: 'remove', path: '/metadata/ownerReferences' }]),
  ]);
  assert.equal(patched.code, 0, patched.stderr);
  await waitFor('the owner back', async () => Array.isArray(await owners()), 15_000);
  assert.deepEqual(await owners(), [
    { apiVersion: 'v1', kind: 'ServiceAccount', name: 'svc-operator-controller-manager', uid },
  ]);
  assert.deepEqual(await caSecret(), before);
});

test('the API server calls the webhooks over TLS with that CA: defaults, refusals, lookups', async () => {
  await waitFor('the webhooks to answer', async () => {
    const r = await apply(cp, apiDefinition('probe', { allowed_ips: ['*'] }), ['--dry-run=server']);
    return r.code !== 0 && r.stderr.includes('wildcards are not supported');
  });
  // Lookups of ConfigMaps, Secrets and svc kinds with the chart's roles.
  const ok = await apply(cp, [
    apiDefinition('orders'),
    configMap('pets-oas', { 'oas.yaml': oasDocument() }),
    oasApi('pets', 'pets-oas'),
    secret('ctx-conf', ['SVC_AUTH', 'SVC_ORG']),
    operatorContext('ctx', { env: { mode: 'ce', url: 'http://gw:8080' }, secretRef: { name: 'ctx-conf' } }),
    securityPolicy('plan', { access_rights_array: [{ name: 'orders' }] }),
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  const policy = await getObject(cp, 'securitypolicy', 'plan');
  assert.deepEqual((policy.spec as { access_rights_array: unknown }).access_rights_array, [
    { name: 'orders', kind: 'ApiDefinition', namespace: 'default', versions: ['Default'] },
  ]);
  const del = await cp.kubectl(['delete', 'apidefinition', 'orders'], { allowFailure: true });
  assert.notEqual(del.code, 0);
  assert.match(del.stderr, /ApiDefinition default\/orders is still used by SecurityPolicy default\/plan/);
  // Without an operator, nothing would remove an operator finalizer: none is added, so deleted
  // objects go at once (kubectl waits for them to be gone).
  const orders = await getObject(cp, 'apidefinition', 'orders');
  assert.equal((orders.metadata as { finalizers?: string[] }).finalizers, undefined);
  for (const [kind, name] of [
    ['securitypolicy', 'plan'],
    ['apidefinition', 'orders'],
  ] as const) {
    const gone = await cp.kubectl(['delete', kind, name, '--timeout=20s'], { allowFailure: true });
    assert.equal(gone.code, 0, gone.stderr);
  }
});

test('a caBundle reset (as by helm upgrade) is repaired', async () => {
  const { 'ca.crt': ca } = await caSecret();
  await cp.kubectl([
    'patch',
    CONFIGS[1] ?? '',
    '--type=json',
    '-p',
    JSON.stringify([{ op: 'remove', path: '/webhooks/0/clientConfig/caBundle' }]),
  ]);
  await waitFor(
    'the caBundle to be restored',
    async () => (await caBundles()).every((b) => b === ca),
    15_000,
  );
});

test('a restarted server keeps the CA', async () => {
  const before = await caSecret();
  await server?.stop();
  server = await start('webhooks-2');
  assert.deepEqual(await caSecret(), before);
  const r = await apply(cp, securityPolicy('second', { rate: 1 }), ['--dry-run=server']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /rate and per go together/);
});

test('the ServiceAccount may do what the webhook needs, and no more', async () => {
  const can = async (...args: string[]): Promise<boolean> => {
    const r = await cp.kubectl(['auth', 'can-i', ...args, `--as=${SA}`], { allowFailure: true });
    return r.stdout.trim() === 'yes';
  };
  assert.equal(
    await can('patch', 'validatingwebhookconfigurations/svc-operator-validating-webhook-configuration'),
    true,
  );
  assert.equal(await can('patch', 'validatingwebhookconfigurations/someone-else'), false);
  assert.equal(
    await can('delete', 'validatingwebhookconfigurations/svc-operator-validating-webhook-configuration'),
    false,
  );
  assert.equal(await can('update', 'secrets/svc-operator-webhook-ca', '-n', NAMESPACE), true);
  assert.equal(await can('delete', 'secrets/svc-operator-webhook-ca', '-n', NAMESPACE), false);
  // The CA Secret's owner, read for its UID; no other ServiceAccount, and nothing more on it.
  assert.equal(await can('get', 'serviceaccounts/svc-operator-controller-manager', '-n', NAMESPACE), true);
  assert.equal(await can('get', 'serviceaccounts/default', '-n', NAMESPACE), false);
  assert.equal(
    await can('update', 'serviceaccounts/svc-operator-controller-manager', '-n', NAMESPACE),
    false,
  );
  // The ApiKey controller writes the Secret of a key that names none (owned by the ApiKey): it may
  // create and update Secrets, never delete them (owner references do that).
  assert.equal(await can('create', 'secrets', '-n', 'default'), true);
  assert.equal(await can('update', 'secrets/other', '-n', NAMESPACE), true);
  assert.equal(await can('delete', 'secrets', '-n', 'default'), false);
  assert.equal(await can('update', 'configmaps', '-n', 'default'), false);
  // The ingress controller creates and deletes the ApiDefinitions it generates; nothing else.
  assert.equal(await can('delete', 'apidefinitions', '-n', 'default'), true);
  assert.equal(await can('delete', 'securitypolicies', '-n', 'default'), false);
  assert.equal(await can('delete', 'svcoasapidefinitions', '-n', 'default'), false);
  assert.equal(await can('create', 'pods', '-n', NAMESPACE), false);
  assert.equal(await can('update', 'leases', '-n', NAMESPACE), true);
  assert.equal(await can('update', 'leases', '-n', 'default'), false);
  assert.equal(await can('patch', 'apidefinitions', '--subresource=status', '-n', 'default'), true);
  assert.equal(await can('update', 'ingresses', '--subresource=status', '-n', 'default'), true);
  // The ingress controller sets its finalizer and the annotation listing the generated APIs.
  assert.equal(await can('update', 'ingresses', '-n', 'default'), true);
  assert.equal(await can('delete', 'ingresses', '-n', 'default'), false);
});
