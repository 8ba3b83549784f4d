/**
 * The world of operator-faults.node.ts on the real node: the node and the images built here, the
 * gateway's release and an echo upstream (setUp; tearDown leaves no release behind), the
 * operator's installs (installCurrent, installOperator: until the API server reaches the webhooks
 * through their Service), and what the cases read as a user would: the APIs' versions through the
 * gateway's Service, their Ready conditions, the operator's pods and Lease, the gateway's log of
 * its management writes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { nodeKubectl, startNode } from '../harness/node.ts';
import { echoApiDefinition, echoUpstreamDocs } from './helpers.ts';
import { applyChartCrds, waitForWebhooks } from './install.ts';
import type { Node } from '../harness/node.ts';

export const execFileAsync = promisify(execFile);
export const repoRoot = path.resolve(import.meta.dirname, '..', '..');
export const OPERATOR_NS = 'svc-operator-system';
export const RELEASE = 'svc-operator';
const suffix = randomBytes(3).toString('hex');
const GW_NS = `n4b-gw-${suffix}`;
export const ns = `n4b-faults-${suffix}`;
const gatewaySecret = randomBytes(16).toString('hex');
/** The chart as of 2026-11-24: CRDs with the older ID pattern, no license public key value. */
export const OLD_CHART_COMMIT = '56a22f5';
/** The operator's lease (lib/k8s/leader.ts): 15 s without renewal. */
export const LEASE_DURATION_MS = 15_000;
export const BURST = 200;
export const MUTATING = 'svc-operator-mutating-webhook-configuration';
export const VALIDATING = 'svc-operator-validating-webhook-configuration';

export let node: Node;
let nodeStarted = false;
let gatewayIp = '';
const images = new Map<string, string>();

export const kubectl = (args: string[], input?: string): Promise<string> =>
  nodeKubectl(args, input, node.dir);
const manifest = (docs: object[]): string => docs.map((d) => stringify(d)).join('---\n');
export const apply = (docs: object[]): Promise<string> =>
  kubectl(['apply', '--server-side', '--field-manager=e2e-faults', '-f', '-'], manifest(docs));
export const errText = (err: unknown): string => {
  const e = err as { stderr?: unknown; message?: unknown };
  return typeof e.stderr === 'string' && e.stderr !== '' ? e.stderr : String(e.message ?? err);
};

