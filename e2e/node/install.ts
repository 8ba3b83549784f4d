/**
 * The installs of svc-gateway and svc-operator that the node suites share: docs/install.md's
 * path with the charts of this repository and the images made here, and their uninstall.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { waitFor } from '../../lib/testing/wait.ts';
import {
  GATEWAY_NS,
  OPERATOR_NS,
  PULL_POLICY,
  RESTRICTED,
  apply,
  echoApiDefinition,
  helm,
  imageRef,
  imageValues,
  kubectl,
  repoRoot,
  waitForPodsReady,
} from './helpers.ts';

/** Options of {@link installGatewayAndOperator}. */
export interface InstallOptions {
  /** More `helm` arguments for svc-operator (`--set webhooks.certManager.enabled=true`). */
  operatorArgs?: string[];
  /** More `helm` arguments for svc-gateway. */
  gatewayArgs?: string[];
  /** SVC_ORG of the operator (default e2e-node). */
  org?: string;
}

/** What {@link installGatewayAndOperator} installed. */
export interface Installed {
  gatewayNs: string;
  operatorNs: string;
  /** The gateway's management secret (Secret svc-gateway-secret). */
  gatewaySecret: string;
  /** Seconds from `helm upgrade --install` to every pod Ready, per release. */
  readySeconds: { gateway: number; operator: number };
}

/**
 * docs/install.md's CRD step: the chart's CRDs applied, then Established. helm installs crds/
 * only when they are missing, and a node reused across runs may hold an older version of them.
 */
export async function applyChartCrds(): Promise<void> {
  await kubectl([
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    path.join(repoRoot, 'charts', 'svc-operator', 'crds'),
  ]);
  await kubectl([
    'wait',
    '--for=condition=Established',
    'crd',
    '-l',
    'app.kubernetes.io/part-of=svc',
    '--timeout=60s',
  ]);
}

/** `helm upgrade --install --wait` of svc-gateway in `ns` (the image made here, `args` added). */
export async function installGatewayRelease(ns: string, args: string[]): Promise<void> {
  await helm([
    'upgrade',
    '--install',
    'svc-gateway',
    path.join(repoRoot, 'charts', 'svc-gateway'),
    '-n',
    ns,
    ...(await imageValues('gateway')),
    ...args,
    '--wait',
    '--timeout=5m',
  ]);
}

/**
 * Redis in a pod and `helm upgrade --install` of svc-gateway (store in that Redis, management
 * secret `secret` in the Secret svc-gateway-secret, `gatewayArgs` added), restarted when it was
 * already running (a changed secret reaches it only so), every pod Ready. Resolves with the
 * seconds from `helm upgrade --install` to Ready.
 */
export async function installGateway(secret: string, gatewayArgs: string[] = []): Promise<number> {
  const redis = await imageRef('redis');
  await apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: GATEWAY_NS } }]);
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-gateway-secret', namespace: GATEWAY_NS },
      stringData: { secret },
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
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            containers: [
              {
                name: 'redis',
                image: redis,
                imagePullPolicy: PULL_POLICY,
                ports: [{ containerPort: 6379 }],
                readinessProbe: { tcpSocket: { port: 6379 }, periodSeconds: 1 },
                securityContext: RESTRICTED,
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
  ]);
  await kubectl(['-n', GATEWAY_NS, 'rollout', 'status', 'deploy/redis', '--timeout=180s']);
  // A changed secret reaches a gateway already running only through a restart.
  const restart = await kubectl([
    '-n',
    GATEWAY_NS,
    'get',
    'deploy',
    'svc-gateway',
    '--ignore-not-found',
    '-o',
    'name',
  ]);
  const started = Date.now();
  await installGatewayRelease(GATEWAY_NS, [
    '--set',
    'extraEnv[0].name=SVC_GW_STORE',
    '--set',
    `extraEnv[0].value=redis://redis.${GATEWAY_NS}.svc:6379`,
    ...gatewayArgs,
  ]);
  if (restart.trim() !== '') {
    await kubectl(['-n', GATEWAY_NS, 'rollout', 'restart', 'deploy/svc-gateway']);
    await kubectl(['-n', GATEWAY_NS, 'rollout', 'status', 'deploy/svc-gateway', '--timeout=180s']);
  }
  await waitForPodsReady(GATEWAY_NS);
  return (Date.now() - started) / 1000;
}

/**
 * The Secret svc-operator-conf (the operator's settings, docs/install.md), in its namespace.
 * Written whole: `kubectl apply` keeps keys it did not write, and a cluster suite interrupted
 * before its stop() leaves its own in the Secret (e2e/harness/world.ts's WATCH_NAMESPACE: the next
 * operator then watched only that suite's namespaces and served no other Ingress).
 */
