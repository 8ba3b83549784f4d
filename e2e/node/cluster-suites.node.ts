/**
 * The cluster suites on the node (issue 28 item 4): svc installed with the charts the way
 * docs/install.md and .github/workflows/e2e-kind.yaml install it, then every suite of
 * `make e2e-cluster` (e2e/cluster/*.cluster.ts and the Makefile's E2E_CLUSTER_SUITES) run against
 * the cluster with `SVC_E2E_CLUSTER=1`, each as a test here that fails when the suite fails or
 * skips anything.
 *
 * Installed with `helm upgrade --install` from the images tools/images.sh makes
 * (e2e/node/helpers.ts, installGatewayAndOperator):
 * - cert-manager (e2e/node/cert-manager.ts, shared by the node suites);
 * - svc-gateway in `svc-gateway`: its Redis store in a pod, streaming on (the gateway image runs
 *   Bento), its default TLS certificate (the HTTPS ingress port) from cert-manager
 *   (`tls.certManager.enabled=true`);
 * - a second svc-gateway release in `svc-gateway-2` (files store), for the OperatorContext tests;
 * - svc-operator in `svc-operator-system`, the Secret svc-operator-conf as docs/install.md writes
 *   it, SVC_PUBLISH_SERVICE, the webhooks' certificate from cert-manager
 *   (`webhooks.certManager.enabled=true`), as the kind workflow installed it.
 * The suites' echo upstreams and client pods run in the gateway image (E2E_NODE_IMAGE).
 *
 * Installs svc-operator: run under `flock /tmp/svc-node-operator.lock` (`make e2e-node` does). The
 * releases are uninstalled at the end. On another cluster: SVC_E2E_KUBECONFIG, SVC_E2E_IMAGES.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { environment } from '../../lib/config.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { installCertManager } from './cert-manager.ts';
import {
  GATEWAY_NS,
  OPERATOR_NS,
  apply,
  cluster,
  dumpOnFailure,
  helm,
  imageRef,
  kubectl,
  repoRoot,
  waitForPodsReady,
} from './helpers.ts';
import {
  installGatewayAndOperator,
  installGatewayRelease,
  uninstallOperator,
  waitForWebhooks,
} from './install.ts';

const GATEWAY2_NS = 'svc-gateway-2';
/** A suite's own deadline: the operator suite restarts pods a dozen times. */
const SUITE_TIMEOUT = 30 * 60_000;
/** The gateway's streams (Bento) switched on, as its `extraEnv[i]`. */
const streaming = (i: number): string[] => [
  '--set',
  `extraEnv[${String(i)}].name=SVC_GW_STREAMING_ENABLED`,
  '--set-string',
  `extraEnv[${String(i)}].value=true`,
];

dumpOnFailure(GATEWAY_NS, GATEWAY2_NS, OPERATOR_NS);

/**
 * The namespace `name`, Active: one still Terminating (a previous run's, deleted without waiting)
 * is waited out first, else it would vanish under the objects created in it.
 */
async function activeNamespace(name: string): Promise<void> {
  await waitFor(
    `namespace ${name} not Terminating`,
    async () => {
      const phase = await kubectl([
        'get',
        'namespace',
        name,
        '--ignore-not-found',
        '-o',
        'jsonpath={.status.phase}',
      ]);
      return phase !== 'Terminating';
    },
    300_000,
    1000,
  );
  await apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }]);
}

before(async () => {
  // cert-manager issues the gateway's default certificate and the webhooks' serving certificate,
  // as in the kind workflow (e2e/node/cert-manager.ts: installed once on the node, reused after).
  await installCertManager();
  await installGatewayAndOperator({
    org: 'e2e',
    // extraEnv[0] is the helper's SVC_GW_STORE.
    gatewayArgs: [...streaming(1), '--set', 'tls.certManager.enabled=true'],
    operatorArgs: [
      '--set',
      'webhooks.certManager.enabled=true',
      '--set',
      'extraEnv[0].name=SVC_PUBLISH_SERVICE',
      '--set',
      `extraEnv[0].value=${GATEWAY_NS}/svc-gateway`,
      // The Secret svc-operator-conf was just written (a new gateway secret): new pods read it.
      '--set-string',
      `podAnnotations.svc\\.io/installed=${randomBytes(4).toString('hex')}`,
    ],
  });

  // The second gateway: its own namespace, secret and release.
  await activeNamespace(GATEWAY2_NS);
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-gateway-secret', namespace: GATEWAY2_NS },
      stringData: { secret: randomBytes(16).toString('hex') },
    },
  ]);
  await installGatewayRelease(GATEWAY2_NS, streaming(0));
  await kubectl(['-n', GATEWAY2_NS, 'rollout', 'restart', 'deploy/svc-gateway']);
  await kubectl(['-n', GATEWAY2_NS, 'rollout', 'status', 'deploy/svc-gateway', '--timeout=180s']);
  await waitForPodsReady(GATEWAY2_NS);

  // The API server calls the webhooks once cert-manager's CA injector has filled their caBundle.
  await waitForWebhooks({ ns: GATEWAY2_NS, timeoutMs: 180_000 });
});

