/**
 * One switch for the operator suites. `startWorld()` gives a suite what it runs against, in the
 * same shape whichever way it was obtained: kubectl, the gateway (URL and management secret, as
 * the suite reaches it), a second gateway for OperatorContext tests, echo upstreams (URLs as the
 * gateway reaches them), namespaces of the suite's own, the operator's settings, ways to stop and
 * start the operator and the second gateway, and a cleanup.
 *
 * - Local (the default, `make e2e`): a private control plane with the CRDs, two gateway processes,
 *   echo upstreams on 127.0.0.1 and the operator as a process; `world.local` gives the fault tests
 *   the processes themselves.
 * - Cluster (`SVC_E2E_CLUSTER=1`, `make e2e-cluster`, the node suite
 *   e2e/node/cluster-suites.node.ts): the cluster KUBECONFIG points at, with the operator, webhooks
 *   and gateways installed by charts/svc-operator and charts/svc-gateway. Nothing is started
 *   locally: the gateways are reached through `kubectl port-forward` of their Services, the
 *   upstreams are echo Deployments and Services in the suite's namespace, the namespaces are named
 *   `svc-e2e-<suite>-<name>-<random>` and deleted by `stop()`. The suite's operator settings
 *   (WATCH_NAMESPACE with the real names, SVC_RESYNC_PERIOD, ...) are written into the operator's
 *   Secret svc-operator-conf and the operator's pods restarted; `stop()` puts the Secret back as it
 *   was and restarts them again. The second gateway is a second svc-gateway release in its own
 *   namespace; stopping it scales its Deployment to 0. Stopping the operator holds its leader
 *   Lease for the suite and deletes its pod: the replacement pod stands by (its webhooks serve)
 *   until `startOperator()` frees the Lease. `world.local` is undefined.
 *   Settings: E2E_GATEWAY_NAMESPACE (svc-gateway), E2E_GATEWAY_SECRET (read from the Secret
 *   svc-gateway-secret otherwise), E2E_GATEWAY2_NAMESPACE (svc-gateway-2, the second release;
 *   its secret from its svc-gateway-secret), E2E_OPERATOR_NAMESPACE (svc-operator-system),
 *   E2E_ORG (the operator's SVC_ORG from its Secret svc-operator-conf otherwise), E2E_NODE_IMAGE
 *   (the image the echo upstreams run in; node:24-alpine), KUBECTL (kubectl).
 *
 * The cluster mode runs on the node of `make node` (`make e2e-node`) and in
 * .github/workflows/e2e-kind.yaml (docs/e2e-cluster.md).
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

/** A gateway an OperatorContext points at. */
export interface ContextGateway extends GatewayEndpoint {
  /**
   * The URL the operator reaches it at: an OperatorContext's `spec.env.url`, a resource's
   * `status.pushedTo.url` (the same as `url` locally; its Service's address in the cluster).
   */
  operatorUrl: string;
}

