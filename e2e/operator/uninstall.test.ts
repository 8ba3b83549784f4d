/**
 * The chart's pre-delete hook (operator/uninstall-main.ts, what `helm uninstall` runs) against a
 * real kube-apiserver: it deletes the two webhook configurations, scales the operator's
 * Deployment to zero, and takes the operator's finalizers (and only them) off the svc objects,
 * Gateways and Ingresses, so that deleting them afterwards completes instead of waiting for an operator that is
 * gone. The same flow with the chart on the real node: e2e/node/operator-faults.node.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { API_FINALIZER, POLICY_FINALIZER } from '../../schemas/finalizers.ts';
import { GATEWAY_FINALIZER } from '../../operator/controllers/gateway-api/types.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { applyManifest, root } from './helpers.ts';

const execFileAsync = promisify(execFile);
const NS = 'shop';
const OP_NS = 'svc-operator-system';
const OTHER = 'example.com/keep-me';
const MUTATING = 'svc-operator-mutating-webhook-configuration';
const VALIDATING = 'svc-operator-validating-webhook-configuration';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
  for (const ns of [NS, OP_NS]) await cp.kubectl(['create', 'namespace', ns]);
  // The Gateway API's CRDs, as the chart installs them (gatewayAPI.installCRDs).
  await cp.kubectl([
    'apply',
    '--server-side',
    '-f',
    join(root, 'charts', 'svc-operator', 'gateway-api', 'crds.yaml'),
  ]);
  await cp.kubectl(['wait', '--for=condition=Established', 'crd/gateways.gateway.networking.k8s.io']);
  const labels = { 'app.kubernetes.io/name': 'svc-operator', 'control-plane': 'controller-manager' };
  const docs: object[] = [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'svc-operator-controller-manager', namespace: OP_NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'manager', image: 'localhost/svc/svc-operator:test' }] },
        },
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: MUTATING },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: VALIDATING },
    },
    {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'ApiDefinition',
      metadata: { name: 'orders', namespace: NS, finalizers: [API_FINALIZER, OTHER] },
      spec: {
        name: 'orders',
        active: true,
        use_keyless: true,
        protocol: 'http',
        proxy: {
          listen_path: '/orders/',
          target_url: 'http://orders.shop.svc:8000',
          strip_listen_path: true,
        },
      },
    },
    {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'SecurityPolicy',
      metadata: { name: 'gold', namespace: NS, finalizers: [POLICY_FINALIZER] },
      spec: { name: 'gold', state: 'active', active: true, rate: 10, per: 1 },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: NS, finalizers: [GATEWAY_FINALIZER] },
      spec: { gatewayClassName: 'svc', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: NS, finalizers: ['finalizers.svc.svc.io/ingress'] },
      spec: {
        ingressClassName: 'svc',
        rules: [
          {
            host: 'web.example',
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'web', port: { number: 80 } } },
                },
              ],
            },
          },
        ],
      },
    },
  ];
  await applyManifest(cp, docs.map((d) => stringify(d)).join('---\n'));
});

after(async () => {
  await cp.stop();
});

/** What the chart's Job runs, with a kubeconfig instead of the in-cluster account. */
const runHook = (): Promise<unknown> =>
  execFileAsync(process.execPath, [
    join(root, 'operator', 'uninstall-main.ts'),
    `--kubeconfig=${cp.kubeconfig}`,
    `--namespace=${OP_NS}`,
    '--deployment=svc-operator-controller-manager',
    `--mutating=${MUTATING}`,
    `--validating=${VALIDATING}`,
  ]);

const get = async (args: string[]): Promise<string> =>
  (await cp.kubectl(['get', ...args], { allowFailure: true })).stdout.trim();

test(
  'the uninstall hook stops the operator and releases only its finalizers',
  { timeout: 120_000 },
  async () => {
    await runHook();
    assert.equal(await get(['mutatingwebhookconfigurations', '-o', 'name']), '');
    assert.equal(await get(['validatingwebhookconfigurations', '-o', 'name']), '');
    assert.equal(
      await get([
        '-n',
        OP_NS,
        'deployment',
        'svc-operator-controller-manager',
        '-o',
        'jsonpath={.spec.replicas}',
      ]),
      '0',
    );
    // Another controller's finalizer stays; the operator's goes.
    assert.equal(
      await get(['-n', NS, 'apidefinition', 'orders', '-o', 'jsonpath={.metadata.finalizers}']),
      JSON.stringify([OTHER]),
    );
    // Deleting what the operator held now completes.
    await cp.kubectl([
      '-n',
      NS,
      'delete',
      'securitypolicy/gold',
      'ingress/web',
      'gateway.gateway.networking.k8s.io/edge',
      '--timeout=30s',
    ]);
    assert.equal(await get(['-n', NS, 'securitypolicies,ingresses,gateways', '-o', 'name']), '');
  },
);

test(
  'the hook is idempotent: a second run (an uninstall retried) succeeds',
  { timeout: 60_000 },
  async () => {
    await runHook();
  },
);