after(async () => {
  await helm(['uninstall', 'svc-gateway', '-n', GATEWAY2_NS, '--ignore-not-found', '--wait', '--timeout=3m']);
  await kubectl(['delete', 'namespace', GATEWAY2_NS, '--ignore-not-found', '--wait=false']);
  await uninstallOperator({ gateway: true });
});

/** The suites of `make e2e-cluster`, as the Makefile lists them. */
async function clusterSuites(): Promise<string[]> {
  const makefile = await readFile(path.join(repoRoot, 'Makefile'), 'utf8');
  const listed = /^E2E_CLUSTER_SUITES\s*=\s*(.+)$/m.exec(makefile)?.[1]?.trim().split(/\s+/) ?? [];
  assert.ok(listed.length > 0, 'the Makefile lists no E2E_CLUSTER_SUITES');
  const own = (await readdir(path.join(repoRoot, 'e2e', 'cluster')))
    .filter((f) => f.endsWith('.cluster.ts'))
    .sort()
    .map((f) => `e2e/cluster/${f}`);
  return [...own, ...listed];
}

/** The counts of the spec reporter's summary (`ℹ tests 9`, `ℹ skipped 0`, ...). */
function summary(out: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const m of out.matchAll(/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) {
    if (m[1] !== undefined) counts[m[1]] = Number(m[2]);
  }
  return counts;
}

/** Runs `node --test <suite>` against the cluster; resolves with its exit code and output. */
async function runSuite(suite: string, log: string): Promise<{ code: number | null; out: string }> {
  const gatewayImage = await imageRef('gateway');
  const { kubeconfig } = await cluster();
  // The runner's own context variable would make the inner runner report to this one.
  const { NODE_TEST_CONTEXT: _, ...inherited } = environment();
  const child = spawn(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=1', suite], {
    cwd: repoRoot,
    env: {
      ...inherited,
      SVC_E2E_CLUSTER: '1',
      KUBECONFIG: kubeconfig,
      KUBECTL: existsSync(path.join(toolsDir(), 'kubectl')) ? path.join(toolsDir(), 'kubectl') : 'kubectl',
      E2E_NODE_IMAGE: gatewayImage,
      E2E_GATEWAY_NAMESPACE: GATEWAY_NS,
      E2E_GATEWAY2_NAMESPACE: GATEWAY2_NS,
      E2E_OPERATOR_NAMESPACE: OPERATOR_NS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const file = createWriteStream(log);
  let out = '';
  const take = (c: Buffer): void => {
    out += c.toString();
    file.write(c);
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      file.end();
      resolve({ code, out });
    });
  });
}

for (const suite of await clusterSuites()) {
  test(`${suite} passes, nothing skipped`, { timeout: SUITE_TIMEOUT }, async (t) => {
    const log = path.join(tmpdir(), `svc-node-${path.basename(suite, '.ts')}.log`);
    const started = Date.now();
    const { code, out } = await runSuite(suite, log);
    t.diagnostic(`${suite}: ${String(Math.round((Date.now() - started) / 1000))} s, output in ${log}`);
    const counts = summary(out);
    const tail = out.slice(-6000);
    assert.equal(code, 0, `${suite} failed:\n${tail}`);
    assert.ok((counts.tests ?? 0) > 0, `${suite} ran no test:\n${tail}`);
    assert.equal(counts.fail, 0, tail);
    assert.equal(counts.skipped, 0, `${suite} skipped tests:\n${tail}`);
    assert.equal(counts.todo, 0, `${suite} has todo tests:\n${tail}`);
  });
}