export interface World {
  /** True in cluster mode (`SVC_E2E_CLUSTER=1`). */
  readonly cluster: boolean;
  kubectl: Kubectl;
  gateway: GatewayEndpoint;
  /**
   * The second gateway, for OperatorContext tests (a process locally, a second svc-gateway
   * release in the cluster). After {@link startSecondGateway} ask again: its `url` may change.
   */
  secondGateway(): Promise<ContextGateway>;
  /** Stops the second gateway (its process; in the cluster its Deployment scaled to 0). */
  stopSecondGateway(): Promise<void>;
  /** Starts the second gateway again at the same `operatorUrl` with the same secret. */
  startSecondGateway(): Promise<ContextGateway>;
  /**
   * Stops the operator: nothing reconciles until {@link startOperator}. Locally the process
   * ends; in the cluster the suite holds the leader Lease and the operator's pod is deleted (its
   * replacement stands by, its webhooks keep answering).
   */
  stopOperator(): Promise<void>;
  /** Starts the operator again (in the cluster: frees the Lease; the standing-by pod leads). */
  startOperator(): Promise<void>;
  /** The operator's Prometheus metrics (its `/metrics` text). */
  operatorMetrics(): Promise<string>;
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
  /**
   * The operator's settings. Local: its environment. Cluster: written into the Secret
   * svc-operator-conf (WATCH_NAMESPACE's names of the suite's namespaces replaced by their real
   * names) and the operator's pods restarted; the chart's own settings (LOG_LEVEL, ...) win over
   * the Secret's.
   */
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
  const second = (): ContextGateway => ({
    url: local.gw2.url,
    secret: local.gw2.secret,
    operatorUrl: local.gw2.url,
  });
  let restarts = 0;
  return {
    cluster: false,
    kubectl: (args, kopts) => cp.kubectl(args, kopts),
    gateway: gw,
    secondGateway: () => Promise.resolve(second()),
    async stopSecondGateway() {
      await local.gw2.stop();
    },
    async startSecondGateway() {
      restarts++;
      local.gw2 = await startGateway({
        name: `${opts.name}-gateway-2-${String(restarts + 1)}`,
        secret: secret2,
        dataDir: join(dir, 'gw2'),
        logDir: dir,
        port: local.gw2.port,
      });
      return second();
    },
    stopOperator: () => local.stopOperator(),
    async startOperator() {
      await local.startOperator();
    },
    async operatorMetrics() {
      const op = local.operator;
      if (op === undefined) throw new Error('the operator is stopped');
      return (await httpRequest(`${op.opsUrl}/metrics`)).body;
    },
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

/** `kubectl port-forward` of a Service's port to a free local port; resolves once `/hello` answers. */
async function portForward(
  bin: string,
  ns: string,
  service: string,
  port: number,
): Promise<{ url: string; process: ChildProcess }> {
  const local = await freePort();
  const pf = spawn(
    bin,
    [
      'port-forward',
      '-n',
      ns,
      `svc/${service}`,
      `${String(local)}:${String(port)}`,
      '--address',
      '127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${String(local)}`;
  try {
    await waitFor(
      `port-forward to ${ns}/${service}:${String(port)}`,
      async () => {
        if (pf.exitCode !== null) throw new Error(`kubectl port-forward exited with ${String(pf.exitCode)}`);
        try {
          return (await httpRequest(`${url}/hello`)).status === 200;
        } catch {
          return false;
        }
      },
      60_000,
      200,
    );
  } catch (err) {
    pf.kill();
    throw err;
  }
  return { url, process: pf };
}

/** A MicroTime (six fractional digits) as the API server wants it in a Lease. */
const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** The operator's leader Lease (operator/main.ts) and its Deployment and pods (charts/svc-operator). */
const OPERATOR_LEASE = 'svc-operator-leader';
const OPERATOR_DEPLOYMENT = 'svc-operator-controller-manager';
const OPERATOR_PODS = 'app.kubernetes.io/name=svc-operator,control-plane=controller-manager';
/** The holder the suite writes into the Lease while the operator is stopped. */
const SUITE_HOLDER = 'svc-e2e-suite';

async function startClusterWorld(opts: WorldOptions): Promise<World> {
  const env = environment();
  if (env.KUBECONFIG === undefined || env.KUBECONFIG === '') {
    throw new Error('SVC_E2E_CLUSTER=1 runs against the cluster KUBECONFIG points at: set KUBECONFIG');
  }
  const bin = env.KUBECTL ?? 'kubectl';
  const kubectl = clusterKubectl(bin);
  const gatewayNs = env.E2E_GATEWAY_NAMESPACE ?? 'svc-gateway';
  const gateway2Ns = env.E2E_GATEWAY2_NAMESPACE ?? 'svc-gateway-2';
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

  /** The operator's pods replaced (rollout restart), the new ones Ready and their webhooks answering. */
  const restartOperatorPods = async (): Promise<void> => {
    await kubectl(['rollout', 'restart', '-n', operatorNs, `deployment/${OPERATOR_DEPLOYMENT}`]);
    await operatorPodsReady();
  };
  const operatorPodsReady = async (): Promise<void> => {
    await kubectl([
      'rollout',
      'status',
      '-n',
      operatorNs,
      `deployment/${OPERATOR_DEPLOYMENT}`,
      '--timeout=300s',
    ]);
    // The webhooks answer the API server through their Service once its endpoints follow the new
    // pod: a server-side dry run of an ApiDefinition (which they check) says when.
    const probe = `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: svc-e2e-webhook-probe, namespace: ${names.values().next().value ?? 'default'}}
spec: {name: probe, use_keyless: true, proxy: {listen_path: /svc-e2e-webhook-probe/, target_url: "http://probe.invalid"}}
`;
    await waitFor(
      'the webhooks answering through their Service',
      async () =>
        (await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: probe, allowFailure: true }))
          .code === 0,
      120_000,
      500,
    );
  };

  // The suite's operator settings, in the operator's Secret; the original data put back by stop().
  let originalConf: Record<string, string> | undefined;
  const confEntries = Object.entries(opts.operatorEnv ?? {}).map(([k, v]): [string, string] =>
    k === 'WATCH_NAMESPACE'
      ? [
          k,
          v
            .split(',')
            .map((n) => names.get(n.trim()) ?? n.trim())
            .join(','),
        ]
      : [k, v],
  );

  const forwards: ChildProcess[] = [];
  let operatorStopped = false;
  let gateway2Stopped = false;
  let gateway2: { endpoint: ContextGateway; process: ChildProcess } | undefined;
  const gateway2Url = `http://svc-gateway.${gateway2Ns}.svc:8080`;

  const startOperator = async (): Promise<void> => {
    await kubectl(['delete', 'lease', OPERATOR_LEASE, '-n', operatorNs, '--ignore-not-found']);
    operatorStopped = false;
    await waitFor(
      'a replica of the operator leading',
      async () => {
        const r = await kubectl(
          ['get', 'lease', OPERATOR_LEASE, '-n', operatorNs, '-o', 'jsonpath={.spec.holderIdentity}'],
          { allowFailure: true },
        );
        return r.code === 0 && r.stdout !== '' && r.stdout !== SUITE_HOLDER;
      },
      60_000,
      500,
    );
  };
  const scaleGateway2 = async (replicas: number): Promise<void> => {
    await kubectl(['scale', '-n', gateway2Ns, 'deployment/svc-gateway', `--replicas=${String(replicas)}`]);
  };

  const stop = async (): Promise<void> => {
    for (const p of forwards) p.kill();
    gateway2?.process.kill();
    if (operatorStopped) await startOperator().catch(() => undefined);
    if (gateway2Stopped) {
      await scaleGateway2(1).catch(() => undefined);
      await kubectl(['rollout', 'status', '-n', gateway2Ns, 'deployment/svc-gateway', '--timeout=180s'], {
        allowFailure: true,
      });
    }
    // The Secret back first: the restarted pods' webhooks are probed in the suite's namespace.
    if (originalConf !== undefined) {
      const back = JSON.stringify([{ op: 'replace', path: '/data', value: originalConf }]);
      await kubectl(['patch', 'secret', 'svc-operator-conf', '-n', operatorNs, '--type=json', '-p', back]);
      await restartOperatorPods();
    }
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

    if (confEntries.length > 0) {
      const conf = await kubectl(['get', 'secret', 'svc-operator-conf', '-n', operatorNs, '-o', 'json']);
      originalConf = (JSON.parse(conf.stdout) as { data?: Record<string, string> }).data ?? {};
      const settings = JSON.stringify({ stringData: Object.fromEntries(confEntries) });
      await kubectl([
        'patch',
        'secret',
        'svc-operator-conf',
        '-n',
        operatorNs,
        '--type=merge',
        '-p',
        settings,
      ]);
      await restartOperatorPods();
    }

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
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
        - name: echo
          image: ${nodeImage}
          imagePullPolicy: IfNotPresent
          command: [node, -e, ${JSON.stringify(ECHO_SCRIPT)}]
          env: [{name: ECHO_NAME, value: ${name}}]
          ports: [{name: http, containerPort: 8080}]
          readinessProbe: {tcpSocket: {port: http}, periodSeconds: 1}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
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
    const first = await portForward(bin, gatewayNs, 'svc-gateway', 8080);
    forwards.push(first.process);
    const upstream = await startUpstream('echo');

    const secondGateway = async (): Promise<ContextGateway> => {
      if (gateway2Stopped) throw new Error('the second gateway is stopped');
      if (gateway2?.process.exitCode !== null) {
        const secret2 = await secretKey(kubectl, gateway2Ns, 'svc-gateway-secret', 'secret');
        if (secret2 === undefined) {
          throw new Error(
            `no second gateway: install a second svc-gateway release in ${gateway2Ns} (E2E_GATEWAY2_NAMESPACE) with its Secret svc-gateway-secret`,
          );
        }
        const pf = await portForward(bin, gateway2Ns, 'svc-gateway', 8080);
        gateway2 = {
          endpoint: { url: pf.url, secret: secret2, operatorUrl: gateway2Url },
          process: pf.process,
        };
      }
      return gateway2.endpoint;
    };

    return {
      cluster: true,
      kubectl,
      gateway: { url: first.url, secret },
      secondGateway,
      async stopSecondGateway() {
        gateway2?.process.kill();
        gateway2 = undefined;
        gateway2Stopped = true;
        await scaleGateway2(0);
        await kubectl([
          'wait',
          '--for=delete',
          'pod',
          '-n',
          gateway2Ns,
          '-l',
          'app.kubernetes.io/name=svc-gateway',
          '--timeout=120s',
        ]);
      },
      async startSecondGateway() {
        await scaleGateway2(1);
        await kubectl(['rollout', 'status', '-n', gateway2Ns, 'deployment/svc-gateway', '--timeout=180s']);
        gateway2Stopped = false;
        return secondGateway();
      },
      async stopOperator() {
        // Held by the suite, the Lease lets no replica lead; then the leader's pod goes.
        const now = microTime(new Date());
        await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=svc-e2e', '-f', '-'], {
          input: JSON.stringify({
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: OPERATOR_LEASE, namespace: operatorNs },
            spec: {
              holderIdentity: SUITE_HOLDER,
              leaseDurationSeconds: 3600,
              acquireTime: now,
              renewTime: now,
            },
          }),
        });
        operatorStopped = true;
        await kubectl([
          'delete',
          'pod',
          '-n',
          operatorNs,
          '-l',
          OPERATOR_PODS,
          '--wait=true',
          '--timeout=120s',
        ]);
        await operatorPodsReady();
      },
      startOperator,
      async operatorMetrics() {
        const r = await kubectl([
          'get',
          '--raw',
          `/api/v1/namespaces/${operatorNs}/services/http:${OPERATOR_DEPLOYMENT}-metrics-service:8081/proxy/metrics`,
        ]);
        return r.stdout;
      },
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
