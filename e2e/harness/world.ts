/**
 * One switch for the operator suites. `startWorld()` gives a suite what it runs against, in the
 * same shape whichever way it was obtained: kubectl, the gateway (URL and management secret, as
 * the suite reaches it), echo upstreams (URLs as the gateway reaches them), namespaces of the
 * suite's own, and a cleanup.
 *
 * - Local (the default, `make e2e`): a private control plane with the CRDs, two gateway processes,
 *   echo upstreams on 127.0.0.1 and the operator as a process; `world.local` gives the fault tests
 *   the processes themselves.
 * - Cluster (`SVC_E2E_CLUSTER=1`, `make e2e-cluster`): the cluster KUBECONFIG points at, with the
 *   operator, webhooks and gateway installed by charts/svc-operator and charts/svc-gateway. Nothing
 *   is started locally: the gateway is reached through `kubectl port-forward` of its Service, the
 *   upstreams are echo Deployments and Services in the suite's namespace, the namespaces are named
 *   `svc-e2e-<suite>-<name>-<random>` and deleted by `stop()`. `world.local` is undefined: tests
 *   that stop processes or need a second gateway are local-only.
 *   Settings: E2E_GATEWAY_NAMESPACE (svc-gateway), E2E_GATEWAY_SECRET (read from the Secret
 *   svc-gateway-secret otherwise), E2E_OPERATOR_NAMESPACE (svc-operator-system), E2E_ORG (the
 *   operator's SVC_ORG from its Secret svc-operator-conf otherwise), E2E_NODE_IMAGE (the image the
 *   echo upstreams run in; node:24-alpine), KUBECTL (kubectl).
 *
 * The cluster mode cannot run on the machine where `make test` runs (no cluster there); it is
 * exercised by .github/workflows/e2e-kind.yaml (docs/e2e-cluster.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environment } from '../../lib/config.ts';
import {
  startControlPlane,
  type ControlPlane,
  type KubectlOptions,
  type KubectlResult,
} from './control-plane.ts';
import {
  freePort,
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from './processes.ts';

const root = join(import.meta.dirname, '..', '..');

/** Runs kubectl against the world's cluster. */
export type Kubectl = (args: string[], opts?: KubectlOptions) => Promise<KubectlResult>;

/** A gateway as the suite reaches it: its base URL and management secret. */
export interface GatewayEndpoint {
  url: string;
  secret: string;
}

/** An echo upstream: answers every request with what it received, as JSON, and `x-upstream: <name>`. */
export interface Upstream {
  name: string;
  /** The URL the gateway proxies to (a cluster Service address in cluster mode). */
  url: string;
}

/** The processes of a local world, for tests that stop, restart or inspect them. */
export interface LocalWorld {
  cp: ControlPlane;
  /** Logs and gateway data. */
  dir: string;
  /** The gateway the operator pushes to (the same as `world.gateway`). */
  gw: GatewayProc;
  /** A second gateway (for OperatorContext tests); a test that restarts it replaces it here. */
  gw2: GatewayProc;
  /** The running operator, undefined while stopped. */
  operator: OperatorProc | undefined;
  /** Starts the operator again with the world's settings (after {@link stopOperator}). */
  startOperator(): Promise<OperatorProc>;
  stopOperator(): Promise<void>;
}

export interface World {
  /** True in cluster mode (`SVC_E2E_CLUSTER=1`). */
  readonly cluster: boolean;
  kubectl: Kubectl;
  gateway: GatewayEndpoint;
  /** The organisation the operator writes into the gateway (its SVC_ORG). */
  org: string;
  /** The real name of the suite's namespace `name` (the name itself in local mode). */
  ns(name: string): string;
  /** The first echo upstream, answering as `echo`. */
  upstream: Upstream;
  /** Another echo upstream answering as `name` (in the first namespace, in cluster mode). */
  startUpstream(name: string): Promise<Upstream>;
  /** Local mode only. */
  local: LocalWorld | undefined;
  /** Stops what was started and deletes what was created (cluster: the namespaces, with their contents). */
  stop(): Promise<void>;
}