export async function helm(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(
    path.join(toolsDir(), 'helm'),
    [`--kubeconfig=${node.kubeconfig}`, ...args],
    { maxBuffer: 16 * 1024 * 1024 },
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

const listenPath = (name: string): string => `/${suffix}/${name}/`;

/** An ApiDefinition whose upstream path says which version of it the gateway serves. */
export function apiDefinition(name: string, version: string, extra: Record<string, unknown> = {}): object {
  return echoApiDefinition({
    name,
    ns,
    listenPath: listenPath(name),
    upstream: 'echo',
    upstreamPath: `/${version}`,
    extra,
  });
}

/**
 * The version (`v1`, `v2`, ...) the gateway serves for an API, from the path its upstream saw, or
 * a description of the failure.
 */
export async function servedVersion(name: string): Promise<{ version?: string; failure?: string }> {
  try {
    const res = await fetch(`http://${gatewayIp}:8080${listenPath(name)}probe`, {
      signal: AbortSignal.timeout(5000),
    });
    const body = await res.text();
    if (res.status !== 200) return { failure: `${res.status} ${body.slice(0, 200)}` };
    const upstreamPath = (JSON.parse(body) as { path: string }).path;
    const m = /^\/(v\d+)\/probe$/.exec(upstreamPath);
    return m?.[1] !== undefined ? { version: m[1] } : { failure: `upstream saw ${upstreamPath}` };
  } catch (err) {
    return { failure: String(err) };
  }
}

export async function waitServed(
  names: string[],
  version: (name: string) => string,
  timeoutMs: number,
): Promise<void> {
  let pending = names;
  await waitFor(
    `${names.length} APIs served by the gateway with their latest content`,
    async () => {
      const still: string[] = [];
      for (const name of pending) {
        if ((await servedVersion(name)).version !== version(name)) still.push(name);
      }
      pending = still;
      return pending.length === 0;
    },
    timeoutMs,
    1000,
  ).catch(async (err: unknown) => {
    const first = pending[0];
    const why = first === undefined ? '' : ` (${first}: ${JSON.stringify(await servedVersion(first))})`;
    throw new Error(`${String(err)}; ${pending.length} not served as expected${why}`);
  });
}

interface ApiObject {
  metadata: { name: string; generation: number; finalizers?: string[] };
  status?: {
    api_id?: string;
    conditions?: { type: string; status: string; reason?: string; observedGeneration?: number }[];
  };
}

export async function apiObjects(kind = 'apidefinitions'): Promise<ApiObject[]> {
  return (JSON.parse(await kubectl(['-n', ns, 'get', kind, '-o', 'json'])) as { items: ApiObject[] }).items;
}

/** Ready=True for the object's current generation: the operator has pushed its latest spec. */
export const readyNow = (o: ApiObject): boolean =>
  o.status?.conditions?.some(
    (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === o.metadata.generation,
  ) === true;

export async function waitReady(names: string[], timeoutMs: number): Promise<ApiObject[]> {
  const wanted = new Set(names);
  let notReady: string[] = [];
  return waitFor(
    `${names.length} ApiDefinitions Ready for their latest generation`,
    async () => {
      const items = (await apiObjects()).filter((o) => wanted.has(o.metadata.name));
      notReady = [...wanted].filter((n) => !items.some((o) => o.metadata.name === n && readyNow(o)));
      return notReady.length === 0 ? items : undefined;
    },
    timeoutMs,
    2000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; not Ready: ${notReady.slice(0, 5).join(', ')} (${notReady.length})`);
  });
}

export async function operatorPods(): Promise<{ name: string; ready: boolean; deleting: boolean }[]> {
  const out = JSON.parse(
    await kubectl(['-n', OPERATOR_NS, 'get', 'pods', '-l', 'control-plane=controller-manager', '-o', 'json']),
  ) as {
    items: {
      metadata: { name: string; deletionTimestamp?: string };
      status?: { conditions?: { type: string; status: string }[] };
    }[];
  };
  return out.items.map((p) => ({
    name: p.metadata.name,
    deleting: p.metadata.deletionTimestamp !== undefined,
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  }));
}

/** The pod named by the Lease's holder (`<pod>_<random>`), or '' when nobody holds it. */
export async function leaseHolder(): Promise<string> {
  const holder = await kubectl([
    '-n',
    OPERATOR_NS,
    'get',
    'lease',
    'svc-operator-leader',
    '-o',
    'jsonpath={.spec.holderIdentity}',
  ]).catch(() => '');
  return holder.trim().replace(/_[0-9a-f]+$/, '');
}

/** The gateway's management writes of APIs, from its log: api_id to the actions, in order. */
export async function gatewayApiWrites(): Promise<Map<string, string[]>> {
  const log = await kubectl([
    '-n',
    GW_NS,
    'logs',
    '-l',
    'app.kubernetes.io/name=svc-gateway',
    '--tail=-1',
    '--max-log-requests=10',
  ]);
  const writes = new Map<string, string[]>();
  for (const line of log.split('\n')) {
    if (!line.includes('"api stored"')) continue;
    const entry = JSON.parse(line) as { message?: string; api_id?: string; action?: string };
    if (entry.message !== 'api stored' || entry.api_id === undefined) continue;
    writes.set(entry.api_id, [...(writes.get(entry.api_id) ?? []), entry.action ?? '?']);
  }
  return writes;
}

export async function releaseExists(): Promise<boolean> {
  const out = await helm(['list', '-n', OPERATOR_NS, '-q', '--filter', `^${RELEASE}$`]);
  return out.trim() !== '';
}

/** The current chart, after its CRDs (docs/install.md, section 3), whatever a case before left. */
export async function installCurrent(extra: string[] = []): Promise<void> {
  await applyChartCrds();
  await installOperator(path.join(repoRoot, 'charts', 'svc-operator'), extra);
}

export async function installOperator(chart: string, extra: string[] = []): Promise<void> {
  await helm([
    'upgrade',
    '--install',
    RELEASE,
    chart,
    '-n',
    OPERATOR_NS,
    ...imageValues('operator'),
    ...extra,
    '--wait',
    '--timeout=5m',
  ]);
  await kubectl([
    '-n',
    OPERATOR_NS,
    'rollout',
    'status',
    'deploy/svc-operator-controller-manager',
    '--timeout=240s',
  ]);
  // The pods are Ready, but the API server reaches the webhook Service only once kube-proxy has
  // its rules.
  await waitForWebhooks();
}

/** The node, the images, the namespaces, the echo upstream and the gateway's release; no svc-operator release. */
export async function setUp(): Promise<void> {
  node = await startNode({ verbose: true });
  nodeStarted = true;
  const { stdout } = await execFileAsync(
    path.join(repoRoot, 'tools', 'images.sh'),
    ['import', node.containerdSocket],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  for (const line of stdout.trim().split('\n')) {
    const [name, ref] = line.split('\t');
    if (name !== undefined && ref !== undefined) images.set(name, ref);
  }
  for (const n of [GW_NS, OPERATOR_NS, ns]) {
    await apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } }]);
  }
  const echo = `require('node:http').createServer((q, s) => s.end(JSON.stringify({ path: q.url }))).listen(8000)`;
  const image = images.get('gateway');
  assert.ok(image !== undefined, 'tools/images.sh built no gateway image');
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-gateway-secret', namespace: GW_NS },
      stringData: { secret: gatewaySecret },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-operator-conf', namespace: OPERATOR_NS },
      stringData: {
        SVC_MODE: 'ce',
        SVC_URL: `http://svc-gateway.${GW_NS}.svc:8080`,
        SVC_AUTH: gatewaySecret,
        SVC_ORG: 'e2e-node-faults',
      },
    },
    ...echoUpstreamDocs({ name: 'echo', ns, image, script: echo, pullPolicy: 'Never' }),
  ]);
  await helm([
    'upgrade',
    '--install',
    'svc-gateway',
    path.join(repoRoot, 'charts', 'svc-gateway'),
    '-n',
    GW_NS,
    ...imageValues('gateway'),
    '--wait',
    '--timeout=5m',
  ]);
  await kubectl(['-n', ns, 'rollout', 'status', 'deploy/echo', '--timeout=120s']);
  // The node's own processes reach Services by their cluster IP (kube-proxy's rules cover locally
  // generated traffic), so the test asks the gateway through its Service as a pod would.
  gatewayIp = (
    await kubectl(['-n', GW_NS, 'get', 'svc', 'svc-gateway', '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  // A release another suite left (the lock is ours): this file starts from the older chart.
  if (await releaseExists()) await helm(['uninstall', RELEASE, '-n', OPERATOR_NS, '--wait', '--timeout=5m']);
}

/** No release left behind, whatever failed; the namespaces deleted. */
export async function tearDown(): Promise<void> {
  // Leave no release behind, whatever failed; the hook lets go of what the operator held.
  if (!nodeStarted) return;
  if (await releaseExists().catch(() => false)) {
    await helm(['uninstall', RELEASE, '-n', OPERATOR_NS, '--wait', '--timeout=5m']).catch(() => undefined);
  }
  await helm(['uninstall', 'svc-gateway', '-n', GW_NS, '--wait', '--timeout=2m']).catch(() => undefined);
  for (const n of [ns, GW_NS]) {
    await kubectl(['delete', 'namespace', n, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  }
}
