/**
 * charts/svc-dashboard installed on the node with `helm upgrade --install`, both ways a cluster
 * admin runs it, then mode pro end to end:
 * - on SQLite, its file on a `local` PersistentVolume the suite creates as an admin would (a
 *   StorageClass without provisioner, WaitForFirstConsumer, and a PV on a directory of the node):
 *   an organisation and its user made through the dashboard's API survive the pod's deletion;
 * - on PostgreSQL (a Deployment of the svc-postgres image tools/images.sh makes, data in an
 *   emptyDir): the same;
 * - mode pro: charts/svc-gateway pointed at that dashboard (`dashboard.url`) and charts/svc-operator
 *   in mode pro (the dashboard's URL, its system user's key, a signed license and its public key);
 *   an ApiDefinition is Ready, held by the dashboard and served through the gateway's Service to a
 *   client pod, its upstream a pod addressed as `<service>.<namespace>.svc:<port>`.
 * Every pod Ready, everything the suite made deleted at the end. The operator release is
 * cluster-wide (one per node): run this suite under the node's operator lock,
 * `flock /tmp/svc-node-operator.lock node --test e2e/node/dashboard.node.ts`, as `make e2e-node` is.
 * The dashboard's install and the calls to its API are in dashboard.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from '../../lib/testing/wait.ts';
import { signedLicense } from '../harness/dashboard.ts';
import {
  OPERATOR_NS,
  PULL_POLICY,
  RESTRICTED,
  apply,
  cluster,
  dumpOnFailure,
  helm,
  imageRef,
  imageValues,
  kubectl,
  assertEchoedFromPod,
  useNamespace,
  waitForPodsReady,
  applyEchoApi,
} from './helpers.ts';
import {
  NODE_SECRET,
  createTenant,
  dashboardSecrets,
  forwards,
  install,
  replaceDashboardPod,
  tenantSeen,
  timings,
  withDashboard,
  type Tenant,
} from './dashboard.ts';
import { uninstallOperator } from './install.ts';

const suffix = randomBytes(3).toString('hex');
const STORAGE_CLASS = `svc-node-local-${suffix}`;
const PV = `svc-node-dash-${suffix}`;
const OPERATOR_CONF = `svc-operator-conf-dash-${suffix}`;

let pvDir: string | undefined;
let scratch: string | undefined;
let operatorInstalled = false;

// Registered before the namespaces' own hooks, so it runs first: the ApiDefinition goes while the
// operator still runs (its finalizer), and the releases before their namespaces.
after(async () => {
  for (const pf of forwards) pf.kill();
  const quiet = (p: Promise<unknown>): Promise<unknown> => p.catch(() => undefined);
  await quiet(kubectl(['-n', PRO_NS, 'delete', 'apidefinitions', '--all', '--timeout=120s']));
  if (operatorInstalled) {
    await quiet(uninstallOperator());
    await quiet(kubectl(['-n', OPERATOR_NS, 'delete', 'secret', OPERATOR_CONF, '--ignore-not-found']));
  }
  for (const [release, ns] of [
    ['svc-gateway', PRO_NS],
    ['svc-dashboard', PG_NS],
    ['svc-dashboard', SQLITE_NS],
  ] as const) {
    await quiet(helm(['uninstall', release, '-n', ns, '--ignore-not-found', '--wait', '--timeout=2m']));
  }
  // The SQLite claim is kept on uninstall (it holds the data): the volume is freed with it.
  await quiet(kubectl(['-n', SQLITE_NS, 'delete', 'pvc', '--all', '--timeout=120s']));
  await quiet(kubectl(['delete', 'pv', PV, '--ignore-not-found', '--timeout=60s']));
  await quiet(kubectl(['delete', 'storageclass', STORAGE_CLASS, '--ignore-not-found']));
  if (pvDir !== undefined) await rm(pvDir, { recursive: true, force: true });
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  if (timings.length > 0) process.stderr.write(`${timings.join('\n')}\n`);
});

/** The dashboard on SQLite, the dashboard on PostgreSQL (and its database), mode pro's gateway and upstream. */
const SQLITE_NS = useNamespace('svc-node-dash-sqlite');
const PG_NS = useNamespace('svc-node-dash-pg');
const PRO_NS = useNamespace('svc-node-dash-pro');
dumpOnFailure(OPERATOR_NS);

before(async () => {
  await cluster();
  scratch = await mkdtemp(path.join(tmpdir(), 'svc-node-dash-'));
});