export interface WorldOptions {
  /** The suite's name: log file names, namespace prefix. */
  name: string;
  /** The suite's namespaces, created before the operator starts. */
  namespaces: readonly string[];
  /** Local: the management secrets of the two gateways. */
  secrets: readonly [string, string];
  /** Local: the operator's SVC_ORG (default e2e-org). Cluster: the installed operator's is used. */
  org?: string;
  /** Local: the operator's settings (the installed operator has the chart's). */
  operatorEnv?: Record<string, string>;
}

/** True when the suites run against the cluster KUBECONFIG points at. */
export function clusterMode(): boolean {
  return environment().SVC_E2E_CLUSTER === '1';
}

/** A local world or a cluster world, as {@link clusterMode} says. */
export async function startWorld(opts: WorldOptions): Promise<World> {
  return clusterMode() ? startClusterWorld(opts) : startLocalWorld(opts);
}

async function startLocalWorld(opts: WorldOptions): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), `svc-e2e-${opts.name}-`));
  const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
  for (const ns of [...opts.namespaces, 'svc-operator-system']) await cp.kubectl(['create', 'namespace', ns]);
  const upstreams = [await startEchoUpstream()];
  const [secret, secret2] = opts.secrets;
  const gw = await startGateway({
    name: `${opts.name}-gateway`,
    secret,
    dataDir: join(dir, 'gw'),
    logDir: dir,
  });
  const gw2 = await startGateway({
    name: `${opts.name}-gateway-2`,
    secret: secret2,
    dataDir: join(dir, 'gw2'),
    logDir: dir,
  });
  const org = opts.org ?? 'e2e-org';
  let runs = 0;
  const local: LocalWorld = {
    cp,
    dir,
    gw,
    gw2,
    operator: undefined,
    async startOperator() {
      runs++;
      local.operator = await startOperator({
        name: runs === 1 ? `${opts.name}-operator` : `${opts.name}-operator-${String(runs)}`,
        gateway: gw,
        kubeconfig: cp.kubeconfig,
        logDir: dir,
        org,
        ...(opts.operatorEnv ? { env: opts.operatorEnv } : {}),
      });
      return local.operator;
    },
    async stopOperator() {
      await local.operator?.stop();
      local.operator = undefined;
    },
  };
  await local.startOperator();
  const first = upstreams[0];
  if (first === undefined) throw new Error('no upstream');
  return {
    cluster: false,
    kubectl: (args, kopts) => cp.kubectl(args, kopts),
    gateway: gw,
    org,
    ns: (name) => name,
    upstream: { name: 'echo', url: first.url },
    async startUpstream(name) {
      const u = await startEchoUpstream(name);
      upstreams.push(u);
      return { name, url: u.url };
    },
    local,
    async stop() {
      await local.stopOperator();
      await local.gw.stop();
      await local.gw2.stop();
      for (const u of upstreams) await u.close();
      await cp.stop();
    },
  };
}

/** The echo upstream of processes.ts, as a script for `node -e` in the cluster. */
const ECHO_SCRIPT = `const http = require('node:http');
const name = process.env.ECHO_NAME;
http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const url = new URL(req.url || '/', 'http://x');
    res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
    res.end(JSON.stringify({ upstream: name, method: req.method, path: url.pathname, query: url.search, headers: req.headers, body }));
  });
}).listen(8080);
process.on('SIGTERM', () => process.exit(0));
`;

/** Runs kubectl from PATH (or KUBECTL) against KUBECONFIG; rejects on a non-zero exit unless allowFailure. */
function clusterKubectl(bin: string): Kubectl {
  return (args, opts = {}) =>
    new Promise((resolve, reject) => {
      const p = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      p.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      p.on('error', reject);
      p.on('close', (code) => {
        if (code !== 0 && opts.allowFailure !== true) {
          reject(new Error(`kubectl ${args.join(' ')} exited with ${String(code)}:\n${stderr.trim()}`));
        } else resolve({ code: code ?? 1, stdout, stderr });
      });
      p.stdin.on('error', () => undefined);
      p.stdin.end(opts.input ?? '');
    });
}

