/**
 * `make demo`: the whole product end to end. A control plane (local, or the cluster KUBECONFIG
 * points at), the admission webhooks registered with it as the chart does (local control plane
 * only), a gateway with the embedded store, a small upstream and the operator; `examples/` is
 * applied (the policy's rate lowered in the demo's copy), every resource waited on until Ready,
 * requests go through the gateway (an open API; a streams API; a GraphQL API, a valid query and an
 * invalid one; the protected one without a key, with a key made through the management API, and
 * past the policy's rate), and the resources' status is shown.
 * Runs until Ctrl-C, then stops everything.
 *
 * `--mode=pro` (`make demo MODE=pro`): a dashboard (SQLite under the demo's temporary directory)
 * with an organisation, a system user for the operator and a human user (read-only); the operator
 * in mode pro (a license key signed at start with a demo key pair, whose public key it checks) and
 * a gateway in mode pro loading from the dashboard; the demo's key is made through the dashboard.
 * The dashboard's UI address and the human user's key are printed.
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
import { admin } from '../operator/helpers.ts';
import { startLocalWebhooks } from '../webhooks/helpers.ts';
import { openSse } from '../../gateway/streams/testing.ts';
import {
  createTenant,
  dashboardCall,
  signedLicense,
  startDashboardProc,
  type DashboardProc,
  type DashboardTenant,
} from './dashboard.ts';

const root = join(import.meta.dirname, '..', '..');
const crdDir = join(root, 'charts', 'svc-operator', 'crds');
/** The SecurityPolicy's rate in the demo's copy. */
const DEMO_RATE = 3;
/** The org of the demo's operator, its policies and its key. */
const ORG = 'demo';
/** The key the demo creates (mode ce; in mode pro the dashboard names it). */
const KEY = 'demo-key';
/** `--mode=pro`: the dashboard, the operator and the gateway in mode pro. */
const PRO = process.argv.includes('--mode=pro');
if (!PRO && process.argv.some((a) => a.startsWith('--mode=') && a !== '--mode=ce')) {
  console.error('usage: demo-main.ts [--mode=ce|--mode=pro]');
  process.exit(2);
}

