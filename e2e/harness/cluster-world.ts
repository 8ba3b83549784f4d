/**
 * The cluster world of the operator suites (`SVC_E2E_CLUSTER=1`, world.ts): the cluster
 * KUBECONFIG points at, with the operator, webhooks and gateways installed by the charts. The
 * gateways through `kubectl port-forward`, echo Deployments as upstreams, the suite's namespaces
 * and operator settings (the Secret svc-operator-conf, the pods restarted), the operator stopped
 * by holding its leader Lease, the second gateway by scaling its Deployment; `stop()` puts back
 * what it changed. world.ts's comment lists the settings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { environment } from '../../lib/config.ts';
import { nodeServiceManifest } from './node-service.ts';
import { freePort, httpRequest, waitFor } from './processes.ts';
import type { ContextGateway, Kubectl, Upstream, World, WorldOptions } from './world-types.ts';

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

/** Starts a cluster world for the suite `opts` describes. */
export async function startClusterWorld(opts: WorldOptions): Promise<World> {
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
        input: nodeServiceManifest({
          name,
          container: 'echo',
          image: nodeImage,
          script: ECHO_SCRIPT,
          env: { ECHO_NAME: name },
          containerPort: 8080,
          servicePort: 80,
        }),
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
