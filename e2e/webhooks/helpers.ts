/**
 * What the webhook and chart suites share: helm (built by tools/), the chart rendered with given
 * values, the chart's webhook configurations pointed at a local server, and the webhook server
 * as a process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { createCa, issueServingCert } from '../../lib/x509.ts';
import { startControlPlane, toolsDir } from '../harness/control-plane.ts';
import type { ControlPlane, KubectlResult } from '../harness/control-plane.ts';
import { freePort, httpRequest, startNode, waitFor } from '../harness/processes.ts';
import type { Proc } from '../harness/processes.ts';
import { startedOrStopped } from '../../lib/testing/teardown.ts';

/** The repository root. */
export const root = path.join(import.meta.dirname, '..', '..');
/** The chart under test. */
export const chartDir = path.join(root, 'charts', 'svc-operator');
/** The release namespace the docs use. */
export const NAMESPACE = 'svc-operator-system';

type Manifest = Record<string, unknown>;

/** The path of a binary tools/build.sh made. */
export function tool(name: 'helm'): string {
  const file = path.join(toolsDir(), name);
  if (!existsSync(file)) throw new Error(`${file} not found: run \`make deps\` (tools/build.sh)`);
  return file;
}

/** Runs a binary; resolves with its exit code and output. */
export function run(bin: string, args: readonly string[], input?: string): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    proc.on('error', reject);
    proc.on('close', (code) => {
      resolve({ code: code ?? 1, stdout, stderr });
    });
    proc.stdin.on('error', () => undefined);
    proc.stdin.end(input ?? '');
  });
}

/** `helm args...`; rejects on failure with helm's message. */
export async function helm(args: readonly string[]): Promise<string> {
  const r = await run(tool('helm'), args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} exited with ${r.code}:\n${r.stderr}`);
  return r.stdout;
}

/** `helm template` of the chart with `--set`-style values; the rendered objects. */
export async function renderChart(set: readonly string[] = [], namespace = NAMESPACE): Promise<Manifest[]> {
  const out = await helm([
    'template',
    'svc-operator',
    chartDir,
    '--namespace',
    namespace,
    ...set.flatMap((s) => ['--set', s]),
  ]);
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

/** Objects of one kind (and name) in a rendered chart. */
export function pick(objects: readonly Manifest[], kind: string, name?: string): Manifest[] {
  return objects.filter(
    (o) => o.kind === kind && (name === undefined || (o.metadata as { name?: string }).name === name),
  );
}

/** Multi-document YAML of objects, for kubectl apply. */
export function toYaml(objects: readonly Manifest[]): string {
  // kubectl reads YAML 1.1, where an unquoted on, off, yes or no is a boolean (a trigger's "on"
  // key would arrive as true): written as 1.1, such strings are quoted.
  return objects.map((o) => stringify(o, { version: '1.1' })).join('---\n');
}

/**
 * The chart's two webhook configurations, calling `https://127.0.0.1:<port><path>` instead of the
 * in-cluster Service: the rules, paths and policies under test are the chart's own.
 */
export async function localWebhookConfigurations(
  port: number,
  caBundle?: string,
  set: readonly string[] = [],
): Promise<Manifest[]> {
  const objects = await renderChart(set);
  const configs = [
    ...pick(objects, 'MutatingWebhookConfiguration'),
    ...pick(objects, 'ValidatingWebhookConfiguration'),
  ];
  for (const cfg of configs) {
    for (const w of cfg.webhooks as { clientConfig: Record<string, unknown> }[]) {
      const service = w.clientConfig.service as { path: string };
      w.clientConfig = {
        url: `https://127.0.0.1:${port}${service.path}`,
        ...(caBundle === undefined ? {} : { caBundle: Buffer.from(caBundle).toString('base64') }),
      };
    }
  }
  return configs;
}

/** A running webhook server. */
export interface WebhookServer {
  proc: Proc;
  port: number;
  healthPort: number;
  stop: () => Promise<void>;
}

/** Starts `node webhooks/main.ts` on free loopback ports and waits until /readyz answers 200. */
export async function startWebhookServer(opts: {
  name: string;
  kubeconfig: string;
  logDir: string;
  args: readonly string[];
  /** HTTPS port; a free one when omitted. */
  port?: number;
  /** Log level; debug when omitted (benchmarks run it as the chart does, at info). */
  logLevel?: string;
  /** Environment added to the process's (NODE_OPTIONS for a CPU profile). */
  env?: Record<string, string>;
}): Promise<WebhookServer> {
  const port = opts.port ?? (await freePort());
  const healthPort = await freePort();
  const proc = startNode({
    name: opts.name,
    script: 'webhooks/main.ts',
    args: [
      `--kubeconfig=${opts.kubeconfig}`,
      '--address=127.0.0.1',
      `--port=${port}`,
      `--health-port=${healthPort}`,
      `--log-level=${opts.logLevel ?? 'debug'}`,
      // No Service sends it reviews here: nothing to wait for on SIGTERM (webhooks.md, Stopping).
      '--shutdown-delay-seconds=0',
      ...opts.args,
    ],
    logDir: opts.logDir,
    ...(opts.env === undefined ? {} : { env: opts.env }),
  });
  await waitFor(
    `${opts.name} /readyz (log ${proc.logFile})`,
    async () => {
      const exited = await Promise.race([proc.exited.then(() => true), Promise.resolve(false)]);
      if (exited) throw new Error(`${opts.name} exited:\n${proc.log()}`);
      const r = await httpRequest(`http://127.0.0.1:${healthPort}/readyz`);
      return r.status === 200;
    },
    60_000,
  );
  return { proc, port, healthPort, stop: () => proc.stop() };
}

/** GET over HTTPS trusting only `ca`. */
export function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
      })
      .on('error', reject);
  });
}

