/**
 * The chart: `helm lint` and `helm template` for the default values and each documented option,
 * values.schema.json refusing unknown and mistyped values, every rendering applied to a real
 * API server with a server-side dry-run (cert-manager's CRDs installed from its Go module), and
 * the documented CRD upgrade path after a real `helm install`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { cp as copy, mkdtemp, readFile, readdir, realpath, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { startControlPlane, toolsDir } from '../harness/control-plane.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import { SVC_PLURALS } from '../../schemas/index.ts';
import { NAMESPACE, chartDir, helm, pick, renderChart, run, tool, toYaml } from './helpers.ts';

type Manifest = Record<string, unknown>;
interface Container {
  name: string;
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: unknown[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string }[];
}

const LICENSE = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzdmMifQ.c2lnbmF0dXJl';
const LICENSE_PUBLIC_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString();

function deployment(objects: Manifest[]): {
  containers: Container[];
  volumes: { name: string }[];
  replicas: number;
} {
  const [d] = pick(objects, 'Deployment', 'svc-operator-controller-manager');
  assert.ok(d, 'the Deployment svc-operator-controller-manager is rendered');
  const spec = d.spec as {
    replicas: number;
    template: { spec: { containers: Container[]; volumes: { name: string }[] } };
  };
  return {
    containers: spec.template.spec.containers,
    volumes: spec.template.spec.volumes,
    replicas: spec.replicas,
  };
}

const container = (objects: Manifest[], name: string): Container | undefined =>
  deployment(objects).containers.find((c) => c.name === name);

const env = (c: Container | undefined, name: string): { value?: string; valueFrom?: unknown } | undefined =>
  c?.env?.find((e) => e.name === name);

const webhooksOf = (
  objects: Manifest[],
  kind: string,
): { name: string; failurePolicy: string; clientConfig: { service: { path: string; port: number } } }[] =>
  (pick(objects, kind)[0]?.webhooks ?? []) as {
    name: string;
    failurePolicy: string;
    clientConfig: { service: { path: string; port: number } };
  }[];

/** Whether the operator's ClusterRole lets it `verb` the resource `plural` of `group`. */
function managerMay(objects: Manifest[], group: string, plural: string, verb: string): boolean {
  const [role] = pick(objects, 'ClusterRole', 'svc-operator-manager-role');
  const rules = (role?.rules ?? []) as { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[];
  return rules.some(
    (r) => r.apiGroups?.includes(group) && r.resources?.includes(plural) && r.verbs?.includes(verb),
  );
}

const annotations = (o: Manifest | undefined): Record<string, string> =>
  (o?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations ?? {};

/** The documented options: values, and what the rendering must show. */
const options: { name: string; set: string[]; check: (objects: Manifest[]) => void }[] = [
  {
    name: 'default values',
    set: [],
    check: (o) => {
      const d = deployment(o);
      assert.deepEqual(
        d.containers.map((c) => c.name),
        ['manager', 'webhook'],
      );
      assert.equal(d.replicas, 1);
      assert.deepEqual(container(o, 'manager')?.envFrom, [{ secretRef: { name: 'svc-operator-conf' } }]);
      assert.equal(env(container(o, 'manager'), 'SVC_OPERATOR_LICENSEKEY'), undefined);
      assert.equal(env(container(o, 'manager'), 'SVC_OPERATOR_LICENSE_PUBLIC_KEY'), undefined);
      assert.equal(env(container(o, 'webhook'), 'SVC_WEBHOOK_PORT')?.value, '9443');
      assert.equal(env(container(o, 'webhook'), 'SVC_WEBHOOK_CERT_MODE')?.value, 'self-managed');
      assert.deepEqual(
        webhooksOf(o, 'MutatingWebhookConfiguration').map((w) => w.name),
        [
          'mapidefinitions.svc.svc.io',
          'msvcoasapidefinitions.svc.svc.io',
          'msvcstreamsapidefinitions.svc.svc.io',
          'msecuritypolicies.svc.svc.io',
          'moperatorcontexts.svc.svc.io',
          'mapikeys.svc.svc.io',
          'msubgraphs.svc.svc.io',
          'msupergraphs.svc.svc.io',
          'mapidescriptions.svc.svc.io',
          'mportalapicatalogues.svc.svc.io',
          'mportalconfigs.svc.svc.io',
          'msvcroutepolicies.svc.svc.io',
        ],
      );
      const validating = webhooksOf(o, 'ValidatingWebhookConfiguration');
      assert.deepEqual(
        validating.map((w) => w.clientConfig.service.path),
        [
          '/validate/apidefinitions',
          '/validate/svcoasapidefinitions',
          '/validate/svcstreamsapidefinitions',
          '/validate/securitypolicies',
          '/validate/operatorcontexts',
          '/validate/apikeys',
          '/validate/subgraphs',
          '/validate/supergraphs',
          '/validate/apidescriptions',
          '/validate/portalapicatalogues',
          '/validate/portalconfigs',
          '/validate/svcroutepolicies',
          '/validate/configmaps',
        ],
      );
      assert.ok(validating.every((w) => w.failurePolicy === 'Fail'));
      assert.equal(pick(o, 'Certificate').length, 0);
      assert.deepEqual(annotations(pick(o, 'ValidatingWebhookConfiguration')[0]), {});
      assert.equal(pick(o, 'Service', 'svc-operator-webhook-service').length, 1);
      assert.equal(pick(o, 'Service', 'svc-operator-controller-manager-metrics-service').length, 1);
      assert.equal(pick(o, 'Role', 'svc-operator-webhook-ca-role').length, 1);
      assert.equal(pick(o, 'Secret').length, 0);
      // Gateway API: off by default (a cluster may have its own CRDs and classes).
      assert.equal(pick(o, 'GatewayClass').length, 0);
      // Shared addresses by default: no Service of a Gateway to write, no right to.
      assert.equal(env(container(o, 'manager'), 'SVC_GATEWAY_API_ADDRESSES')?.value, 'shared');
      assert.equal(env(container(o, 'manager'), 'SVC_GATEWAY_API_GATEWAY_SERVICE'), undefined);
      assert.equal(managerMay(o, '', 'services', 'create'), false);
      assert.equal(managerMay(o, 'discovery.k8s.io', 'endpointslices', 'create'), false);
      assert.equal(pick(o, 'CustomResourceDefinition').length, 0);
    },
  },
  {
    name: 'webhooks.certManager.enabled: an Issuer, a Certificate, CA injection, the mounted Secret',
    set: ['webhooks.certManager.enabled=true'],
    check: (o) => {
      assert.equal(pick(o, 'Issuer', 'svc-operator-selfsigned-issuer').length, 1);
      const [cert] = pick(o, 'Certificate', 'svc-operator-serving-cert');
      assert.deepEqual((cert?.spec as { dnsNames: string[] }).dnsNames, [
        'svc-operator-webhook-service.svc-operator-system.svc',
        'svc-operator-webhook-service.svc-operator-system.svc.cluster.local',
      ]);
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        assert.equal(
          annotations(pick(o, kind)[0])['cert-manager.io/inject-ca-from'],
          'svc-operator-system/svc-operator-serving-cert',
        );
      }
      assert.equal(env(container(o, 'webhook'), 'SVC_WEBHOOK_CERT_MODE')?.value, 'files');
      assert.ok(container(o, 'webhook')?.volumeMounts?.some((m) => m.name === 'webhook-cert'));
      assert.ok(deployment(o).volumes.some((v) => v.name === 'webhook-cert'));
      assert.equal(pick(o, 'Role', 'svc-operator-webhook-ca-role').length, 0, 'no CA Secret rights');
    },
  },
  {
    name: 'webhooks.certManager.issuerRef: an existing ClusterIssuer',
    set: [
      'webhooks.certManager.enabled=true',
      'webhooks.certManager.issuerRef.name=corp-ca',
      'webhooks.certManager.issuerRef.kind=ClusterIssuer',
    ],
    check: (o) => {
      assert.equal(pick(o, 'Issuer').length, 0);
      const [cert] = pick(o, 'Certificate');
      assert.deepEqual((cert?.spec as { issuerRef: unknown }).issuerRef, {
        name: 'corp-ca',
        kind: 'ClusterIssuer',
        group: 'cert-manager.io',
      });
    },
  },
  {
    name: 'webhooks.enabled false: no webhook container, Service, configurations or roles',
    set: ['webhooks.enabled=false'],
    check: (o) => {
      assert.deepEqual(
        deployment(o).containers.map((c) => c.name),
        ['manager'],
      );
      assert.equal(
        pick(o, 'MutatingWebhookConfiguration').length + pick(o, 'ValidatingWebhookConfiguration').length,
        0,
      );
      assert.equal(pick(o, 'Service', 'svc-operator-webhook-service').length, 0);
      assert.equal(pick(o, 'ClusterRole', 'svc-operator-webhook-role').length, 0);
    },
  },
  {
    name: 'webhooks.port',
    set: ['webhooks.port=10443'],
    check: (o) => {
      assert.equal(env(container(o, 'webhook'), 'SVC_WEBHOOK_PORT')?.value, '10443');
      assert.equal(
        container(o, 'webhook')?.ports?.find((p) => p.name === 'webhook-server')?.containerPort,
        10443,
      );
    },
  },
  {
    name: 'webhookPort (deprecated) is honoured and wins over webhooks.port',
    set: ['webhookPort=9999', 'webhooks.port=10443'],
    check: (o) => {
      assert.equal(env(container(o, 'webhook'), 'SVC_WEBHOOK_PORT')?.value, '9999');
      assert.equal(
        container(o, 'webhook')?.ports?.find((p) => p.name === 'webhook-server')?.containerPort,
        9999,
      );
    },
  },
  {
    name: 'global.license.operator: kept in a Secret, passed as SVC_OPERATOR_LICENSEKEY',
    set: [`global.license.operator=${LICENSE}`],
    check: (o) => {
      const [s] = pick(o, 'Secret', 'svc-operator-license');
      assert.equal(
        Buffer.from((s?.data as { OperatorLicense: string }).OperatorLicense, 'base64').toString(),
        LICENSE,
      );
      assert.deepEqual(env(container(o, 'manager'), 'SVC_OPERATOR_LICENSEKEY')?.valueFrom, {
        secretKeyRef: { name: 'svc-operator-license', key: 'OperatorLicense' },
      });
    },
  },
  {
    name: 'global.secrets.useSecretName: the key OperatorLicense of that Secret; global.license.operator ignored',
    set: [`global.license.operator=${LICENSE}`, 'global.secrets.useSecretName=corp-license'],
    check: (o) => {
      assert.equal(pick(o, 'Secret').length, 0);
      assert.deepEqual(env(container(o, 'manager'), 'SVC_OPERATOR_LICENSEKEY')?.valueFrom, {
        secretKeyRef: { name: 'corp-license', key: 'OperatorLicense' },
      });
    },
  },
  {
    name: 'operator.licensePublicKey: passed as SVC_OPERATOR_LICENSE_PUBLIC_KEY (PEM, newlines kept)',
    set: [`operator.licensePublicKey=${LICENSE_PUBLIC_KEY}`],
    check: (o) => {
      assert.equal(
        env(container(o, 'manager'), 'SVC_OPERATOR_LICENSE_PUBLIC_KEY')?.value,
        LICENSE_PUBLIC_KEY,
      );
      assert.equal(env(container(o, 'webhook'), 'SVC_OPERATOR_LICENSE_PUBLIC_KEY'), undefined);
    },
  },
  {
    name: 'envFrom: another configuration Secret',
    set: ['envFrom[0].secretRef.name=team-operator-conf'],
    check: (o) => {
      assert.deepEqual(container(o, 'manager')?.envFrom, [{ secretRef: { name: 'team-operator-conf' } }]);
      assert.equal(container(o, 'webhook')?.envFrom, undefined, 'the webhook server gets no credentials');
    },
  },
  {
    name: 'webhooks.configMaps.enabled false: no ConfigMap webhook',
    set: ['webhooks.configMaps.enabled=false'],
    check: (o) => {
      assert.ok(
        !webhooksOf(o, 'ValidatingWebhookConfiguration').some((w) => w.name === 'vconfigmaps.svc.svc.io'),
      );
    },
  },
  {
    name: 'webhooks.failurePolicy Ignore',
    set: ['webhooks.failurePolicy=Ignore'],
    check: (o) => {
      assert.ok(webhooksOf(o, 'MutatingWebhookConfiguration').every((w) => w.failurePolicy === 'Ignore'));
    },
  },
  {
    name: 'uninstall: a pre-delete hook releases the finalizers (default), none when turned off',
    set: [],
    check: (o) => {
      const [job] = pick(o, 'Job', 'svc-operator-uninstall');
      assert.ok(job, 'the uninstall Job is rendered');
      assert.equal(annotations(job)['helm.sh/hook'], 'pre-delete');
      const spec = job.spec as {
        template: { spec: { serviceAccountName: string; containers: Container[] } };
      };
      assert.equal(spec.template.spec.serviceAccountName, 'svc-operator-uninstall');
      assert.equal(spec.template.spec.containers[0]?.name, 'uninstall');
      for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']) {
        const [hookObject] = pick(o, kind, 'svc-operator-uninstall');
        assert.ok(hookObject, `the hook's ${kind}`);
        assert.equal(annotations(hookObject)['helm.sh/hook'], 'pre-delete');
      }
      // The hook clears the finalizers of every kind the uninstaller lists (operator/uninstall.ts):
      // a kind its ClusterRole forgets fails the Job with 403 and `helm uninstall` with it.
      const [role] = pick(o, 'ClusterRole', 'svc-operator-uninstall');
      const rules = (role?.rules ?? []) as { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[];
      const kinds = [
        ...SVC_PLURALS.map((plural) => ({ group: 'svc.svc.io', plural })),
        { group: 'gateway.networking.k8s.io', plural: 'gateways' },
      ];
      for (const { group, plural } of kinds) {
        const allowed = rules.some(
          (r) =>
            r.apiGroups?.includes(group) &&
            r.resources?.includes(plural) &&
            ['get', 'list', 'patch'].every((v) => r.verbs?.includes(v)),
        );
        assert.ok(allowed, `the uninstall hook may get, list and patch ${plural}`);
      }
    },
  },
  {
    name: 'uninstall.releaseFinalizers false',
    set: ['uninstall.releaseFinalizers=false'],
    check: (o) => {
      assert.equal(pick(o, 'Job').length, 0);
      assert.equal(pick(o, 'ClusterRole', 'svc-operator-uninstall').length, 0);
    },
  },
  {
    name: 'replicaCount, operator.leaderElection, metrics.service.enabled false',
    set: ['replicaCount=2', 'operator.leaderElection=true', 'metrics.service.enabled=false'],
    check: (o) => {
      assert.equal(deployment(o).replicas, 2);
      assert.equal(env(container(o, 'manager'), 'LEADER_ELECTION')?.value, 'true');
      assert.equal(pick(o, 'Service', 'svc-operator-controller-manager-metrics-service').length, 0);
    },
  },
  {
    name: 'gatewayAPI.installCRDs, gatewayAPI.gatewayClass.create: the Gateway API CRDs and a GatewayClass of svc',
    set: [
      'gatewayAPI.installCRDs=true',
      'gatewayAPI.gatewayClass.create=true',
      'gatewayAPI.gatewayClass.name=edge',
    ],
    check: (o) => {
      assert.deepEqual(
        pick(o, 'CustomResourceDefinition')
          .map((c) => (c.metadata as { name: string }).name)
          .filter((n) => n.endsWith('.gateway.networking.k8s.io'))
          .sort(),
        [
          'gatewayclasses.gateway.networking.k8s.io',
          'gateways.gateway.networking.k8s.io',
          'httproutes.gateway.networking.k8s.io',
          'referencegrants.gateway.networking.k8s.io',
        ],
      );
      const [cls] = pick(o, 'GatewayClass', 'edge');
      assert.equal(
        (cls?.spec as { controllerName?: string } | undefined)?.controllerName,
        'svc.io/gateway-controller',
      );
    },
  },
  {
    name: 'gatewayAPI.addresses.mode per-gateway: its settings, and the rights to write Services and EndpointSlices',
    set: [
      'gatewayAPI.addresses.mode=per-gateway',
      'gatewayAPI.addresses.portRange=30000-30099',
      'gatewayAPI.addresses.gatewayService=svc/svc-gateway',
    ],
    check: (o) => {
      const manager = container(o, 'manager');
      assert.equal(env(manager, 'SVC_GATEWAY_API_ADDRESSES')?.value, 'per-gateway');
      assert.equal(env(manager, 'SVC_GATEWAY_API_PORT_RANGE')?.value, '30000-30099');
      assert.equal(env(manager, 'SVC_GATEWAY_API_GATEWAY_SERVICE')?.value, 'svc/svc-gateway');
      for (const [group, plural] of [
        ['', 'services'],
        ['discovery.k8s.io', 'endpointslices'],
      ] as const) {
        for (const verb of ['create', 'update', 'delete']) {
          assert.ok(managerMay(o, group, plural, verb), `the operator may ${verb} ${plural}`);
        }
      }
    },
  },
  {
    name: 'global.components.operator false: nothing',
    set: ['global.components.operator=false'],
    check: (o) => {
      assert.deepEqual(o, []);
    },
  },
];

describe('helm lint and helm template', () => {
  for (const opt of options) {
    test(opt.name, async () => {
      await helm(['lint', '--strict', chartDir, ...opt.set.flatMap((s) => ['--set', s])]);
      opt.check(await renderChart(opt.set));
    });
  }

  test('the ConfigMap webhook leaves out system namespaces and the release namespace', async () => {
    const [w] = webhooksOf(await renderChart(), 'ValidatingWebhookConfiguration').filter(
      (x) => x.name === 'vconfigmaps.svc.svc.io',
    ) as unknown as { namespaceSelector: unknown }[];
    assert.deepEqual(w?.namespaceSelector, {
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-public', 'kube-node-lease', NAMESPACE],
        },
      ],
    });
  });

  test('every container runs as non-root with a read-only root filesystem', async () => {
    const [d] = pick(await renderChart(), 'Deployment');
    const pod = (
      d?.spec as {
        template: {
          spec: {
            securityContext: Record<string, unknown>;
            containers: { securityContext: Record<string, unknown> }[];
          };
        };
      }
    ).template.spec;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    for (const c of pod.containers) {
      assert.equal(c.securityContext.readOnlyRootFilesystem, true);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    }
  });
});