/** Kinds the operator does not reconcile yet: their examples are left out. */
const NOT_RECONCILED = new Set<string>([]);
/** A manifest of examples/, as much of it as the demo reads and changes. */
interface DemoManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { proxy?: { target_url?: string }; [field: string]: unknown };
}

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
    say("registering the admission webhooks (the chart's configurations, pointed at a local server)");
    const webhooks = await startLocalWebhooks(cp, dir);
    cleanups.push(() => webhooks.stop());
    console.log(`webhooks  https://127.0.0.1:${String(webhooks.port)}   (logs: ${webhooks.proc.logFile})`);
  }
  await kubectl(['create', 'namespace', 'svc-operator-system'], { allowFailure: true });

  say(
    PRO
      ? 'starting an upstream, a dashboard (SQLite), and a gateway and the operator in mode pro'
      : 'starting an upstream, a gateway (embedded store) and the operator',
  );
  const upstream = await startEchoUpstream('demo-upstream');
  cleanups.push(() => upstream.close());
  const secret = randomBytes(24).toString('base64url');
  const pro = PRO ? await startPro() : undefined;
  // Streaming on: examples/ holds a streams API (run on Bento, which `make deps` builds).
  const gw = await startGateway({
    name: 'gateway',
    secret,
    dataDir: join(dir, 'gateway-data'),
    logDir: dir,
    env: { SVC_GW_STREAMING_ENABLED: 'true', ...pro?.gatewayEnv },
  });
  cleanups.push(() => gw.stop());
  const operator = await startOperator({
    name: 'operator',
    gateway: gw,
    kubeconfig,
    logDir: dir,
    org: ORG,
    ...(pro ? { env: pro.operatorEnv } : {}),
  });
  cleanups.push(() => operator.stop());
  if (pro) {
    console.log(`dashboard ${pro.dashboard.url}   (SQLite under ${dir}; logs: ${pro.dashboard.logFile})`);
    console.log(`          organisation ${ORG}; the operator is its system user`);
  }
  console.log(`gateway   ${gw.url}   (logs: ${gw.logFile})`);
  console.log(`          management secret (header x-svc-authorization): ${secret}`);
  console.log(`operator  ${operator.opsUrl}/metrics   (logs: ${operator.logFile})`);
  console.log(`upstream  ${upstream.url}`);

  say('applying examples/');
  // A local control plane has no cluster DNS: upstreams of the examples point at the demo upstream.
  // The demo's copy of the policy allows 3 requests a minute, without throttling, so that the
  // fourth is refused with 429 right away.
  console.log(
    `(the demo's copy of SecurityPolicy orders-standard: rate ${String(DEMO_RATE)} per 60 s, no throttling)`,
  );
  const manifests: string[] = [];
  const svcResources: { kind: string; name: string; namespace: string }[] = [];
  for (const file of (await readdir(join(root, 'examples'))).filter((f) => f.endsWith('.yaml')).sort()) {
    const docs = parseAllDocuments(await readFile(join(root, 'examples', file), 'utf8')).map(
      (doc) => doc.toJS() as DemoManifest,
    );
    const unreconciled = docs.find((d) => NOT_RECONCILED.has(d.kind));
    if (unreconciled) {
      console.log(
        `(skipping examples/${file}: ${unreconciled.kind} has no controller yet, it would never be Ready)`,
      );
      continue;
    }
    for (const obj of docs) {
      if (obj.spec?.proxy?.target_url) obj.spec.proxy.target_url = upstream.url;
      if (obj.kind === 'SecurityPolicy') {
        obj.spec = { ...obj.spec, rate: DEMO_RATE, per: 60 };
        delete obj.spec.throttle_interval;
        delete obj.spec.throttle_retry_limit;
      }
      if (obj.apiVersion.startsWith('svc.svc.io/')) {
        svcResources.push({
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace ?? 'default',
        });
      }
      manifests.push(stringify(obj));
    }
  }
  const applied = await kubectl(['apply', '--server-side', '-f', '-'], { input: manifests.join('---\n') });
  console.log(applied.stdout.trimEnd());
  if (applied.stderr.trim()) console.log(applied.stderr.trimEnd());

  say('waiting until every resource applied is Ready');
  for (const r of svcResources) {
    const w = await kubectl(
      [
        'wait',
        '--for=condition=Ready=True',
        `${r.kind.toLowerCase()}/${r.name}`,
        '-n',
        r.namespace,
        '--timeout=60s',
      ],
      { allowFailure: true },
    );
    if (w.code !== 0) {
      const st = await kubectl([
        'get',
        r.kind.toLowerCase(),
        r.name,
        '-n',
        r.namespace,
        '-o',
        'jsonpath={.status}',
      ]);
      throw new Error(`${r.kind} ${r.namespace}/${r.name} is not Ready: ${st.stdout}`);
    }
    console.log(w.stdout.trimEnd());
  }

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

  say('a streams API: events (examples/streams-api-definition.yaml, run on Bento)');
  const consumer = await openSse(gw.port, '/events/out');
  console.log(
    `$ curl -N ${gw.url}/events/out        # a server-sent events consumer, HTTP ${consumer.status}`,
  );
  const message = JSON.stringify({ text: 'hello streams' });
  const published = await httpRequest(`${gw.url}/events/in`, { method: 'POST', body: message });
  console.log(`$ curl -d '${message}' ${gw.url}/events/in`);
  console.log(`HTTP ${published.status}`);
  const event = await waitFor('the message on the consumer', () => consumer.events[0]);
  console.log(`the consumer received, transformed by the stream's mapping: ${event}`);
  consumer.close();

  say('a GraphQL API: people (examples/graphql-api-definition.yaml, proxyOnly)');
  const graphqlQuery = async (query: string): Promise<{ status: number; body: string }> =>
    httpRequest(`${gw.url}/people/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
  const valid = await waitFor('the GraphQL example to serve', async () => {
    const r = await graphqlQuery('{ hello }');
    return r.status === 200 ? r : undefined;
  });
  console.log(`$ curl ${gw.url}/people/ -H 'content-type: application/json' -d '{"query": "{ hello }"}'`);
  console.log(`HTTP ${String(valid.status)}   (validated against the schema, then proxied to the upstream)`);
  const invalid = await graphqlQuery('{ nope }');
  console.log(`$ curl ${gw.url}/people/ -H 'content-type: application/json' -d '{"query": "{ nope }"}'`);
  console.log(`HTTP ${String(invalid.status)} ${invalid.body}   (refused by the gateway)`);
  if (invalid.status !== 400)
    throw new Error(`expected 400 for an invalid query, got ${String(invalid.status)}`);
  console.log(`the playground: ${gw.url}/people/playground`);

  say('a protected API: orders, with SecurityPolicy orders-standard');
  const pol = await kubectl([
    'get',
    'securitypolicy',
    'orders-standard',
    '-n',
    'default',
    '-o',
    'jsonpath={.status.pol_id}',
  ]);
  const polId = pol.stdout.trim();
  const keyBody = { org_id: ORG, apply_policies: [polId] };
  let demoKey = KEY;
  if (pro) {
    console.log("a key, created with the dashboard's API (by the organisation's system user):");
    console.log(
      `$ curl -X POST ${pro.dashboard.url}/api/keys -H 'authorization: <system user key>' -H 'content-type: application/json' -d '${JSON.stringify(keyBody)}'`,
    );
    const created = await dashboardCall(pro.dashboard.url, 'POST', '/api/keys', {
      auth: pro.tenant.system.key,
      body: keyBody,
    });
    console.log(`HTTP ${String(created.status)} ${created.text}`);
    if (created.status !== 200) throw new Error(`the key was not created: HTTP ${String(created.status)}`);
    demoKey = String(created.body.key_id);
  } else {
    console.log("a key, created with the gateway's management API:");
    console.log(
      `$ curl -X POST ${gw.url}/svc/keys/${KEY} -H 'x-svc-authorization: ${secret}' -H 'content-type: application/json' -d '${JSON.stringify(keyBody)}'`,
    );
    const created = await admin(gw, 'POST', `/svc/keys/${KEY}`, keyBody);
    console.log(`HTTP ${String(created.status)} ${JSON.stringify(created.body)}`);
    if (created.status !== 200) throw new Error(`the key was not created: HTTP ${String(created.status)}`);
  }

  const orders = async (key?: string): Promise<number> =>
    (await httpRequest(`${gw.url}/orders/1`, { headers: key ? { authorization: key } : {} })).status;
  const without = await waitFor('orders to refuse requests without a key', async () => {
    const code = await orders();
    return code === 401 ? code : undefined;
  });
  console.log(`$ curl ${gw.url}/orders/1\nHTTP ${String(without)}   (no key: refused)`);
  console.log(`$ curl ${gw.url}/orders/1 -H 'Authorization: ${demoKey}'   # ${String(DEMO_RATE + 1)} times`);
  const codes: number[] = [];
  for (let i = 0; i <= DEMO_RATE; i++) codes.push(await orders(demoKey));
  codes.forEach((code, i) => {
    const why =
      code === 200
        ? 'allowed'
        : code === 429
          ? `over the rate of ${String(DEMO_RATE)} a minute`
          : 'unexpected';
    console.log(`request ${String(i + 1)}: HTTP ${String(code)}   (${why})`);
  });
  const want = [...Array<number>(DEMO_RATE).fill(200), 429];
  if (codes.join() !== want.join()) throw new Error(`expected ${want.join(', ')}, got ${codes.join(', ')}`);

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
  if (pro) {
    console.log(`\nthe dashboard's UI: ${pro.dashboard.url}/ui/`);
    console.log(`sign in with the key of ${pro.human.email} (read-only): ${pro.tenant.reader.key}`);
  }
  console.log('\nPress Ctrl-C to stop everything.');
} catch (err) {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  await stop(1);
}

