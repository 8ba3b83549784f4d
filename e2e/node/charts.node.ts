/**
 * svc installed on the node the way a cluster admin installs it: `helm upgrade --install` of
 * charts/svc-gateway (its Redis store in a pod, from the Redis image tools/images.sh makes) and
 * charts/svc-operator (the webhooks' certificates self-managed), from the images built here; every
 * pod Ready; then an ApiDefinition whose upstream is a Service in a pod addressed as
 * `<service>.<namespace>.svc:<port>` is served through the gateway's Service to a client pod.
 * Run by `make e2e-node`, not by `make e2e`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { nodeKubectl, startNode } from '../harness/node.ts';
import type { Node } from '../harness/node.ts';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const GATEWAY_NS = 'svc-gateway';
const OPERATOR_NS = 'svc-operator-system';
const ns = `svc-node-charts-${randomBytes(3).toString('hex')}`;
const gatewaySecret = randomBytes(16).toString('hex');

let node: Node;
const images = new Map<string, string>();

const kubectl = (args: string[], input?: string): Promise<string> => nodeKubectl(args, input, node.dir);
const apply = (docs: object[]): Promise<string> =>
  kubectl(['apply', '-f', '-'], docs.map((d) => stringify(d)).join('---\n'));

async function helm(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(
    path.join(toolsDir(), 'helm'),
    [`--kubeconfig=${node.kubeconfig}`, ...args],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  return stdout;
}

/** `--set` values pointing a chart at an image made here. */
function imageValues(name: string): string[] {
  const ref = images.get(name);
  assert.ok(ref !== undefined, `tools/images.sh built no ${name} image`);
  const colon = ref.lastIndexOf(':');
  return [
    '--set',
    `image.repository=${ref.slice(0, colon)}`,
    '--set',
    `image.tag=${ref.slice(colon + 1)}`,
    '--set',
    'image.pullPolicy=Never',
  ];
}

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

before(async () => {
  node = await startNode({ verbose: true });
  const { stdout } = await execFileAsync(
    path.join(repoRoot, 'tools', 'images.sh'),
    ['import', node.containerdSocket],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  for (const line of stdout.trim().split('\n')) {
    const [name, ref] = line.split('\t');
    if (name !== undefined && ref !== undefined) images.set(name, ref);
  }
  for (const n of [GATEWAY_NS, OPERATOR_NS, ns]) {
    await apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } }]);
  }
  const redis = images.get('redis');
  assert.ok(redis !== undefined, 'tools/images.sh built no Redis image');
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-gateway-secret', namespace: GATEWAY_NS },
      stringData: { secret: gatewaySecret },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'redis', namespace: GATEWAY_NS },
      spec: {
        selector: { matchLabels: { app: 'redis' } },
        template: {
          metadata: { labels: { app: 'redis' } },
          spec: {
            securityContext: { runAsNonRoot: true },
            containers: [
              {
                name: 'redis',
                image: redis,
                imagePullPolicy: 'Never',
                ports: [{ containerPort: 6379 }],
                readinessProbe: { tcpSocket: { port: 6379 }, periodSeconds: 1 },
                securityContext: restricted,
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: {} }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'redis', namespace: GATEWAY_NS },
      spec: { selector: { app: 'redis' }, ports: [{ port: 6379 }] },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-operator-conf', namespace: OPERATOR_NS },
      stringData: {
        SVC_MODE: 'ce',
        SVC_URL: `http://svc-gateway.${GATEWAY_NS}.svc:8080`,
        SVC_AUTH: gatewaySecret,
        SVC_ORG: 'e2e-node',
      },
    },
  ]);
  await kubectl(['-n', GATEWAY_NS, 'rollout', 'status', 'deploy/redis', '--timeout=120s']);
  await helm([
    'upgrade',
    '--install',
    'svc-gateway',
    path.join(repoRoot, 'charts', 'svc-gateway'),
    '-n',
    GATEWAY_NS,
    ...imageValues('gateway'),
    '--set',
    'extraEnv[0].name=SVC_GW_STORE',
    '--set',
    `extraEnv[0].value=redis://redis.${GATEWAY_NS}.svc:6379`,
    '--wait',
    '--timeout=5m',
  ]);
  await helm([
    'upgrade',
    '--install',
    'svc-operator',
    path.join(repoRoot, 'charts', 'svc-operator'),
    '-n',
    OPERATOR_NS,
    ...imageValues('operator'),
    '--wait',
    '--timeout=5m',
  ]);
});

