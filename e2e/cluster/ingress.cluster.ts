/**
 * `make e2e-cluster`: the ingress suite against the cluster `KUBECONFIG` points at, with the
 * operator and webhooks installed by charts/svc-operator and the gateway by charts/svc-gateway
 * from the images of images/ (as .github/workflows/e2e-kind.yaml does on a kind cluster). Each
 * test runs in a namespace of its own, deleted at the end. Requests reach the gateway through
 * `kubectl port-forward` of its Service. Not run by `make e2e`; run on the node by
 * e2e/node/cluster-suites.node.ts. Settings: E2E_GATEWAY_NAMESPACE (svc-gateway),
 * E2E_INGRESS_CLASS (svc), E2E_NODE_IMAGE (the image the echo backend runs `node -e` in;
 * node:24-alpine), KUBECTL.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { environment } from '../../lib/config.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { makeCert } from '../../gateway/testing/client-certs.ts';
import { nodeServiceManifest } from '../harness/node-service.ts';
import { httpRequest } from '../harness/processes.ts';

const env = environment();
const KUBECTL = env.KUBECTL ?? 'kubectl';
const GATEWAY_NS = env.E2E_GATEWAY_NAMESPACE ?? 'svc-gateway';
const CLASS = env.E2E_INGRESS_CLASS ?? 'svc';
/** The image the echo backend runs in (anything with `node`; the workflow and the node use the gateway's). */
const NODE_IMAGE = env.E2E_NODE_IMAGE ?? 'node:24-alpine';
/** The echo backend: answers `/hostname` with its pod's name. */
const ECHO_SCRIPT = `require('node:http').createServer((req, res) => {
  res.end(req.url === '/hostname' ? require('node:os').hostname() : 'ok');
}).listen(8080);
process.on('SIGTERM', () => process.exit(0));`;
const TIMEOUT = 180_000;

if (env.KUBECONFIG === undefined || env.KUBECONFIG === '') {
  throw new Error('make e2e-cluster runs against the cluster KUBECONFIG points at: set KUBECONFIG');
}

/** Runs kubectl; rejects with its stderr on a non-zero exit unless `allowFailure`. */
function kubectl(
  args: string[],
  opts: { input?: string; allowFailure?: boolean } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(KUBECTL, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0 && !opts.allowFailure) reject(new Error(`kubectl ${args.join(' ')}: ${stderr.trim()}`));
      else resolve({ code: code ?? 1, stdout, stderr });
    });
    p.stdin.end(opts.input);
  });
}

/**
 * `kubectl port-forward` of the gateway Service's `port` to a local port, once kubectl listens.
 * The chart's gateway keeps its HTTPS ingress port open from the start (`https_port`): kubectl
 * gives up on the first connection the pod refuses, so a port that opened only with the first
 * TLS Ingress lost this forward. The TLS test retries its requests until the Ingress is served.
 */
async function forward(port: number): Promise<{ local: number; stop: () => void }> {
  const local = await freePort();
  const p: ChildProcess = spawn(
    KUBECTL,
    ['port-forward', '-n', GATEWAY_NS, 'svc/svc-gateway', `${local}:${port}`, '--address', '127.0.0.1'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  await waitFor(
    `port-forward to svc-gateway:${port}`,
    () => {
      if (p.exitCode !== null) throw new Error(`kubectl port-forward exited with ${String(p.exitCode)}`);
      return out.includes('Forwarding from');
    },
    60_000,
    100,
  );
  return { local, stop: () => p.kill() };
}

let http: { local: number; stop: () => void };
let https: { local: number; stop: () => void };
/** The port-forwards started, stopped after the suite (also when the second did not start). */
const forwards: { stop: () => void }[] = [];

before(async () => {
  http = await forward(8080);
  forwards.push(http);
  https = await forward(8443);
  forwards.push(https);
});

after(() => {
  for (const f of forwards) f.stop();
});

/** A namespace of the test's own with the echo backend (Deployment and Service `echo`), deleted after. */
async function withNamespace(run: (ns: string) => Promise<void>): Promise<void> {
  const ns = `svc-e2e-${randomBytes(4).toString('hex')}`;
  await kubectl(['create', 'namespace', ns]);
  try {
    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: nodeServiceManifest({
        name: 'echo',
        container: 'echo',
        image: NODE_IMAGE,
        script: ECHO_SCRIPT,
        containerPort: 8080,
        servicePort: 80,
      }),
    });
    await kubectl(['rollout', 'status', '-n', ns, 'deployment/echo', `--timeout=${TIMEOUT / 1000}s`]);
    await run(ns);
  } finally {
    await kubectl(['delete', 'namespace', ns, '--wait=false'], { allowFailure: true });
  }
}

/** A GET through the gateway's HTTP port with a Host header. */
async function get(host: string, path: string): Promise<{ status: number; body: string }> {
  return httpRequest(`http://127.0.0.1:${http.local}${path}`, { headers: { host } });
}

test('an Ingress: its host and path reach the backend through the gateway; deleted, they no longer do', async () => {
  await withNamespace(async (ns) => {
    const host = `${ns}.e2e.example`;
    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: echo}
spec:
  ingressClassName: ${CLASS}
  rules:
    - host: ${host}
      http: {paths: [{path: /hostname, pathType: Prefix, backend: {service: {name: echo, port: {name: http}}}}]}
`,
    });
    await waitFor(
      'the backend answering through the gateway',
      async () => {
        const r = await get(host, '/hostname').catch(() => undefined);
        return r?.status === 200 && r.body.startsWith('echo-');
      },
      TIMEOUT,
    );
    await kubectl(['delete', 'ingress', 'echo', '-n', ns, '--wait=true']);
    await waitFor('the route gone', async () => (await get(host, '/hostname')).status === 404, TIMEOUT);
  });
});

test("TLS: the Secret's certificate served by SNI on the HTTPS ingress port", async () => {
  await withNamespace(async (ns) => {
    const host = `${ns}.tls.e2e.example`;
    const cert = await makeCert(host);
    const b64 = (t: string): string => Buffer.from(t).toString('base64');
    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: `apiVersion: v1
kind: Secret
metadata: {name: echo-tls}
type: kubernetes.io/tls
data: {tls.crt: ${b64(cert.cert)}, tls.key: ${b64(cert.key)}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: echo}
spec:
  ingressClassName: ${CLASS}
  tls: [{hosts: [${host}], secretName: echo-tls}]
  rules:
    - host: ${host}
      http: {paths: [{path: /hostname, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}
`,
    });
    await waitFor(
      'the certificate served for the host',
      () =>
        new Promise<boolean>((resolve) => {
          const req = httpsRequest(
            {
              host: '127.0.0.1',
              port: https.local,
              servername: host,
              path: '/hostname',
              headers: { host },
              rejectUnauthorized: false,
              agent: false,
            },
            (res) => {
              const fp = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
              res.resume();
              resolve(res.statusCode === 200 && fp.replaceAll(':', '').toLowerCase() === cert.fingerprint);
            },
          );
          req.on('error', () => {
            resolve(false);
          });
          req.end();
        }),
      TIMEOUT,
    );
    const ing = JSON.parse((await kubectl(['get', 'ingress', 'echo', '-n', ns, '-o', 'json'])).stdout) as {
      metadata: { annotations?: Record<string, string> };
    };
    assert.match(ing.metadata.annotations?.['svc.io/apis'] ?? '', /^echo-[0-9a-f]{12}=ingress-/);
  });
});
