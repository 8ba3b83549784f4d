/**
 * The node of e2e/harness/node.ts works as a cluster: a Deployment of an image made here becomes
 * Ready, and a pod resolves `kubernetes.default.svc.cluster.local` and a Service's name through
 * CoreDNS and reaches that Service's ClusterIP (kube-proxy's iptables rules, the bridge network).
 * Run by `make e2e-node` (root; starts the node or reuses the running one), not by `make e2e`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { CLUSTER_DOMAIN, DNS_IP, importImage, nodeKubectl, startNode } from '../harness/node.ts';
import type { Node } from '../harness/node.ts';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const TIMEOUT = 180_000;
const ns = `svc-node-smoke-${randomBytes(3).toString('hex')}`;

let node: Node;
/** The Node 24 base image of tools/images.sh (Debian from debootstrap + the pinned Node). */
let image: string;

const kubectl = (args: string[], input?: string): Promise<string> => nodeKubectl(args, input, node.dir);

before(async () => {
  node = await startNode({ verbose: true });
  const { stdout } = await execFileAsync(path.join(repoRoot, 'tools', 'images.sh'), ['bases'], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('node\t'));
  const [, ref, archive] = line?.split('\t') ?? [];
  assert.ok(
    ref !== undefined && archive !== undefined,
    `tools/images.sh bases printed no node image:\n${stdout}`,
  );
  image = ref;
  await importImage(archive, node.dir);
  await kubectl(['create', 'namespace', ns]);
});

after(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
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
                  imagePullPolicy: 'Never',
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
    await kubectl(['apply', '-f', '-'], manifests.map((m) => stringify(m)).join('---\n'));
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
    const probe = `
    const dns = require('node:dns/promises');
    (async () => {
      const out = {};
      out.kubernetes = (await dns.lookup('kubernetes.default.svc.${CLUSTER_DOMAIN}')).address;
      out.echo = (await dns.lookup('echo.${ns}.svc.${CLUSTER_DOMAIN}')).address;
      out.short = (await dns.lookup('echo')).address;
      out.byName = await (await fetch('http://echo.${ns}.svc/')).json();
      out.byIp = await (await fetch('http://${clusterIp}/')).json();
      out.resolvConf = require('node:fs').readFileSync('/etc/resolv.conf', 'utf8');
      console.log(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'client', namespace: ns },
      spec: {
        restartPolicy: 'Never',
        securityContext: { runAsNonRoot: true, runAsUser: 65532 },
        containers: [{ name: 'client', image, imagePullPolicy: 'Never', command: ['node', '-e', probe] }],
      },
    };
    await kubectl(['apply', '-f', '-'], stringify(pod));
    const phase = await waitFor(
      'the client pod to finish',
      async () => {
        const p = await kubectl(['-n', ns, 'get', 'pod', 'client', '-o', 'jsonpath={.status.phase}']);
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      150_000,
      500,
    );
    const logs = await kubectl(['-n', ns, 'logs', 'client']);
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
