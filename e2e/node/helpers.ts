/**
 * What the node suites (e2e/node/*.node.ts) share: the cluster they run on, kubectl and helm
 * against it, the images made here, namespaces of their own, waiting for pods, client pods, and a
 * dump of what went wrong when a test fails. The installs of svc-gateway and svc-operator are in
 * install.ts.
 *
 * The cluster: the node of e2e/harness/node.ts (started, or reused when running), or any cluster
 * when `SVC_E2E_KUBECONFIG` names its kubeconfig. Images: on the node, tools/images.sh builds
 * them (cached by content) and imports them into the node's containerd; on another cluster they
 * must be there already (kind load, a registry) and `SVC_E2E_IMAGES` names them
 * (`operator=ref,gateway=ref,dashboard=ref,redis=ref`). See docs/e2e-cluster.md.
 *
 * A suite that installs, upgrades or uninstalls the svc-operator release (cluster-scoped objects
 * of fixed names) runs under `flock /tmp/svc-node-operator.lock` (`make e2e-node` takes it per
 * file) and uninstalls its release at the end (install.ts's `uninstallOperator`).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { importImage, startNode } from '../harness/node.ts';
import type { Node } from '../harness/node.ts';

/** The repository's root. */
export const repoRoot = path.resolve(import.meta.dirname, '..', '..');
/** Where the suites install the charts (the names docs/install.md uses). */
export const GATEWAY_NS = 'svc-gateway';
export const OPERATOR_NS = 'svc-operator-system';
/** The lock file every command that installs or removes the svc-operator release holds. */
export const OPERATOR_LOCK = '/tmp/svc-node-operator.lock';

/** The cluster the suites run on. */
export interface Cluster {
  kubeconfig: string;
  /** The node of e2e/harness/node.ts; undefined on a cluster named by SVC_E2E_KUBECONFIG. */
  node?: Node;
}

let clusterPromise: Promise<Cluster> | undefined;

/** The cluster, once per process: SVC_E2E_KUBECONFIG's, else the node (started or reused). */
export function cluster(): Promise<Cluster> {
  clusterPromise ??= (async () => {
    const explicit = process.env.SVC_E2E_KUBECONFIG;
    if (explicit !== undefined && explicit !== '') return { kubeconfig: path.resolve(explicit) };
    const node = await startNode({ verbose: true });
    return { kubeconfig: node.kubeconfig, node };
  })();
  return clusterPromise;
}

/** A tool built by `make deps` (~/.cache/svc-tools/bin), else the one on PATH. */
function binary(name: 'kubectl' | 'helm'): string {
  const built = path.join(toolsDir(), name);
  return existsSync(built) ? built : name;
}

/** Runs a command; rejects with its stderr (and stdout) in the message. */
export function run(cmd: string, args: string[], input?: string, timeoutMs = 15 * 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { maxBuffer: 128 * 1024 * 1024, timeout: timeoutMs },
      (err, stdout, stderr) => {
        if (err !== null) {
          const out = [stderr.trim(), stdout.trim()].filter((s) => s !== '').join('\n');
          reject(new Error(`${path.basename(cmd)} ${args.join(' ')}: ${err.message}\n${out}`));
        } else {
          resolve(stdout);
        }
      },
    );
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