/**
 * Mode pro: a dashboard over SQLite under the demo's directory, the organisation `demo` with a
 * system user (the operator) and a read-only human, a license key signed with a key pair made
 * here (the operator checks it with the public key), and what the gateway and operator need.
 */
async function startPro(): Promise<{
  dashboard: DashboardProc;
  tenant: DashboardTenant;
  human: { email: string };
  gatewayEnv: Record<string, string>;
  operatorEnv: Record<string, string>;
}> {
  const nodeSecret = randomBytes(24).toString('base64url');
  const dashboard = await startDashboardProc({
    name: 'dashboard',
    logDir: dir,
    dataDir: join(dir, 'dashboard-data'),
    args: ['--node-secret', nodeSecret],
  });
  cleanups.push(() => dashboard.stop());
  const tenant = await createTenant(dashboard.url, ORG);
  const license = await signedLicense('svc-demo');
  return {
    dashboard,
    tenant,
    human: { email: `reader@${ORG}.example.com` },
    gatewayEnv: {
      SVC_GW_DASHBOARD_URL: dashboard.url,
      SVC_GW_NODE_SECRET: nodeSecret,
      SVC_GW_DASHBOARD_ORGS: ORG,
    },
    operatorEnv: {
      SVC_MODE: 'pro',
      SVC_URL: dashboard.url,
      SVC_AUTH: tenant.system.key,
      ...license,
    },
  };
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
