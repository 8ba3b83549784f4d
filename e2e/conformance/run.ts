/**
 * `make conformance`: the upstream Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance,
 * the version tools/gateway-api-conformance/go.mod pins) against svc on the node of `make node`.
 *
 * 1. Builds the suite's test binary (`go test -c` of tools/gateway-api-conformance, whose test is
 *    the upstream conformance_test.go) and the echo backend of its base manifests
 *    (conformance/echo-basic), both cached under the tools directory by version.
 * 2. Makes the images the base manifests name, from scratch with buildah, tagged with exactly
 *    those names (the pods' IfNotPresent finds them in the node's containerd): echo-basic for
 *    registry.k8s.io/gateway-api/echo-basic:v1.5.1 and :v1.6.0-dev.3, and the pause binary for
 *    registry.k8s.io/coredns/coredns:v1.12.2 (the UDPRoute DNS backend, not in the HTTP profile:
 *    a stand-in that only runs; see docs/conformance/README.md).
 * 3. Installs svc-gateway (its port 80, the port of every listener of the base Gateways, opened
 *    by its non-root process through the pod's net.ipv4.ip_unprivileged_port_start sysctl) and
 *    svc-operator (gatewayAPI.installCRDs, gatewayAPI.gatewayClass.create, and per-Gateway
 *    addresses: gatewayAPI.addresses.mode=per-gateway with the svc-gateway Service, so each
 *    Gateway gets a Service of its own whose ClusterIP is its status.addresses, reachable from
 *    this host through kube-proxy, leading its listener ports to gateway ports of its own:
 *    docs/gateway-api.md, "Addresses").
 * 4. Runs the suite (profile GATEWAY-HTTP, the features svc claims), writes the ConformanceReport
 *    to docs/conformance/, prints each test's result, uninstalls both releases.
 *
 * Installs svc-operator: run under `flock /tmp/svc-node-operator.lock` (the Makefile does).
 * SVC_CONFORMANCE_RUN_TEST runs one test (the suite's -run-test), for a quick look;
 * SVC_CONFORMANCE_SKIP_TESTS skips tests (comma-separated; the report lists them as skipped).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { format, resolveConfig } from 'prettier';
import { parse } from 'yaml';
import { toolsDir } from '../harness/control-plane.ts';
import { importImage, scratchImage } from '../harness/node/images.ts';
import { tool } from '../harness/node/layout.ts';
import { GATEWAY_NS, cluster, helm, kubectl, repoRoot, run } from '../node/helpers.ts';
import {
  applyChartCrds,
  installGateway,
  installOperatorRelease,
  uninstallOperator,
  writeOperatorConf,
} from '../node/install.ts';

const moduleDir = path.join(repoRoot, 'tools', 'gateway-api-conformance');
const VERSION = /sigs\.k8s\.io\/gateway-api\/conformance (v\S+)/.exec(
  readFileSync(path.join(moduleDir, 'go.mod'), 'utf8'),
)?.[1];
if (VERSION === undefined)
  throw new Error('tools/gateway-api-conformance/go.mod requires no conformance module');

/** The GatewayClass the chart creates (gatewayAPI.gatewayClass.name's default). */
const GATEWAY_CLASS = 'svc';
/** The gateway's port: the port of every HTTP listener of the suite's base Gateways. */
const GATEWAY_PORT = 80;
/**
 * The extended features svc claims (docs/gateway-api.md, "What is served"), beside the core ones
 * of the profile (Gateway, HTTPRoute, ReferenceGrant).
 */
const SUPPORTED = [
  'Gateway',
  'HTTPRoute',
  'ReferenceGrant',
  'HTTPRouteQueryParamMatching',
  'HTTPRouteMethodMatching',
  'HTTPRoutePathRewrite',
];
const REPORT = path.join(repoRoot, 'docs', 'conformance', `standard-${VERSION}-default-report.yaml`);
const SUITE_TIMEOUT_MS = Number(process.env.SVC_CONFORMANCE_TIMEOUT_MS ?? 45 * 60_000);

const log = (msg: string) => process.stderr.write(`conformance: ${msg}\n`);
const go = process.env.GO ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go');

