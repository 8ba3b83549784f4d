/**
 * `make demo`: the main job end to end. A control plane (local, or the cluster KUBECONFIG points
 * at), a gateway with the embedded store, a small upstream and the operator; `examples/` is
 * applied, a request goes through the gateway, and the resources' status is shown. Runs until
 * Ctrl-C, then stops everything.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { environment } from '../../lib/config.ts';
import { startControlPlane, toolPath, type KubectlOptions, type KubectlResult } from './control-plane.ts';
import { httpRequest, startEchoUpstream, startGateway, startOperator, waitFor } from './processes.ts';

const root = join(import.meta.dirname, '..', '..');
const crdDir = join(root, 'charts', 'svc-operator', 'crds');
const say = (text: string): void => {
  console.log(`\n\x1b[1m== ${text}\x1b[0m`);
};

const dir = await mkdtemp(join(tmpdir(), 'svc-demo-'));
const cleanups: (() => Promise<void>)[] = [];
let stopping = false;
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
  process.exit(code);
}
process.once('SIGINT', () => void stop(0));
process.once('SIGTERM', () => void stop(0));

try {
  // A cluster: the one KUBECONFIG points at when it answers, else a local control plane.
  const external = environment().KUBECONFIG;
  let kubeconfig: string;
  let kubectl: (args: string[], opts?: KubectlOptions) => Promise<KubectlResult>;
  if (external && existsSync(external) && reachable(external)) {
    say(`using the cluster of KUBECONFIG=${external}`);
    kubeconfig = external;
    kubectl = (args, opts) => run([`--kubeconfig=${external}`, ...args], opts);
    await kubectl(['apply', '--server-side', '-f', crdDir]);
    await kubectl(['wait', '--for', 'condition=Established', 'crd', '-l', 'app.kubernetes.io/part-of=svc']);
  } else {
    say('starting a local control plane (etcd and kube-apiserver on loopback ports)');
    const cp = await startControlPlane({ crdDir });
    cleanups.push(() => cp.stop());
    kubeconfig = cp.kubeconfig;
    kubectl = (args, opts) => cp.kubectl(args, opts);
  }
  await kubectl(['create', 'namespace', 'svc-operator-system'], { allowFailure: true });

  say('starting an upstream, a gateway (embedded store) and the operator');
  const upstream = await startEchoUpstream('demo-upstream');
  cleanups.push(() => upstream.close());
  const secret = randomBytes(24).toString('base64url');
  const gw = await startGateway({ name: 'gateway', secret, dataDir: join(dir, 'gateway-data'), logDir: dir });
  cleanups.push(() => gw.stop());
  const operator = await startOperator({
    name: 'operator',
    gateway: gw,
    kubeconfig,
    logDir: dir,
    org: 'demo',
  });
  cleanups.push(() => operator.stop());
  console.log(`gateway   ${gw.url}   (logs: ${gw.logFile})`);
  console.log(`operator  ${operator.opsUrl}/metrics   (logs: ${operator.logFile})`);
  console.log(`upstream  ${upstream.url}`);

  say('applying examples/');
  // A local control plane has no cluster DNS: upstreams of the examples point at the demo upstream.
  const manifests: string[] = [];
  for (const file of (await readdir(join(root, 'examples'))).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(await readFile(join(root, 'examples', file), 'utf8'))) {
      const obj = doc.toJS() as { spec?: { proxy?: { target_url?: string } } };
      if (obj.spec?.proxy?.target_url) obj.spec.proxy.target_url = upstream.url;
      manifests.push(stringify(obj));
    }
  }
  const applied = await kubectl(['apply', '--server-side', '-f', '-'], { input: manifests.join('---\n') });
  console.log(applied.stdout.trimEnd());

  say('a request through the gateway: GET /httpbin/get?demo=1');
  const res = await waitFor('the httpbin example to serve', async () => {
    const r = await httpRequest(`${gw.url}/httpbin/get?demo=1`);
    return r.status === 200 ? r : undefined;
  });
  const echoed = JSON.parse(res.body) as {
    method: string;
    path: string;
    query: string;
    headers: Record<string, string>;
  };
  console.log(`$ curl ${gw.url}/httpbin/get?demo=1`);
  console.log(`HTTP ${res.status}; the upstream received ${echoed.method} ${echoed.path}${echoed.query}`);
  console.log(`  x-forwarded-for: ${echoed.headers['x-forwarded-for'] ?? ''}`);

  say('the resources and their status');
  console.log((await kubectl(['get', 'apidefinitions', '-A'])).stdout.trimEnd());
  const st = await kubectl(['get', 'apidefinition', 'httpbin', '-n', 'default', '-o', 'jsonpath={.status}']);
  console.log(`\nstatus of apidefinition/httpbin:\n${stringify(JSON.parse(st.stdout))}`);
  console.log((await kubectl(['get', 'svc-all', '-A'])).stdout.trimEnd());

  say('try it');
  console.log(`export KUBECONFIG=${kubeconfig}`);
  console.log(`alias kubectl=${toolPath('kubectl')}   # or your own kubectl`);
  console.log(`kubectl edit apidefinition httpbin      # change proxy.listen_path, then:`);
  console.log(`curl ${gw.url}/<new path>/anything`);
  console.log('\nPress Ctrl-C to stop everything.');
} catch (err) {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  await stop(1);
}

function reachable(kubeconfigPath: string): boolean {
  const r = spawnSync(toolPath('kubectl'), [`--kubeconfig=${kubeconfigPath}`, 'get', '--raw', '/readyz'], {
    timeout: 10_000,
    encoding: 'utf8',
  });
  return r.status === 0;
}

async function run(args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
  const r = spawnSync(toolPath('kubectl'), args, { input: opts.input, encoding: 'utf8', timeout: 60_000 });
  const result = { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
  if (result.code !== 0 && opts.allowFailure !== true) {
    throw new Error(`kubectl ${args.join(' ')} exited with ${result.code}: ${result.stderr}`);
  }
  return Promise.resolve(result);
}