/** `kubectl apply -f -` of objects, never rejecting: the suites look at the refusals. */
export function apply(
  cp: ControlPlane,
  objects: Manifest | readonly Manifest[],
  extra: string[] = [],
): Promise<KubectlResult> {
  const list = Array.isArray(objects) ? (objects as Manifest[]) : [objects as Manifest];
  return cp.kubectl(['apply', ...extra, '-f', '-'], { input: toYaml(list), allowFailure: true });
}

/** The stored object, as JSON. */
export async function getObject(
  cp: ControlPlane,
  resource: string,
  name: string,
  namespace = 'default',
): Promise<Manifest> {
  const r = await cp.kubectl(['get', resource, name, '-n', namespace, '-o', 'json']);
  return JSON.parse(r.stdout) as Manifest;
}

/**
 * The webhook server with a certificate from a fresh CA, and the chart's webhook configurations
 * pointed at it: the API server calls it from then on. Resolves once the configurations are in
 * effect (the API server loads them asynchronously), shown by a refusal only the webhooks give.
 * `operatorNamespaces`: an operator runs beside it watching these (its WATCH_NAMESPACE; '' is
 * all), so the server adds its finalizer there, as in the chart; absent, no operator removes
 * one, so none is added.
 */
export async function startLocalWebhooks(
  cp: ControlPlane,
  dir: string,
  name = 'webhooks',
  opts: { operatorNamespaces?: string; logLevel?: string; env?: Record<string, string> } = {},
): Promise<WebhookServer & { caPem: string }> {
  const ca = await createCa({ commonName: 'svc e2e webhook CA', validityDays: 1 });
  const serving = await issueServingCert(ca, {
    commonName: '127.0.0.1',
    ipAddresses: ['127.0.0.1'],
    validityDays: 1,
  });
  const certDir = path.join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  await writeFile(path.join(certDir, 'tls.crt'), serving.certPem);
  await writeFile(path.join(certDir, 'tls.key'), serving.keyPem);
  const server = await startWebhookServer({
    name,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    ...(opts.logLevel === undefined ? {} : { logLevel: opts.logLevel }),
    ...(opts.env === undefined ? {} : { env: opts.env }),
    args: [
      '--cert-mode=files',
      `--cert-dir=${certDir}`,
      ...(opts.operatorNamespaces === undefined
        ? ['--finalizers=false']
        : opts.operatorNamespaces === ''
          ? []
          : [`--watch-namespace=${opts.operatorNamespaces}`]),
    ],
  });
  // A server whose configurations fail is not left running (its process would outlive the test).
  return startedOrStopped(async (started) => {
    started.push(server);
    const configs = await apply(cp, await localWebhookConfigurations(server.port, ca.certPem));
    if (configs.code !== 0) throw new Error(`webhook configurations not applied: ${configs.stderr}`);
    const probe = {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'ApiDefinition',
      metadata: { name: 'probe', namespace: 'default' },
      spec: {
        name: 'probe',
        use_keyless: true,
        allowed_ips: ['*'],
        proxy: { listen_path: '/probe/', target_url: 'http://u' },
      },
    };
    await waitFor('the webhooks to be called', async () => {
      const r = await apply(cp, probe, ['--dry-run=server']);
      return r.code !== 0 && r.stderr.includes('wildcards are not supported');
    });
    return { ...server, caPem: ca.certPem };
  });
}

/** kubectl refused the write, saying each of `parts`. */
export function refusedWith(r: KubectlResult, ...parts: string[]): void {
  assert.notEqual(r.code, 0, `expected a refusal, kubectl said:\n${r.stdout}${r.stderr}`);
  for (const p of parts) assert.ok(r.stderr.includes(p), `expected ${JSON.stringify(p)} in:\n${r.stderr}`);
}

/** kubectl's write was admitted. */
export function admitted(r: KubectlResult): void {
  assert.equal(r.code, 0, `expected success, kubectl said:\n${r.stderr}`);
}

/** A control plane with the chart's CRDs and the local webhooks in effect. */
export interface WebhooksSuite {
  cp: ControlPlane;
  server: WebhookServer & { caPem: string };
  stop(): Promise<void>;
}

/**
 * Starts what a suite of admission checks runs against: a control plane with the chart's CRDs
 * and the webhook server the API server calls (startLocalWebhooks; its /readyz asserted 200 over
 * HTTPS), logs in a fresh temporary folder named after `name`.
 */
export async function startWebhooksSuite(name: string): Promise<WebhooksSuite> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `svc-${name}-`));
  const cp = await startControlPlane({ crdDir: path.join(chartDir, 'crds') });
  let server: WebhookServer & { caPem: string };
  try {
    server = await startLocalWebhooks(cp, dir);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  assert.equal((await httpsGet(`https://127.0.0.1:${server.port}/readyz`, server.caPem)).status, 200);
  return {
    cp,
    server,
    stop: async () => {
      await server.stop();
      await cp.stop();
    },
  };
}