/** kubectl against the cluster. */
export async function kubectl(args: string[], input?: string): Promise<string> {
  const { kubeconfig } = await cluster();
  return run(binary('kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], input);
}

/** `kubectl apply` of objects (or of YAML text). */
export async function apply(docs: object[] | string): Promise<string> {
  const text = typeof docs === 'string' ? docs : docs.map((d) => stringify(d)).join('---\n');
  return kubectl(['apply', '-f', '-'], text);
}

/** helm against the cluster. */
export async function helm(args: string[]): Promise<string> {
  const { kubeconfig } = await cluster();
  return run(binary('helm'), [`--kubeconfig=${kubeconfig}`, ...args]);
}

/** imagePullPolicy of the suites' pods: Never (images made here or loaded), SVC_E2E_PULL_POLICY elsewhere. */
export const PULL_POLICY = process.env.SVC_E2E_PULL_POLICY ?? 'Never';

/** Image name (operator, gateway, dashboard, redis, ...) -> reference. */
export type Images = ReadonlyMap<string, string>;

let imagesPromise: Promise<Images> | undefined;

/**
 * The images, once per process. On the node: tools/images.sh builds what changed and imports
 * every image it made into the node's containerd (namespace k8s.io). Elsewhere: SVC_E2E_IMAGES.
 */
export function images(): Promise<Images> {
  imagesPromise ??= (async () => {
    const listed = process.env.SVC_E2E_IMAGES;
    if (listed !== undefined && listed !== '') {
      return new Map(
        listed
          .split(',')
          .map((pair) => pair.trim().split('='))
          .filter((kv): kv is [string, string] => kv.length === 2 && kv[0] !== '' && kv[1] !== ''),
      );
    }
    const { node } = await cluster();
    if (node === undefined) {
      throw new Error('SVC_E2E_KUBECONFIG is set but SVC_E2E_IMAGES is not: name the images the cluster has');
    }
    const started = Date.now();
    const stdout = await run(path.join(repoRoot, 'tools', 'images.sh'), ['import', node.containerdSocket]);
    process.stderr.write(`images: ready in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
    const refs = new Map<string, string>();
    for (const line of stdout.trim().split('\n')) {
      const [name, ref] = line.split('\t');
      if (name !== undefined && ref !== undefined && name !== '' && ref !== '') refs.set(name, ref);
    }
    return refs;
  })();
  return imagesPromise;
}

/** The reference of one image; fails naming what was built when it is missing. */
export async function imageRef(name: string): Promise<string> {
  const refs = await images();
  const ref = refs.get(name);
  if (ref === undefined) {
    throw new Error(`no ${name} image (have: ${[...refs.keys()].join(', ') || 'none'})`);
  }
  return ref;
}

/**
 * An image with Node 24 as `node` on its PATH, for echo servers and client pods: on the node the
 * Node base of tools/images.sh (no app image needed, so the node is tested before them); elsewhere
 * the gateway image.
 */
export async function nodeImage(): Promise<string> {
  const { node } = await cluster();
  if (node === undefined) return imageRef('gateway');
  const stdout = await run(path.join(repoRoot, 'tools', 'images.sh'), ['bases']);
  const [, ref, archive] =
    stdout
      .split('\n')
      .find((l) => l.startsWith('node\t'))
      ?.split('\t') ?? [];
  if (ref === undefined || archive === undefined)
    throw new Error(`tools/images.sh bases printed no node image:\n${stdout}`);
  await importImage(archive, node.dir);
  return ref;
}

/** `--set` values pointing a chart (values `image.repository`, `image.tag`) at an image. */
export async function imageValues(name: string, prefix = 'image'): Promise<string[]> {
  const ref = await imageRef(name);
  const colon = ref.lastIndexOf(':');
  const [repository, tag] =
    colon > ref.lastIndexOf('/') ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
  return [
    '--set',
    `${prefix}.repository=${repository}`,
    '--set',
    `${prefix}.tag=${tag}`,
    '--set',
    `${prefix}.pullPolicy=${PULL_POLICY}`,
  ];
}

/** A container's securityContext as the restricted Pod Security Standard asks. */
export const RESTRICTED = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
} as const;

/**
 * An echo upstream in `ns`: a Deployment `name` (label `app: name`) whose pod runs a Node
 * one-liner on port 8000 answering its pod name and the path it got, as JSON, and its Service
 * `name`. `image` runs it with `args: ['-e', ...]`, or as `command` when `command` says so (an
 * image whose entrypoint is not node); `podSecurity` is the pod's securityContext; `script`
 * another one-liner listening on 8000; `replicas` the Deployment's; `pullPolicy` the image's
 * (default {@link PULL_POLICY}).
 */
export function echoUpstreamDocs(opts: {
  name: string;
  ns: string;
  image: string;
  command?: boolean;
  podSecurity?: Record<string, unknown>;
  script?: string;
  replicas?: number;
  pullPolicy?: string;
}): object[] {
  const { name, ns } = opts;
  const labels = { app: name };
  const echo =
    opts.script ??
    `require('node:http').createServer((q, s) => s.end(JSON.stringify({ pod: process.env.HOSTNAME, path: q.url }))).listen(8000)`;
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        ...(opts.replicas === undefined ? {} : { replicas: opts.replicas }),
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            securityContext: opts.podSecurity ?? { runAsNonRoot: true },
            containers: [
              {
                name,
                image: opts.image,
                imagePullPolicy: opts.pullPolicy ?? PULL_POLICY,
                ...(opts.command === true ? { command: ['node', '-e', echo] } : { args: ['-e', echo] }),
                readinessProbe: { tcpSocket: { port: 8000 }, periodSeconds: 1 },
                securityContext: RESTRICTED,
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: { selector: labels, ports: [{ port: 8000 }] },
    },
  ];
}

/**
 * A keyless ApiDefinition `name` in `ns` serving, at `listenPath` (stripped), the echo upstream of
 * {@link echoUpstreamDocs} of the same name (or `upstream`), at `upstreamPath` (default none);
 * `extra` spec fields added.
 */
export function echoApiDefinition(opts: {
  name: string;
  ns: string;
  listenPath: string;
  upstream?: string;
  upstreamPath?: string;
  extra?: Record<string, unknown>;
}): object {
  const { name, ns } = opts;
  return {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace: ns },
    spec: {
      name,
      active: true,
      use_keyless: true,
      protocol: 'http',
      proxy: {
        listen_path: opts.listenPath,
        target_url: `http://${opts.upstream ?? name}.${ns}.svc:8000${opts.upstreamPath ?? ''}`,
        strip_listen_path: true,
      },
      ...opts.extra,
    },
  };
}

/**
 * Applies in `ns` the echo upstream `name` ({@link echoUpstreamDocs}) and its ApiDefinition at
 * `listenPath` ({@link echoApiDefinition}); resolves once the upstream's rollout is done.
 */
export async function applyEchoApi(opts: {
  name: string;
  ns: string;
  image: string;
  listenPath: string;
}): Promise<void> {
  await apply([...echoUpstreamDocs(opts), echoApiDefinition(opts)]);
  await kubectl(['-n', opts.ns, 'rollout', 'status', `deploy/${opts.name}`, '--timeout=120s']);
}

/**
 * A namespace of the suite's own, `<prefix>-<random>`: created before the suite's tests, dumped
 * when a test fails, deleted after the suite. Call at the top level of a suite file.
 */
export function useNamespace(prefix: string): string {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  before(async () => {
    await apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'svc.io/e2e': 'true' } } },
    ]);
  });
  dumpOnFailure(name);
  after(async () => {
    await kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  });
  return name;
}