/** A Secret's key, decoded; undefined when the Secret or key is missing. */
async function secretKey(
  kubectl: Kubectl,
  ns: string,
  name: string,
  key: string,
): Promise<string | undefined> {
  const r = await kubectl(['get', 'secret', name, '-n', ns, '-o', 'json'], { allowFailure: true });
  if (r.code !== 0) return undefined;
  const value = (JSON.parse(r.stdout) as { data?: Record<string, string> }).data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

async function startClusterWorld(opts: WorldOptions): Promise<World> {
  const env = environment();
  if (env.KUBECONFIG === undefined || env.KUBECONFIG === '') {
    throw new Error('SVC_E2E_CLUSTER=1 runs against the cluster KUBECONFIG points at: set KUBECONFIG');
  }
  const bin = env.KUBECTL ?? 'kubectl';
  const kubectl = clusterKubectl(bin);
  const gatewayNs = env.E2E_GATEWAY_NAMESPACE ?? 'svc-gateway';
  const operatorNs = env.E2E_OPERATOR_NAMESPACE ?? 'svc-operator-system';
  const nodeImage = env.E2E_NODE_IMAGE ?? 'node:24-alpine';
  const secret =
    env.E2E_GATEWAY_SECRET ?? (await secretKey(kubectl, gatewayNs, 'svc-gateway-secret', 'secret'));
  if (secret === undefined) {
    throw new Error(`no gateway secret: set E2E_GATEWAY_SECRET or create ${gatewayNs}/svc-gateway-secret`);
  }
  const org = env.E2E_ORG ?? (await secretKey(kubectl, operatorNs, 'svc-operator-conf', 'SVC_ORG')) ?? 'e2e';

  const suffix = randomBytes(3).toString('hex');
  const names = new Map<string, string>();
  for (const name of opts.namespaces)
    names.set(name, `svc-e2e-${opts.name}-${name}`.slice(0, 55) + `-${suffix}`);
  const ns = (name: string): string => {
    const real = names.get(name);
    if (real === undefined)
      throw new Error(`namespace ${name} is not one of the suite's (${opts.namespaces.join(', ')})`);
    return real;
  };
  const forwards: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const p of forwards) p.kill();
    for (const real of names.values()) {
      await kubectl(['delete', 'namespace', real, '--wait=true', '--timeout=120s'], { allowFailure: true });
    }
  };

  try {
    for (const real of names.values()) {
      await kubectl(['create', 'namespace', real]);
      await kubectl(['label', 'namespace', real, 'svc.io/e2e=true']);
    }
    const home = ns(opts.namespaces[0] ?? '');

    const startUpstream = async (name: string): Promise<Upstream> => {
      await kubectl(['apply', '-n', home, '-f', '-'], {
        input: `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
        - name: echo
          image: ${nodeImage}
          command: [node, -e, ${JSON.stringify(ECHO_SCRIPT)}]
          env: [{name: ECHO_NAME, value: ${name}}]
          ports: [{name: http, containerPort: 8080}]
          readinessProbe: {tcpSocket: {port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec:
  selector: {app: ${name}}
  ports: [{name: http, port: 80, targetPort: http}]
`,
      });
      await kubectl(['rollout', 'status', '-n', home, `deployment/${name}`, '--timeout=180s']);
      return { name, url: `http://${name}.${home}.svc.cluster.local` };
    };

    // The gateway's port through kubectl port-forward of its Service.
    const local = await freePort();
    const pf = spawn(
      bin,
      ['port-forward', '-n', gatewayNs, 'svc/svc-gateway', `${String(local)}:8080`, '--address', '127.0.0.1'],
      { stdio: 'ignore' },
    );
    forwards.push(pf);
    const url = `http://127.0.0.1:${String(local)}`;
    await waitFor(`port-forward to ${gatewayNs}/svc-gateway:8080`, async () => {
      try {
        return (await httpRequest(`${url}/hello`)).status === 200;
      } catch {
        return false;
      }
    });
    const upstream = await startUpstream('echo');
    return {
      cluster: true,
      kubectl,
      gateway: { url, secret },
      org,
      ns,
      upstream,
      startUpstream,
      local: undefined,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
