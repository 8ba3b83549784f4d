/**
 * `make bench-node`: the operator's convergence with svc installed on the node by its charts (the
 * operator in its pod under the chart's limits, the gateway in its pod with its Redis store, the
 * API server calling the webhooks through their Service): 1000 ApiDefinitions (SVC_BENCH_NODE_APIS)
 * applied as operator-bench.ts applies them (server-side, 8 kubectl processes at once), polled
 * through the gateway's Service from this machine (kube-proxy routes a ClusterIP from the host)
 * until each reaches its upstream, an echo Deployment in the bench's namespace. Figures go to the
 * "Operator on the node" section of docs/benchmarks.md, beside the out-of-pod figure of the
 * "Operator" section. Installs svc-operator: `make bench-node` holds /tmp/svc-node-operator.lock.
 */
import { cpus, loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import { APPLIERS, summarize, timeToServe } from './serving.ts';
import { writeSection } from './stack.ts';
import {
  GATEWAY_NS,
  OPERATOR_NS,
  apply,
  echoUpstreamDocs,
  imageRef,
  kubectl,
  waitForPodsReady,
} from '../node/helpers.ts';
import { installGatewayAndOperator, uninstallOperator } from '../node/install.ts';

const N = Number(process.env.SVC_BENCH_NODE_APIS ?? 1000);
const ns = `svc-bench-node-${randomBytes(3).toString('hex')}`;

/** The operator container's peak and current resident memory (MiB), from its /proc/1/status. */
async function operatorMemory(): Promise<{ peakRssMiB: number; rssMiB: number }> {
  const status = await kubectl([
    '-n',
    OPERATOR_NS,
    'exec',
    'deploy/svc-operator-controller-manager',
    '--',
    'cat',
    '/proc/1/status',
  ]);
  const kib = (field: string): number =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { peakRssMiB: kib('VmHWM'), rssMiB: kib('VmRSS') };
}

const load = loadavg()[0]?.toFixed(2) ?? '?';
const install = await installGatewayAndOperator({ org: 'bench-node' });
try {
  const upstream = await imageRef('gateway');
  const echo = `require('node:http').createServer((q, s) => { s.writeHead(200, { 'x-upstream': 'echo' }); s.end(q.url); }).listen(8000)`;
  await apply([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    ...echoUpstreamDocs({ name: 'echo', ns, image: upstream, script: echo, replicas: 2 }),
  ]);
  await waitForPodsReady(ns);
  const clusterIp = (
    await kubectl(['-n', GATEWAY_NS, 'get', 'services', 'svc-gateway', '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  const gw = { url: `http://${clusterIp}:8080` };
  const memoryBefore = await operatorMemory();

  const paths = Array.from({ length: N }, (_, i) => `/node-${i}/`);
  const manifests = paths.map(
    (p, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: node-${i}, namespace: ${ns}}
spec:
  name: node-${i}
  use_keyless: true
  proxy: {listen_path: ${p}, target_url: "http://echo.${ns}.svc:8000", strip_listen_path: true}
`,
  );
  const t0 = Date.now();
  const serving = timeToServe(gw, paths, t0);
  const share = Math.ceil(manifests.length / APPLIERS);
  await Promise.all(
    Array.from({ length: APPLIERS }, (_, i) => manifests.slice(i * share, (i + 1) * share))
      .filter((part) => part.length > 0)
      .map((part) => kubectl(['apply', '--server-side', '-f', '-'], part.join('---\n'))),
  );
  const applied = Date.now() - t0;
  const run = summarize(N, await serving);
  const memory = await operatorMemory();
  const s = (ms: number): string => (ms / 1000).toFixed(2);
  console.log(
    `n=${N}: applied ${s(applied)} s, p50 ${s(run.p50)} s, p99 ${s(run.p99)} s, total ${s(run.total)} s; operator RSS ${memoryBefore.rssMiB.toFixed(0)} -> peak ${memory.peakRssMiB.toFixed(0)} MiB`,
  );
  const limits = await kubectl([
    '-n',
    OPERATOR_NS,
    'get',
    'deploy',
    'svc-operator-controller-manager',
    '-o',
    'jsonpath={.spec.template.spec.containers[0].resources}',
  ]);
  await writeSection(
    'Operator on the node',
    `## Operator on the node

${N} ApiDefinitions applied as in the Operator section (server-side, ${APPLIERS} kubectl processes at
once) with svc installed on the node by its charts (\`make bench-node\`, e2e/bench/operator-node.ts): the
operator in its pod (chart defaults, resources ${limits.trim() || 'none'}), the API server calling
its webhooks through their Service, the gateway in its pod with its Redis store in a pod, the
upstream an echo Deployment addressed as \`echo.<namespace>.svc:8000\`. Polled from the machine
through the gateway's ClusterIP until each API reaches the upstream. Seconds.
Machine: ${cpus().length} cores, the node's own processes on them too (load average ${load} before the run);
generated on ${new Date().toISOString().slice(0, 10)}. helm install to Ready in this run: svc-gateway
${install.readySeconds.gateway.toFixed(1)} s, svc-operator ${install.readySeconds.operator.toFixed(1)} s.

| N | applied | p50 | p99 | total | operator peak RSS (MiB) |
|---|---|---|---|---|---|
| ${N} | ${s(applied)} | ${s(run.p50)} | ${s(run.p99)} | ${s(run.total)} | ${memory.peakRssMiB.toFixed(0)} |
`,
  );
} finally {
  // The operator removes its finalizers while it runs: the namespace goes first.
  await kubectl(['delete', 'namespace', ns, '--ignore-not-found', '--timeout=5m']).catch((err: unknown) => {
    console.error(String(err));
  });
  await uninstallOperator({ gateway: true });
}