export async function writeOperatorConf(conf: Record<string, string>): Promise<void> {
  await apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: OPERATOR_NS } }]);
  await kubectl(['delete', 'secret', 'svc-operator-conf', '-n', OPERATOR_NS, '--ignore-not-found']);
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-operator-conf', namespace: OPERATOR_NS },
      stringData: conf,
    },
  ]);
}

/**
 * `helm upgrade --install` of svc-operator (the images made here, `operatorArgs` added), every pod
 * Ready. Resolves with the seconds from the command to Ready.
 */
export async function installOperatorRelease(operatorArgs: string[] = []): Promise<number> {
  const started = Date.now();
  await helm([
    'upgrade',
    '--install',
    'svc-operator',
    path.join(repoRoot, 'charts', 'svc-operator'),
    '-n',
    OPERATOR_NS,
    ...(await imageValues('operator')),
    ...operatorArgs,
    '--wait',
    '--timeout=5m',
  ]);
  await waitForPodsReady(OPERATOR_NS);
  await waitForWebhooks();
  return (Date.now() - started) / 1000;
}

/**
 * Waits (`timeoutMs`, 2 minutes unless given) until the API server reaches the webhooks through
 * their Service: a server-side dry run of an ApiDefinition in `ns` is admitted. A pod Ready is not
 * yet an endpoint kube-proxy routes to: until its EndpointSlice reaches kube-proxy, a call to the
 * Service is refused (a run applied an ApiDefinition a second after the pod was Ready and got
 * `failed calling webhook ... connect: connection refused`; on this machine a ClusterIP without
 * rules once went to the host's outbound proxy), and a certificate cert-manager's CA injector has
 * not put in the caBundle yet fails the call too. Any other refusal fails at once.
 */
export async function waitForWebhooks(opts: { ns?: string; timeoutMs?: number } = {}): Promise<void> {
  const ns = opts.ns ?? OPERATOR_NS;
  const probe = echoApiDefinition({
    name: 'svc-e2e-webhook-probe',
    ns,
    listenPath: '/svc-e2e-webhook-probe/',
  });
  let last = '';
  await waitFor(
    'the webhooks answering the API server through their Service',
    async () => {
      try {
        await kubectl(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(probe));
        return true;
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
        if (/failed calling webhook|no endpoints available|connection refused/.test(last)) return false;
        throw err;
      }
    },
    opts.timeoutMs ?? 120_000,
    1000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}: ${last}`, { cause: err });
  });
}

/**
 * docs/install.md's path: svc-gateway in front of Redis ({@link installGateway}), the Secret
 * svc-operator-conf pointing the operator at it, the chart's CRDs, then `helm upgrade --install`
 * of svc-operator, every pod Ready. Hold `OPERATOR_LOCK` (the command does) and call
 * {@link uninstallOperator} after.
 */
export async function installGatewayAndOperator(opts: InstallOptions = {}): Promise<Installed> {
  const gatewaySecret = randomBytes(16).toString('hex');
  await writeOperatorConf({
    SVC_MODE: 'ce',
    SVC_URL: `http://svc-gateway.${GATEWAY_NS}.svc:8080`,
    SVC_AUTH: gatewaySecret,
    SVC_ORG: opts.org ?? 'e2e-node',
  });
  const gateway = await installGateway(gatewaySecret, opts.gatewayArgs);
  await applyChartCrds();
  const operator = await installOperatorRelease(opts.operatorArgs);
  process.stderr.write(
    `helm install to Ready: svc-gateway ${gateway.toFixed(1)}s, svc-operator ${operator.toFixed(1)}s\n`,
  );
  return {
    gatewayNs: GATEWAY_NS,
    operatorNs: OPERATOR_NS,
    gatewaySecret,
    readySeconds: { gateway, operator },
  };
}

/**
 * `helm uninstall` of svc-operator (and of svc-gateway with `gateway: true`), waiting until their
 * pods are gone, so the next holder of the lock starts clean. The CRDs stay (helm keeps them).
 */
export async function uninstallOperator(opts: { gateway?: boolean } = {}): Promise<void> {
  await helm([
    'uninstall',
    'svc-operator',
    '-n',
    OPERATOR_NS,
    '--ignore-not-found',
    '--wait',
    '--timeout=3m',
  ]);
  if (opts.gateway === true) {
    await helm([
      'uninstall',
      'svc-gateway',
      '-n',
      GATEWAY_NS,
      '--ignore-not-found',
      '--wait',
      '--timeout=3m',
    ]);
    await kubectl(['-n', GATEWAY_NS, 'delete', 'deploy,service', 'redis', '--ignore-not-found']);
  }
}