test(
  'the dashboard on SQLite on a local PersistentVolume: Ready, and its data outlives its pod',
  { timeout: 600_000 },
  async () => {
    const { node } = await cluster();
    let storageClass = process.env.SVC_E2E_STORAGE_CLASS ?? '';
    if (node !== undefined) {
      // What a cluster admin makes on a cluster without a volume provisioner: a class and a volume
      // on a directory of the node, made by root and nothing else prepared (the chart's fsGroup
      // makes it the dashboard's). Another cluster (SVC_E2E_KUBECONFIG) uses its own provisioner.
      storageClass = STORAGE_CLASS;
      const hostname = await kubectl([
        'get',
        'nodes',
        '-o',
        'jsonpath={.items[0].metadata.labels.kubernetes\\.io/hostname}',
      ]);
      assert.notEqual(hostname, '');
      pvDir = path.join(node.dir, 'volumes', PV);
      await mkdir(pvDir, { recursive: true, mode: 0o755 });
      await apply([
        {
          apiVersion: 'storage.k8s.io/v1',
          kind: 'StorageClass',
          metadata: { name: STORAGE_CLASS },
          provisioner: 'kubernetes.io/no-provisioner',
          volumeBindingMode: 'WaitForFirstConsumer',
        },
        {
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: PV },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: 'Retain',
            storageClassName: STORAGE_CLASS,
            local: { path: pvDir },
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [hostname] }],
                  },
                ],
              },
            },
          },
        },
      ]);
    }
    await apply([...dashboardSecrets(SQLITE_NS)]);
    await install('svc-dashboard', SQLITE_NS, 'svc-dashboard', [
      ...(await imageValues('dashboard')),
      '--set',
      `sqlite.persistence.storageClass=${storageClass}`,
    ]);
    await waitForPodsReady(SQLITE_NS);
    const claim = await kubectl([
      '-n',
      SQLITE_NS,
      'get',
      'pvc',
      'svc-dashboard-data',
      '-o',
      'jsonpath={.status.phase} {.spec.volumeName}',
    ]);
    assert.match(claim, /^Bound \S+$/);
    if (pvDir !== undefined) assert.equal(claim, `Bound ${PV}`);

    const tenant = await withDashboard(SQLITE_NS, async (call) => {
      const t = await createTenant(call, `sqlite-${suffix}`);
      assert.deepEqual(await tenantSeen(call, t), {
        org: 200,
        users: [`operator@${t.org}.example.com`, `reader@${t.org}.example.com`],
      });
      return t;
    });
    if (pvDir !== undefined) {
      // The file is in the node's directory, written by the pod's non-root user.
      const file = path.join(pvDir, 'dashboard.sqlite');
      assert.ok(existsSync(file), `no ${file}`);
      assert.equal(statSync(file).uid, 65532);
    }

    await replaceDashboardPod(SQLITE_NS);
    await withDashboard(SQLITE_NS, async (call) => {
      assert.deepEqual(await tenantSeen(call, tenant), {
        org: 200,
        users: [`operator@${tenant.org}.example.com`, `reader@${tenant.org}.example.com`],
      });
    });
  },
);

let proTenant: Tenant | undefined;

test(
  'the dashboard on PostgreSQL in a pod: Ready, and its data outlives its pod',
  { timeout: 600_000 },
  async () => {
    const password = randomBytes(12).toString('hex');
    const labels = { app: 'postgres' };
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'postgres', namespace: PG_NS },
        stringData: { password },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'svc-dashboard-postgres', namespace: PG_NS },
        stringData: { url: `postgres://svc:${password}@postgres.${PG_NS}.svc:5432/svc` },
      },
      ...dashboardSecrets(PG_NS),
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'postgres', namespace: PG_NS },
        spec: {
          selector: { matchLabels: labels },
          strategy: { type: 'Recreate' },
          template: {
            metadata: { labels },
            spec: {
              securityContext: { runAsNonRoot: true, fsGroup: 65532 },
              containers: [
                {
                  name: 'postgres',
                  image: await imageRef('postgres'),
                  imagePullPolicy: PULL_POLICY,
                  env: [
                    { name: 'POSTGRES_USER', value: 'svc' },
                    { name: 'POSTGRES_DB', value: 'svc' },
                    {
                      name: 'POSTGRES_PASSWORD',
                      valueFrom: { secretKeyRef: { name: 'postgres', key: 'password' } },
                    },
                  ],
                  ports: [{ containerPort: 5432 }],
                  readinessProbe: {
                    exec: { command: ['pg_isready', '-h', '127.0.0.1', '-U', 'svc'] },
                    periodSeconds: 1,
                  },
                  securityContext: RESTRICTED,
                  volumeMounts: [
                    { name: 'data', mountPath: '/var/lib/postgresql/data' },
                    { name: 'tmp', mountPath: '/tmp' },
                  ],
                },
              ],
              volumes: [
                { name: 'data', emptyDir: {} },
                { name: 'tmp', emptyDir: {} },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'postgres', namespace: PG_NS },
        spec: { selector: labels, ports: [{ port: 5432 }] },
      },
    ]);
    const start = Date.now();
    await kubectl(['-n', PG_NS, 'rollout', 'status', 'deploy/postgres', '--timeout=180s']);
    timings.push(`svc-postgres Deployment to Ready ${((Date.now() - start) / 1000).toFixed(1)} s`);
    await install('svc-dashboard', PG_NS, 'svc-dashboard', [
      ...(await imageValues('dashboard')),
      '--set',
      'storage=postgres',
      '--set',
      'postgres.urlSecret.name=svc-dashboard-postgres',
    ]);
    await waitForPodsReady(PG_NS);
    const tenant = await withDashboard(PG_NS, async (call) => {
      const t = await createTenant(call, `pg-${suffix}`);
      assert.deepEqual(await tenantSeen(call, t), {
        org: 200,
        users: [`operator@${t.org}.example.com`, `reader@${t.org}.example.com`],
      });
      return t;
    });
    await replaceDashboardPod(PG_NS);
    await withDashboard(PG_NS, async (call) => {
      assert.deepEqual(await tenantSeen(call, tenant), {
        org: 200,
        users: [`operator@${tenant.org}.example.com`, `reader@${tenant.org}.example.com`],
      });
    });
    proTenant = tenant;
  },
);

