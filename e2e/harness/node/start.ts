/**
 * Starting the node, or reusing the one running: the order of the parts (host packages, TLS,
 * configuration, etcd and containerd, the apiserver, controllers, the node's own images, kubelet
 * and kube-proxy, CoreDNS), each recorded in state.json as it starts so a failed start can be
 * stopped; and the node's health.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { deployCoreDns, importNodeImages } from './coredns.ts';
import { startContainerd, waitContainerd, writeContainerdConfig } from './containerd.ts';
import { startApiserver, startControllers, startEtcd, waitApiserver, waitEtcd } from './control-plane.ts';
import { nodeKubectl } from './kubectl.ts';
import { startKubeletAndProxy, waitNodeReady, writeKubeProxyConfig, writeKubeletConfig } from './kubelet.ts';
import {
  APISERVER_PORT,
  KUBE_TOOLS,
  NODE_NAME,
  TOOLS,
  binaries,
  nodeDir,
  paths,
  readState,
  tool,
  versionOf,
} from './layout.ts';
import type { Node, NodeOptions, NodeState } from './layout.ts';
import { detectNodeIp, setSysctl, writeCniConfig } from './network.ts';
import { ensureHostPackages } from './packages.ts';
import { makePki, writeKubeconfigs } from './pki.ts';
import { alive, ours } from './processes.ts';
import { withNodeLock } from './lock.ts';
import { stopNodeUnlocked } from './stop.ts';
import { kubeVersion } from '../control-plane.ts';

/** The node's health: every daemon alive and the apiserver ready. */
async function healthy(dir: string, state: NodeState): Promise<boolean> {
  for (const [name, pid] of Object.entries(state.pids)) {
    if (!alive(pid) || !ours(pid, dir, name)) return false;
  }
  try {
    await nodeKubectl(['get', '--raw', '/readyz'], undefined, dir);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts the node, or returns the one already running. Builds nothing: the binaries come from
 * `make deps` and `tools/build.sh node` (`make node` runs both). With `SVC_KUBE_VERSION` its
 * Kubernetes binaries are that version's (`SVC_KUBE_VERSION=<tag> tools/build.sh` and `... node`),
 * and a node running another version is stopped and started again at this one.
 */
export async function startNode(opts: NodeOptions = {}): Promise<Node> {
  const started = Date.now();
  const log = (m: string): void => {
    if (opts.verbose === true)
      process.stderr.write(`node: ${m} (${((Date.now() - started) / 1000).toFixed(1)}s)\n`);
  };
  const dir = nodeDir();
  const p = paths(dir);
  const info = (state: NodeState, reused: boolean): Node => ({
    server: state.server,
    kubeconfig: p.kubeconfig,
    dir,
    nodeIp: state.nodeIp,
    containerdSocket: p.containerdSocket,
    reused,
    readyAfterMs: state.readyAfterMs,
    kubeVersion:
      state.kubeVersion ?? versionOf(state.binaries?.['kube-apiserver'] ?? '')?.version ?? 'unknown',
  });

  const running = await readState(dir);
  if (running !== undefined && sameBinaries(running).length === 0 && (await healthy(dir, running))) {
    log(`reusing the node running since ${running.startedAt}`);
    return info(running, true);
  }
  return withNodeLock(dir, () => startLocked(dir, info, log, started), log);
}

/** The binaries a node's state records that differ from the ones built: `kubelet (a -> b)`. */
function sameBinaries(state: NodeState): string[] {
  return Object.entries(binaries())
    .filter(([t, file]) => state.binaries !== undefined && state.binaries[t] !== file)
    .map(([t, file]) => `${t} (${state.binaries?.[t] ?? '?'} -> ${file})`);
}

/** startNode under the lock: another process may have started the node meanwhile. */
async function startLocked(
  dir: string,
  info: (state: NodeState, reused: boolean) => Node,
  log: (m: string) => void,
  started: number,
): Promise<Node> {
  const p = paths(dir);
  const previous = await readState(dir);
  if (previous !== undefined) {
    const changed = sameBinaries(previous);
    if (changed.length === 0 && (await healthy(dir, previous))) {
      log(`reusing the node running since ${previous.startedAt}`);
      return info(previous, true);
    }
    log(
      changed.length > 0
        ? `the running node runs other binaries than the ones built: ${changed.join(', ')}; restarting it`
        : 'a previous node is not healthy: stopping what is left of it',
    );
    await stopNodeUnlocked(log);
  }
  if (process.getuid?.() !== 0) throw new Error('node: must run as root (containerd, kubelet, iptables)');
  const version = kubeVersion();
  for (const t of TOOLS) {
    if (!existsSync(tool(t))) {
      throw new Error(
        version !== undefined && KUBE_TOOLS.includes(t)
          ? `node: ${t} ${version} not found at ${tool(t)}; run \`SVC_KUBE_VERSION=${version} tools/build.sh\` and \`SVC_KUBE_VERSION=${version} tools/build.sh node\``
          : `node: ${t} not found at ${tool(t)}; run \`make node\` (make deps, then tools/build.sh node)`,
      );
    }
  }
  await ensureHostPackages(log);
  const nodeIp = await detectNodeIp();
  const server = `https://${nodeIp}:${APISERVER_PORT}`;
  const state: NodeState = {
    nodeIp,
    server,
    pids: {},
    sysctls: {},
    startedAt: new Date().toISOString(),
    readyAfterMs: 0,
    binaries: binaries(),
  };

  // Everything but the logs of a previous run is rebuilt.
  for (const d of Object.values(p)) {
    if (d !== p.logs && d !== p.state && d !== p.kubeconfig && d !== p.containerdSocket) {
      await rm(d, { recursive: true, force: true });
    }
  }
  await rm(p.logs, { recursive: true, force: true });
  for (const d of [p.logs, p.config, p.manifests, p.podLogs, p.cniConf, p.cniIpam, p.kubelet, p.containerd]) {
    await mkdir(d, { recursive: true });
  }
  const save = (): Promise<void> => writeFile(p.state, JSON.stringify(state, null, 2));

  try {
    await makePki(p.pki, nodeIp);
    const kubeconfigs = await writeKubeconfigs(dir, server);
    await writeContainerdConfig(dir);
    await writeCniConfig(dir);
    await writeKubeletConfig(dir, nodeIp);
    await writeKubeProxyConfig(dir, nodeIp, kubeconfigs['kube-proxy']);
    await setSysctl('net.ipv4.ip_forward', '1', state.sysctls);
    await setSysctl('net.bridge.bridge-nf-call-iptables', '1', state.sysctls);
    await save();

    state.pids.etcd = startEtcd(dir);
    await save();
    // containerd starts beside etcd: they do not depend on each other.
    state.pids.containerd = startContainerd(dir);
    await save();
    await waitEtcd(dir, state.pids.etcd);
    log('etcd healthy');

    state.pids['kube-apiserver'] = startApiserver(dir, nodeIp);
    await save();
    await waitApiserver(dir, state.pids['kube-apiserver'], server);
    log('kube-apiserver ready');

    Object.assign(state.pids, startControllers(dir, kubeconfigs));
    await save();

    await waitContainerd(dir, state.pids.containerd);
    log('containerd up');
    await importNodeImages(dir);
    log('pause and coredns images imported');

    const { kubelet, 'kube-proxy': proxy } = startKubeletAndProxy(dir, nodeIp, kubeconfigs.kubelet);
    state.pids.kubelet = kubelet;
    state.pids['kube-proxy'] = proxy;
    await save();

    await waitNodeReady(dir, kubelet);
    state.kubeVersion = await servedVersion(dir, state);
    await save();
    log(`node ${NODE_NAME} Ready (Kubernetes ${state.kubeVersion})`);

    await deployCoreDns(dir, kubelet);
    state.readyAfterMs = Date.now() - started;
    await save();
    log('CoreDNS available: the node is ready');
    return info(state, false);
  } catch (err) {
    await save().catch(() => undefined);
    throw err;
  }
}

/**
 * The version the apiserver and the kubelet answer; fails unless both are the version of the
 * binaries started (`SVC_KUBE_VERSION`'s when set), so no suite passes on another one by mistake.
 */
async function servedVersion(dir: string, state: NodeState): Promise<string> {
  const wanted = versionOf(state.binaries?.['kube-apiserver'] ?? '')?.version;
  const apiserver = (
    JSON.parse(await nodeKubectl(['get', '--raw', '/version'], undefined, dir)) as { gitVersion?: string }
  ).gitVersion;
  const kubelet = (
    await nodeKubectl(
      ['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.nodeInfo.kubeletVersion}'],
      undefined,
      dir,
    )
  ).trim();
  if (wanted === undefined || apiserver !== wanted || kubelet !== wanted) {
    throw new Error(
      `node: expected Kubernetes ${String(wanted)} (${tool('kube-apiserver')}); the apiserver answers ${String(apiserver)}, the kubelet ${kubelet}`,
    );
  }
  return apiserver;
}

/** Whether a node is running and healthy, and its kubeconfig. */
export async function nodeStatus(): Promise<{ running: boolean; kubeconfig?: string; server?: string }> {
  const dir = nodeDir();
  const state = await readState(dir);
  if (state === undefined || !(await healthy(dir, state))) return { running: false };
  return { running: true, kubeconfig: paths(dir).kubeconfig, server: state.server };
}