after(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
});

test('every pod of both charts and of Redis is Ready', { timeout: 300_000 }, async () => {
  for (const n of [GATEWAY_NS, OPERATOR_NS]) {
    await kubectl(['-n', n, 'wait', '--for=condition=Ready', 'pod', '--all', '--timeout=240s']);
    const pods = await kubectl([
      '-n',
      n,
      'get',
      'pods',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name} {.status.phase}{"\\n"}{end}',
    ]);
    assert.ok(pods.trim().split('\n').length >= 1, `no pod in ${n}`);
    assert.doesNotMatch(pods, / (Pending|Failed|Unknown)$/m, pods);
  }
});

test(
  'an ApiDefinition is served through the gateway Service to a client pod',
  { timeout: 300_000 },
  async () => {
    const labels = { app: 'httpbin' };
    const listenPath = `/httpbin-${randomBytes(3).toString('hex')}/`;
    const echo = `require('node:http').createServer((q, s) => s.end(JSON.stringify({ pod: process.env.HOSTNAME, path: q.url }))).listen(8000)`;
    await apply([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'httpbin', namespace: ns },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              securityContext: { runAsNonRoot: true },
              containers: [
                {
                  name: 'httpbin',
                  image: images.get('gateway'),
                  imagePullPolicy: 'Never',
                  args: ['-e', echo],
                  readinessProbe: { tcpSocket: { port: 8000 }, periodSeconds: 1 },
                  securityContext: restricted,
                },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'httpbin', namespace: ns },
        spec: { selector: labels, ports: [{ port: 8000 }] },
      },
      {
        apiVersion: 'svc.svc.io/v1alpha1',
        kind: 'ApiDefinition',
        metadata: { name: 'httpbin', namespace: ns },
        spec: {
          name: 'httpbin',
          active: true,
          use_keyless: true,
          protocol: 'http',
          proxy: {
            listen_path: listenPath,
            target_url: `http://httpbin.${ns}.svc:8000`,
            strip_listen_path: true,
          },
        },
      },
    ]);
    await kubectl(['-n', ns, 'rollout', 'status', 'deploy/httpbin', '--timeout=120s']);
    // The client retries until the operator has pushed the API and the gateway serves it.
    const client = `
    (async () => {
      const deadline = Date.now() + 150000;
      let last = '';
      while (Date.now() < deadline) {
        try {
          const res = await fetch('http://svc-gateway.${GATEWAY_NS}.svc:8080${listenPath}anything?x=1');
          const body = await res.text();
          if (res.status === 200) { console.log(JSON.stringify({ status: res.status, body: JSON.parse(body) })); return; }
          last = res.status + ' ' + body;
        } catch (e) { last = String(e); }
        await new Promise((r) => setTimeout(r, 1000));
      }
      console.error('not served: ' + last);
      process.exit(1);
    })();`;
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'client', namespace: ns },
        spec: {
          restartPolicy: 'Never',
          securityContext: { runAsNonRoot: true },
          containers: [
            {
              name: 'client',
              image: images.get('gateway'),
              imagePullPolicy: 'Never',
              args: ['-e', client],
              securityContext: restricted,
            },
          ],
        },
      },
    ]);
    const phase = await waitFor(
      'the client pod to finish',
      async () => {
        const p = await kubectl(['-n', ns, 'get', 'pod', 'client', '-o', 'jsonpath={.status.phase}']);
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      240_000,
      1000,
    );
    const logs = await kubectl(['-n', ns, 'logs', 'client']);
    assert.equal(phase, 'Succeeded', logs);
    const out = JSON.parse(logs) as { status: number; body: { pod: string; path: string } };
    assert.equal(out.status, 200);
    assert.match(out.body.pod, /^httpbin-/);
    assert.equal(out.body.path, '/anything?x=1');
  },
);