/** `go test -c` / `go build` into the tools directory, once per version. */
async function buildBinaries(): Promise<{ suite: string; echo: string }> {
  const suite = path.join(toolsDir(), `gateway-api-conformance-${VERSION}.test`);
  const echo = path.join(toolsDir(), `echo-basic-${VERSION}`);
  process.env.CGO_ENABLED = '0'; // static binaries, for images from scratch
  if (!existsSync(suite)) {
    log(`building the suite ${VERSION}`);
    await run(go, ['-C', moduleDir, 'test', '-c', '-trimpath', '-o', `${suite}.tmp`, '.']);
    await run('mv', [`${suite}.tmp`, suite]);
  }
  if (!existsSync(echo)) {
    log(`building echo-basic ${VERSION}`);
    await run(go, [
      '-C',
      moduleDir,
      'build',
      '-trimpath',
      '-ldflags=-s -w',
      '-o',
      `${echo}.tmp`,
      'sigs.k8s.io/gateway-api/conformance/echo-basic',
    ]);
    await run('mv', [`${echo}.tmp`, echo]);
  }
  return { suite, echo };
}

/** The images of the suite's base manifests, under the names they use, in the node's containerd. */
async function importSuiteImages(echo: string, nodeDir: string): Promise<void> {
  const made = [
    ...['v1.5.1', 'v1.6.0-dev.3'].map((tag) => ({
      name: 'registry.k8s.io/gateway-api/echo-basic',
      tag,
      binary: echo,
      entrypoint: ['/echo-basic'],
    })),
    {
      name: 'registry.k8s.io/coredns/coredns',
      tag: 'v1.12.2',
      binary: tool('pause'),
      entrypoint: ['/pause'],
    },
  ];
  for (const image of made) {
    await importImage(await scratchImage(image), nodeDir);
    log(`image ${image.name}:${image.tag} from ${path.basename(image.binary)}`);
  }
}

/**
 * svc-gateway on port 80 and svc-operator with the Gateway API CRDs and GatewayClass, by the
 * node suites' install steps (e2e/node/install.ts) with the suite's values.
 */