describe('values.schema.json refuses unknown and mistyped values', () => {
  const cases: { set: string; message: string }[] = [
    { set: 'webhooks.prot=9443', message: "at '/webhooks': additional properties 'prot' not allowed" },
    { set: 'webhooks.port=https', message: "at '/webhooks/port': got string, want integer" },
    { set: 'webhooks.port=70000', message: "at '/webhooks/port': maximum: got 70,000, want 65,535" },
    { set: 'webhookPort=abc', message: "at '/webhookPort': 'oneOf' failed" },
    { set: 'webhooks.enabled=yes', message: "at '/webhooks/enabled': got string, want boolean" },
    { set: 'webhooks.failurePolicy=Retry', message: "at '/webhooks/failurePolicy'" },
    {
      set: 'webhooks.certManager.issuerRef.kind=Vault',
      message: "at '/webhooks/certManager/issuerRef/kind'",
    },
    {
      set: 'global.components.operator=maybe',
      message: "at '/global/components/operator': got string, want boolean",
    },
    { set: 'global.license.operator=1', message: "at '/global/license/operator': got number, want string" },
    { set: 'replicas=2', message: "additional properties 'replicas' not allowed" },
    { set: 'operator.logLevel=verbose', message: "at '/operator/logLevel'" },
    { set: 'operator.licensePublicKey=not-a-pem', message: "at '/operator/licensePublicKey'" },
    { set: 'envFrom[0].secretRef.nmae=x', message: "additional properties 'nmae' not allowed" },
    { set: 'gatewayAPI.addresses.mode=per-service', message: "at '/gatewayAPI/addresses/mode'" },
    { set: 'gatewayAPI.addresses.portRange=20000', message: "at '/gatewayAPI/addresses/portRange'" },
    {
      set: 'gatewayAPI.addresses.mode=per-gateway',
      message: "gatewayAPI.addresses.gatewayService: per-gateway addresses need the gateway's Service",
    },
  ];
  for (const c of cases) {
    test(c.set, async () => {
      const r = await run(tool('helm'), ['template', 'svc-operator', chartDir, '--set', c.set]);
      assert.notEqual(r.code, 0, `helm accepted ${c.set}`);
      assert.ok(r.stderr.includes(c.message), `expected ${JSON.stringify(c.message)} in:\n${r.stderr}`);
    });
  }

  test('global accepts keys of sibling charts (umbrella charts)', async () => {
    await renderChart(['global.components.gateway=true', 'global.redis.addrs[0]=redis:6379']);
  });
});