interface PodList {
  items: {
    metadata: { name: string };
    status?: {
      phase?: string;
      conditions?: { type: string; status: string }[];
      containerStatuses?: { name: string; ready: boolean; restartCount: number; state?: object }[];
    };
  }[];
}

/** Waits until every pod of the namespace (at least one; finished ones aside) is Ready. */
export async function waitForPodsReady(ns: string, timeoutMs = 240_000, selector?: string): Promise<void> {
  let last = '';
  try {
    await waitFor(
      `every pod in ${ns} Ready`,
      async () => {
        const args = [
          '-n',
          ns,
          'get',
          'pods',
          '-o',
          'json',
          ...(selector === undefined ? [] : ['-l', selector]),
        ];
        const list = JSON.parse(await kubectl(args)) as PodList;
        const live = list.items.filter((p) => p.status?.phase !== 'Succeeded');
        const notReady = live.filter(
          (p) => !(p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        last = notReady
          .map(
            (p) =>
              `${p.metadata.name} ${p.status?.phase ?? '?'} ${JSON.stringify(p.status?.containerStatuses ?? [])}`,
          )
          .join('\n');
        return live.length > 0 && notReady.length === 0;
      },
      timeoutMs,
      1000,
    );
  } catch (err) {
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\nnot Ready:\n${last || '(no pod)'}`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Runs a pod to completion (restartPolicy Never) and returns its phase and logs. `spec` is the
 * pod's spec (its containers at least); the pod is deleted first if one of that name is left.
 */
export async function runPod(
  ns: string,
  name: string,
  spec: Record<string, unknown>,
  timeoutMs = 240_000,
): Promise<{ phase: string; logs: string }> {
  await kubectl(['-n', ns, 'delete', 'pod', name, '--ignore-not-found', '--wait=true']);
  await apply([
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { restartPolicy: 'Never', ...spec },
    },
  ]);
  const phase = await waitFor(
    `the pod ${ns}/${name} to finish`,
    async () => {
      const p = await kubectl(['-n', ns, 'get', 'pod', name, '-o', 'jsonpath={.status.phase}']);
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    },
    timeoutMs,
    500,
  );
  const logs = await kubectl(['-n', ns, 'logs', name]);
  return { phase, logs };
}

/** An answer of the echo upstream of {@link echoUpstreamDocs}: its pod and the path it was asked. */
export interface EchoAnswer {
  status: number;
  body: { pod: string; path: string };
}

/**
 * GETs `url` from a client pod in `ns` (`image`, whose entrypoint is node), once a second for up
 * to 150 s until it answers 200; returns that answer, its body the echo upstream's
 * ({@link echoUpstreamDocs}). The pod fails, and so does this, when it never does.
 */
export async function fetchFromPod(ns: string, image: string, url: string): Promise<EchoAnswer> {
  const client = `
    (async () => {
      const deadline = Date.now() + 150000;
      let last = '';
      while (Date.now() < deadline) {
        try {
          const res = await fetch(${JSON.stringify(url)});
          const body = await res.text();
          if (res.status === 200) { console.log(JSON.stringify({ status: res.status, body: JSON.parse(body) })); return; }
          last = res.status + ' ' + body;
        } catch (e) { last = String(e); }
        await new Promise((r) => setTimeout(r, 1000));
      }
      console.error('not served: ' + last);
      process.exit(1);
    })();`;
  const { phase, logs } = await runPod(ns, 'client', {
    securityContext: { runAsNonRoot: true },
    containers: [
      {
        name: 'client',
        image,
        imagePullPolicy: PULL_POLICY,
        args: ['-e', client],
        securityContext: RESTRICTED,
      },
    ],
  });
  if (phase !== 'Succeeded') throw new Error(`the client pod ${ns}/client: ${phase}\n${logs}`);
  return JSON.parse(logs) as EchoAnswer;
}

/**
 * GETs `url` from a client pod ({@link fetchFromPod}) and asserts that the echo upstream `name`
 * answered it 200, asked `path`.
 */
export async function assertEchoedFromPod(
  where: { ns: string; image: string },
  url: string,
  name: string,
  path: string,
): Promise<void> {
  const out = await fetchFromPod(where.ns, where.image, url);
  assert.equal(out.status, 200);
  assert.match(out.body.pod, new RegExp(`^${name}-`));
  assert.equal(out.body.path, path);
}

/** What a failure leaves to read: objects, pod descriptions, events and the pods' logs. */
export async function dump(namespaces: string[]): Promise<string> {
  const out: string[] = [];
  const section = async (title: string, args: string[]): Promise<void> => {
    const text = await kubectl(args).catch((err: unknown) =>
      err instanceof Error ? err.message : String(err),
    );
    out.push(`----- ${title} -----\n${text.trimEnd()}`);
  };
  await section('nodes', ['get', 'nodes', '-o', 'wide']);
  await section('pods, all namespaces', ['get', 'pods', '-A', '-o', 'wide']);
  for (const ns of namespaces) {
    await section(`${ns}: objects`, ['-n', ns, 'get', 'all,configmaps,secrets,leases,pvc', '-o', 'wide']);
    await section(`${ns}: svc.io objects`, ['-n', ns, 'get', 'svc-all', '-o', 'wide']);
    await section(`${ns}: pods described`, ['-n', ns, 'describe', 'pods']);
    await section(`${ns}: events`, ['-n', ns, 'get', 'events', '--sort-by=.lastTimestamp']);
    const pods = await kubectl(['-n', ns, 'get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}']).catch(
      () => '',
    );
    for (const pod of pods.split(' ').filter((p) => p !== '')) {
      await section(`${ns}/${pod}: logs`, [
        '-n',
        ns,
        'logs',
        pod,
        '--all-containers',
        '--prefix',
        '--tail=300',
      ]);
      const previous = await kubectl([
        '-n',
        ns,
        'logs',
        pod,
        '--all-containers',
        '--previous',
        '--tail=100',
      ]).catch(() => '');
      if (previous.trim() !== '')
        out.push(`----- ${ns}/${pod}: logs of the previous container -----\n${previous}`);
    }
  }
  const { node } = await cluster();
  if (node !== undefined) {
    const log = await readFile(path.join(node.dir, 'logs', 'kubelet.log'), 'utf8').catch(() => '');
    out.push(`----- kubelet.log (last 60 lines) -----\n${log.trimEnd().split('\n').slice(-60).join('\n')}`);
  }
  return out.join('\n');
}

let dumps = 0;

/**
 * When a test of the suite fails (its `before` hooks included): the {@link dump} of these
 * namespaces on stderr, and appended to `$SVC_E2E_DUMP_DIR/<suite>.log` when that is set (CI keeps
 * the folder). At most three dumps per process.
 */
export function dumpOnFailure(...namespaces: string[]): void {
  afterEach(async (t) => {
    // TestContext.passed (Node 21.7+), not yet in @types/node's TestContext | SuiteContext.
    const { passed } = t as { passed?: boolean };
    if (passed !== false || dumps >= 3) return;
    dumps++;
    const text = `===== dump after the failure of "${t.name}" =====\n${await dump(namespaces)}\n`;
    process.stderr.write(text);
    const dir = process.env.SVC_E2E_DUMP_DIR;
    if (dir !== undefined && dir !== '') {
      await mkdir(dir, { recursive: true });
      await appendFile(path.join(dir, `${path.basename(process.argv[1] ?? 'suite')}.log`), text);
    }
  });
}
