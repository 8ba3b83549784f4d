/**
 * The node of e2e/harness/node.ts works as a cluster: a Deployment of an image made here becomes
 * Ready, and a pod resolves `kubernetes.default.svc.cluster.local` and a Service's name through
 * CoreDNS and reaches that Service's ClusterIP (kube-proxy's iptables rules, the bridge network).
 * Run by `make e2e-node` (root; starts the node or reuses the running one), not by `make e2e`.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CLUSTER_DOMAIN, DNS_IP } from '../harness/node.ts';
import { PULL_POLICY, apply, kubectl, nodeImage, repoRoot, runPod, useNamespace } from './helpers.ts';

const TIMEOUT = 180_000;
const ns = useNamespace('svc-node-smoke');
/** Node 24 in an image: the Node base of tools/images.sh on the node (Debian from debootstrap + the pinned Node). */
let image: string;

before(async () => {
  image = await nodeImage();
});

/** An HTTP server on 8080 answering with its pod's name. */
const ECHO = `require('node:http').createServer((q, s) => s.end(JSON.stringify({ pod: process.env.HOSTNAME }))).listen(8080)`;

test(
  'a Deployment of a locally built image becomes Ready behind a Service',
  { timeout: TIMEOUT },
  async () => {
    const labels = { app: 'echo' };
    const manifests = [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'echo', namespace: ns },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              securityContext: { runAsNonRoot: true, runAsUser: 65532 },
              containers: [
                {
                  name: 'echo',
                  image,
                  imagePullPolicy: PULL_POLICY,
                  command: ['node', '-e', ECHO],
                  ports: [{ containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
                  securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
                },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo', namespace: ns },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      },
    ];
    await apply(manifests);
    await kubectl(['-n', ns, 'rollout', 'status', 'deploy/echo', '--timeout=150s']);
    const ready = await kubectl([
      '-n',
      ns,
      'get',
      'deploy',
      'echo',
      '-o',
      'jsonpath={.status.readyReplicas}',
    ]);
    assert.equal(ready, '2');
  },
);

test(
  'a pod resolves cluster names through CoreDNS and reaches a ClusterIP',
  { timeout: TIMEOUT },
  async () => {
    // `services`, not `svc`: once charts/svc-operator is installed, its CRDs' category `svc` shadows
    // the Services' short name (`kubectl get svc` lists svc.svc.io objects).
    const clusterIp = await kubectl([
      '-n',
      ns,
      'get',
      'services',
      'echo',
      '-o',
      'jsonpath={.spec.clusterIP}',
    ]);
    // The pods are Ready, but kube-proxy programs the Service's endpoints on its own sync (until
    // then the ClusterIP answers connection refused: its rule for a Service without endpoints), so
    // the first connection is retried for up to 60 s, as a client in a starting cluster would.
    const probe = `
    const dns = require('node:dns/promises');
    const retried = async (url) => {
      const deadline = Date.now() + 60000;
      for (;;) {
        try { return await (await fetch(url)).json(); }
        catch (e) { if (Date.now() > deadline) throw e; await new Promise((r) => setTimeout(r, 250)); }
      }
    };
    (async () => {
      const out = {};
      out.kubernetes = (await dns.lookup('kubernetes.default.svc.${CLUSTER_DOMAIN}')).address;
      out.echo = (await dns.lookup('echo.${ns}.svc.${CLUSTER_DOMAIN}')).address;
      out.short = (await dns.lookup('echo')).address;
      out.byName = await retried('http://echo.${ns}.svc/');
      out.byIp = await retried('http://${clusterIp}/');
      out.resolvConf = require('node:fs').readFileSync('/etc/resolv.conf', 'utf8');
      console.log(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
    const { phase, logs } = await runPod(
      ns,
      'client',
      {
        securityContext: { runAsNonRoot: true, runAsUser: 65532 },
        containers: [{ name: 'client', image, imagePullPolicy: PULL_POLICY, command: ['node', '-e', probe] }],
      },
      150_000,
    );
    assert.equal(phase, 'Succeeded', logs);
    const out = JSON.parse(logs) as {
      kubernetes: string;
      echo: string;
      short: string;
      byName: { pod: string };
      byIp: { pod: string };
      resolvConf: string;
    };
    assert.equal(out.kubernetes, '10.96.0.1');
    assert.equal(out.echo, clusterIp);
    assert.equal(out.short, clusterIp);
    assert.match(out.byName.pod, /^echo-/);
    assert.match(out.byIp.pod, /^echo-/);
    assert.match(out.resolvConf, new RegExp(`nameserver ${DNS_IP.replaceAll('.', '\\.')}`));
  },
);

/** The version the node must run: SVC_KUBE_VERSION's, else tools/kube's (the default). */
function expectedVersion(): string | undefined {
  const asked = process.env.SVC_KUBE_VERSION;
  if (asked !== undefined && asked !== '') return asked;
  // Another cluster (SVC_E2E_KUBECONFIG) runs whatever version it runs.
  if ((process.env.SVC_E2E_KUBECONFIG ?? '') !== '') return undefined;
  const gomod = readFileSync(path.join(repoRoot, 'tools', 'kube', 'go.mod'), 'utf8');
  return /\sk8s\.io\/kubernetes (v1\.\d+\.\d+)/.exec(gomod)?.[1];
}

test(
  'the apiserver and every kubelet run the Kubernetes version asked for, no older than the charts claim',
  { timeout: TIMEOUT },
  async () => {
    const served = (JSON.parse(await kubectl(['get', '--raw', '/version'])) as { gitVersion: string })
      .gitVersion;
    const kubelets = (
      await kubectl(['get', 'nodes', '-o', 'jsonpath={.items[*].status.nodeInfo.kubeletVersion}'])
    )
      .trim()
      .split(/\s+/);
    const wanted = expectedVersion();
    if (wanted !== undefined) {
      assert.equal(served, wanted);
      assert.deepEqual(kubelets, [wanted]);
    }
    // The charts' kubeVersion: '>=1.28.0-0'.
    const claim = /kubeVersion: '>=1\.(\d+)\.0-0'/.exec(
      readFileSync(path.join(repoRoot, 'charts', 'svc-operator', 'Chart.yaml'), 'utf8'),
    );
    assert.notEqual(claim, null, 'charts/svc-operator/Chart.yaml has no kubeVersion');
    for (const v of [served, ...kubelets]) {
      const minor = Number(/^v1\.(\d+)\./.exec(v)?.[1]);
      assert.ok(minor >= Number(claim?.[1]), `${v} is older than the charts' 1.${String(claim?.[1])}`);
    }
  },
);