describe('on a real API server', () => {
  let cp: ControlPlane;
  const kubeconfig = (): string[] => ['--kubeconfig', cp.kubeconfig];

  before(async () => {
    cp = await startControlPlane({ crdDir: path.join(chartDir, 'crds') });
    // kubectl reads a symlink to a directory as a file: resolve it.
    await cp.installCrds(await realpath(path.join(toolsDir(), 'cert-manager-crds')));
    // The Gateway API's, for the dry-run of the chart's GatewayClass.
    await cp.installCrds(path.join(chartDir, 'gateway-api'));
    await cp.kubectl(['create', 'namespace', NAMESPACE]);
  });
  after(async () => {
    await cp.stop();
  });

  for (const opt of options.filter((o) => !o.set.includes('global.components.operator=false'))) {
    test(`server-side dry-run: ${opt.name}`, async () => {
      const objects = await renderChart(opt.set);
      const r = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], {
        input: toYaml(objects),
        allowFailure: true,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim().split('\n').length, objects.length, r.stdout);
    });
  }

  test('NOTES.txt warns about webhookPort', async () => {
    const out = await helm([
      'install',
      'svc-operator',
      chartDir,
      '-n',
      NAMESPACE,
      '--dry-run=server',
      '--set',
      'webhookPort=9999',
      ...kubeconfig(),
    ]);
    assert.match(
      out,
      /WARNING: webhookPort is deprecated and will be removed; it still sets the webhook server's port\n\(9999\) and overrides webhooks\.port\. Set webhooks\.port: 9999 instead/,
    );
    const plain = await helm([
      'install',
      'svc-operator',
      chartDir,
      '-n',
      NAMESPACE,
      '--dry-run=server',
      ...kubeconfig(),
    ]);
    assert.doesNotMatch(plain, /webhookPort is deprecated/);
    assert.match(plain, /kubectl apply --server-side --force-conflicts -f charts\/svc-operator\/crds\//);
  });

  test('CRD upgrade: helm install creates them, helm upgrade leaves them, the documented command upgrades them', async () => {
    // An "old release" of the chart whose ApiDefinition CRD lacks a field the current one has.
    const old = await mkdtemp(path.join(os.tmpdir(), 'svc-chart-old-'));
    await copy(chartDir, old, { recursive: true });
    const crdFile = path.join(old, 'crds', 'svc.svc.io_apidefinitions.yaml');
    const crd = parse(await readFile(crdFile, 'utf8')) as {
      spec: {
        versions: {
          schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } };
        }[];
      };
    };
    const props = crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties ?? {};
    assert.ok('slug' in props);
    delete props.slug;
    // ...and an older wording of a field that both versions have (a value helm owns).
    (props.name as { description: string }).description = 'The name (old wording).';
    await writeFile(crdFile, JSON.stringify(crd));

    const fresh = await startControlPlane();
    try {
      const k = ['--kubeconfig', fresh.kubeconfig];
      await fresh.kubectl(['create', 'namespace', NAMESPACE]);
      await helm(['install', 'svc-operator', old, '-n', NAMESPACE, ...k]);
      const hasSlug = async (): Promise<boolean> => {
        const r = await fresh.kubectl([
          'get',
          'crd',
          'apidefinitions.svc.svc.io',
          '-o',
          'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.slug.type}',
        ]);
        return r.stdout === 'string';
      };
      assert.equal(await hasSlug(), false, 'the old CRD is installed');
      await helm(['upgrade', 'svc-operator', chartDir, '-n', NAMESPACE, ...k]);
      assert.equal(await hasSlug(), false, 'helm upgrade does not touch CRDs');

      // Server-side apply alone conflicts with the values helm set...
      const plain = await fresh.kubectl(['apply', '--server-side', '-f', path.join(chartDir, 'crds')], {
        allowFailure: true,
      });
      assert.notEqual(plain.code, 0);
      assert.match(plain.stderr, /conflict/i);
      // ...so the documented upgrade (docs/install.md) takes the fields over from helm.
      await fresh.kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(chartDir, 'crds')]);
      await fresh.kubectl(['wait', '--for', 'condition=Established', 'crd', '--all', '--timeout=60s']);
      assert.equal(await hasSlug(), true, 'the documented command upgrades the CRDs');
      const files = (await readdir(path.join(chartDir, 'crds'))).length;
      const listed = await fresh.kubectl(['get', 'crd', '-l', 'app.kubernetes.io/part-of=svc', '-o', 'name']);
      assert.equal(listed.stdout.trim().split('\n').length, files);
    } finally {
      await fresh.stop();
    }
  });
});