test(
  'mode pro: operator, dashboard and gateway pods; an ApiDefinition is Ready, held by the dashboard and served through the gateway',
  { timeout: 900_000 },
  async () => {
    const tenant = proTenant;
    assert.ok(tenant !== undefined, 'the PostgreSQL dashboard test made the tenant');
    const dashboardUrl = `http://svc-dashboard.${PG_NS}.svc:3000`;
    // The gateway: its management secret, and the dashboard's node secret copied into its namespace.
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'svc-gateway-secret', namespace: PRO_NS },
        stringData: { secret: randomBytes(16).toString('hex') },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'svc-dashboard-node', namespace: PRO_NS },
        stringData: { secret: NODE_SECRET },
      },
    ]);
    await install('svc-gateway', PRO_NS, 'svc-gateway', [
      ...(await imageValues('gateway')),
      '--set',
      `dashboard.url=${dashboardUrl}`,
      '--set',
      `dashboard.orgs={${tenant.org}}`,
    ]);

    // The operator in mode pro, watching this suite's namespace only.
    const license = await signedLicense('e2e-node');
    assert.ok(scratch !== undefined);
    const publicKey = path.join(scratch, 'license.pub');
    await writeFile(publicKey, license.SVC_OPERATOR_LICENSE_PUBLIC_KEY);
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: OPERATOR_NS },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: OPERATOR_CONF, namespace: OPERATOR_NS },
        stringData: {
          SVC_MODE: 'pro',
          SVC_URL: dashboardUrl,
          SVC_AUTH: tenant.system.key,
          SVC_ORG: tenant.org,
          WATCH_NAMESPACE: PRO_NS,
        },
      },
    ]);
    operatorInstalled = true;
    await install('svc-operator', OPERATOR_NS, 'svc-operator', [
      ...(await imageValues('operator')),
      '--set',
      `envFrom[0].secretRef.name=${OPERATOR_CONF}`,
      '--set',
      `global.license.operator=${license.SVC_OPERATOR_LICENSEKEY}`,
      '--set-file',
      `operator.licensePublicKey=${publicKey}`,
    ]);
    for (const n of [PG_NS, PRO_NS, OPERATOR_NS]) await waitForPodsReady(n);

    // The upstream: a pod behind a Service, addressed by its cluster name.
    const image = await imageRef('gateway');
    const listenPath = `/pro-${suffix}/`;
    await applyEchoApi({ name: 'upstream', ns: PRO_NS, image, listenPath });

    // Ready: pushed to the dashboard.
    const apiId = await waitFor(
      'the ApiDefinition Ready',
      async () => {
        const out = await kubectl([
          '-n',
          PRO_NS,
          'get',
          'apidefinition',
          'upstream',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.api_id}',
        ]);
        const [status, id] = out.split(' ');
        return status === 'True' && id !== undefined && id !== '' ? id : undefined;
      },
      180_000,
      1000,
    );
    await withDashboard(PG_NS, async (call) => {
      const r = await call('GET', `/api/apis/${apiId}`, { auth: tenant.reader.key });
      assert.equal(r.status, 200, r.text);
      const def = r.body.api_definition as {
        org_id: string;
        proxy: { listen_path: string; target_url: string };
      };
      assert.equal(def.org_id, tenant.org);
      assert.equal(def.proxy.listen_path, listenPath);
      assert.equal(def.proxy.target_url, `http://upstream.${PRO_NS}.svc:8000`);
    });

    // Served by the gateway, which loaded it from the dashboard: a client pod calls its Service.
    await assertEchoedFromPod(
      { ns: PRO_NS, image },
      `http://svc-gateway.${PRO_NS}.svc:8080${listenPath}anything?x=1`,
      'upstream',
      '/anything?x=1',
    );
    // The gateway registered with the dashboard as one of its nodes.
    const registered = await withDashboard(PG_NS, (call) => call('GET', '/admin/nodes'));
    assert.equal(registered.status, 200, registered.text);
    assert.match(registered.text, /svc-gateway-/);
  },
);