async function install(): Promise<string> {
  const secret = randomBytes(16).toString('hex');
  await installGateway(secret, [
    '--set',
    `port=${GATEWAY_PORT}`,
    '--set',
    'podSecurityContext.sysctls[0].name=net.ipv4.ip_unprivileged_port_start',
    '--set-string',
    'podSecurityContext.sysctls[0].value=0',
  ]);
  const address = (
    await kubectl(['-n', GATEWAY_NS, 'get', 'service', 'svc-gateway', '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  if (address === '') throw new Error('svc-gateway Service has no ClusterIP');
  await writeOperatorConf({
    SVC_MODE: 'ce',
    SVC_URL: `http://svc-gateway.${GATEWAY_NS}.svc:${GATEWAY_PORT}`,
    SVC_AUTH: secret,
    SVC_ORG: 'conformance',
    SVC_HTTP_INGRESS_PORT: String(GATEWAY_PORT),
    SVC_INGRESS_ADDRESS: address,
  });
  await applyChartCrds();
  // Two steps: one release with both values is refused on a cluster without the Gateway API CRDs
  // (helm maps every object before creating any: no kind GatewayClass yet), so the CRDs first,
  // then the GatewayClass (docs/conformance/README.md).
  for (const createClass of [false, true]) {
    await installOperatorRelease([
      '--set',
      'gatewayAPI.installCRDs=true',
      // Each Gateway its own address (HTTPRouteMultipleGateways: two Gateways, one port, host and path).
      '--set',
      'gatewayAPI.addresses.mode=per-gateway',
      '--set',
      `gatewayAPI.addresses.gatewayService=${GATEWAY_NS}/svc-gateway`,
      '--set',
      `gatewayAPI.gatewayClass.create=${createClass}`,
      '--set',
      `gatewayAPI.gatewayClass.name=${GATEWAY_CLASS}`,
    ]);
  }
  return address;
}

/** Runs the suite binary, its output streamed to stderr and kept; resolves with its exit code. */
function runSuite(
  binary: string,
  kubeconfig: string,
  svcVersion: string,
): Promise<{ code: number; out: string }> {
  const args = [
    '-test.v',
    `-test.timeout=${Math.round(SUITE_TIMEOUT_MS / 1000)}s`,
    `-gateway-class=${GATEWAY_CLASS}`,
    '-conformance-profiles=GATEWAY-HTTP',
    `-supported-features=${SUPPORTED.join(',')}`,
    `-report-output=${REPORT}`,
    '-organization=svc',
    '-project=svc',
    '-url=https://github.com/svc/svc',
    `-version=${svcVersion}`,
    '-contact=https://github.com/svc/svc/issues',
    '-mode=default',
    '-cleanup-base-resources=true',
    ...(process.env.SVC_CONFORMANCE_RUN_TEST ? [`-run-test=${process.env.SVC_CONFORMANCE_RUN_TEST}`] : []),
    ...(process.env.SVC_CONFORMANCE_SKIP_TESTS
      ? [`-skip-tests=${process.env.SVC_CONFORMANCE_SKIP_TESTS}`]
      : []),
  ];
  log(`${path.basename(binary)} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const keep = (chunk: Buffer) => {
      out += chunk.toString();
      process.stderr.write(chunk);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGTERM'), SUITE_TIMEOUT_MS + 60_000);
    // `timeout` (make conformance) or ^C: the suite stops, the cleanup below still runs.
    const stop = () => child.kill('SIGTERM');
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, out });
    });
  });
}

/** The suite's namespaces (its base manifests), deleted by its own cleanup unless it was cut short. */
const SUITE_NAMESPACES = [
  'gateway-conformance-infra',
  'gateway-conformance-app-backend',
  'gateway-conformance-web-backend',
];

/**
 * The suite's namespaces first, while the operator still runs (it removes its finalizers from the
 * Gateways and HTTPRoutes; without it, Gateways left by an interrupted run keep the Gateway CRD
 * the operator's uninstall deletes terminating), then both releases, each tried.
 */
async function cleanup(): Promise<void> {
  const step = async (what: string, fn: () => Promise<unknown>) =>
    fn().catch((err: unknown) => log(`${what}: ${err instanceof Error ? err.message : String(err)}`));
  await step('delete the suite namespaces', () =>
    kubectl(['delete', 'namespace', ...SUITE_NAMESPACES, '--ignore-not-found', '--timeout=180s']),
  );
  await step('uninstall svc-operator', () => uninstallOperator());
  await step('uninstall svc-gateway', () =>
    helm(['uninstall', 'svc-gateway', '-n', GATEWAY_NS, '--ignore-not-found', '--wait', '--timeout=3m']),
  );
  await step('delete Redis', () =>
    kubectl(['-n', GATEWAY_NS, 'delete', 'deploy,service', 'redis', '--ignore-not-found']),
  );
}

interface Report {
  profiles?: {
    name: string;
    core?: {
      result: string;
      statistics: Record<string, number>;
      failedTests?: string[];
      skippedTests?: string[];
    };
    extended?: {
      result: string;
      statistics: Record<string, number>;
      failedTests?: string[];
      supportedFeatures?: string[];
    };
  }[];
}

async function main(): Promise<void> {
  const { node, kubeconfig } = await cluster();
  if (node === undefined) throw new Error('make conformance runs on the node of `make node`');
  const { suite, echo } = await buildBinaries();
  await importSuiteImages(echo, node.dir);
  const svcVersion = (
    JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }
  ).version;
  await mkdir(path.dirname(REPORT), { recursive: true });
  let code: number;
  try {
    const address = await install();
    log(`svc installed; the svc-gateway Service: ${address}; each Gateway gets a Service of its own`);
    const result = await runSuite(suite, kubeconfig, svcVersion);
    code = result.code;
    const lines = [
      ...result.out.matchAll(/^\s*--- (PASS|FAIL|SKIP): TestConformance\/(\S+)(?: \(([\d.]+s)\))?/gm),
    ]
      .filter((m) => !(m[2] ?? '').includes('/'))
      .map((m) => `${m[1]}\t${m[2]}\t${m[3] ?? ''}`);
    const summary = [`# ${path.relative(repoRoot, REPORT)} (suite exit ${code})`, ...lines];
    if (existsSync(REPORT)) {
      const text = readFileSync(REPORT, 'utf8');
      // In Prettier's form (the suite writes its own, which `make lint`'s prettier --check refuses).
      await writeFile(REPORT, await format(text, { ...(await resolveConfig(REPORT)), filepath: REPORT }));
      await chmod(REPORT, 0o644); // the suite writes it 0600
      const report = parse(text) as Report;
      for (const p of report.profiles ?? []) {
        summary.push(
          `${p.name} core: ${p.core?.result ?? '-'} ${JSON.stringify(p.core?.statistics ?? {})}`,
          `${p.name} extended: ${p.extended?.result ?? '-'} ${JSON.stringify(p.extended?.statistics ?? {})}`,
        );
      }
    } else {
      summary.push('no report written');
    }
    process.stdout.write(`${summary.join('\n')}\n`);
    await writeFile(path.join(repoRoot, 'docs', 'conformance', 'last-run.txt'), `${summary.join('\n')}\n`);
  } finally {
    await cleanup();
  }
  process.exitCode = code;
}

await main();
