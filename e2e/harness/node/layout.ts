/**
 * Where the node lives and what it is made of: its fixed addresses and names, its directory and
 * the files in it, the binaries it runs, and the state a started node records.
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { kubeToolsDir, toolsDir } from '../control-plane.ts';

/** Name of the Node object the kubelet registers. */
export const NODE_NAME = 'svc-node';
/** The pods' addresses (one node: one host-local range on one bridge). */
export const POD_CIDR = '10.244.0.0/24';
/** ClusterIPs; the first is the `kubernetes` Service, `DNS_IP` is kube-dns. */
export const SERVICE_CIDR = '10.96.0.0/16';
export const DNS_IP = '10.96.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
export const APISERVER_PORT = 6443;
// Below the ephemeral range (32768+), so no test's free port takes them.
export const ETCD_PORT = 12379;
export const ETCD_PEER_PORT = 12380;
export const BRIDGE = 'svc-cni0';
export const CNI_NETWORK = 'svc-node';
/** Image names in the node's containerd (namespace k8s.io); made here, never pulled. */
export const PAUSE_IMAGE = 'localhost/svc/pause';
export const COREDNS_IMAGE = 'localhost/svc/coredns';

export const STOP_GRACE_MS = 10_000;

/** What `state.json` records about a started node. */
export interface NodeState {
  nodeIp: string;
  server: string;
  pids: Record<string, number>;
  /** sysctls as they were before the node changed them, restored by stopNode. */
  sysctls: Record<string, string>;
  startedAt: string;
  readyAfterMs: number;
  /** The binaries it runs (versioned file names): a node running others is not reused. */
  binaries?: Record<string, string>;
  /** The Kubernetes version its apiserver and kubelet answer (`v1.28.15`). */
  kubeVersion?: string;
}

/** A running node. */
export interface Node {
  /** `https://<node ip>:6443`. */
  server: string;
  /** Admin kubeconfig (group system:masters). */
  kubeconfig: string;
  /** The node's directory: data, configs, logs. */
  dir: string;
  nodeIp: string;
  /** The node's containerd socket (for `ctr -a`). */
  containerdSocket: string;
  /** Whether this call found the node already running. */
  reused: boolean;
  /** Milliseconds from the start until the Node and CoreDNS were Ready (of the run that started it). */
  readyAfterMs: number;
  /** The Kubernetes version its apiserver and kubelet answer (`v1.36.3`; `SVC_KUBE_VERSION`'s when set). */
  kubeVersion: string;
}

/** Options of {@link startNode}. */
export interface NodeOptions {
  /** Progress on stderr. */
  verbose?: boolean;
}

/** The node's directory: `SVC_NODE_DIR`, else `~/.cache/svc-node` (outside the repository). */
export function nodeDir(): string {
  const explicit = process.env.SVC_NODE_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = process.env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-node');
}

/** Where images made here are cached as OCI archives, named by a hash of their content. */
export function imageCacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-images');
}

export const paths = (dir: string) => ({
  state: path.join(dir, 'state.json'),
  pki: path.join(dir, 'pki'),
  logs: path.join(dir, 'logs'),
  kubeconfig: path.join(dir, 'kubeconfig'),
  etcd: path.join(dir, 'etcd'),
  containerd: path.join(dir, 'containerd'),
  containerdSocket: path.join(dir, 'containerd', 'containerd.sock'),
  kubelet: path.join(dir, 'kubelet'),
  manifests: path.join(dir, 'manifests'),
  podLogs: path.join(dir, 'pod-logs'),
  cni: path.join(dir, 'cni'),
  cniConf: path.join(dir, 'cni', 'net.d'),
  cniIpam: path.join(dir, 'cni', 'ipam'),
  config: path.join(dir, 'config'),
});

/**
 * Binaries: etcd, kube-apiserver and kubectl from `make deps`, the rest from `tools/build.sh node`;
 * those of {@link KUBE_TOOLS} from `SVC_KUBE_VERSION`'s folder when it is set.
 */
export const TOOLS = [
  'etcd',
  'kube-apiserver',
  'kubectl',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
  'coredns',
  'pause',
] as const;
export type Tool = (typeof TOOLS)[number];

/**
 * The node's Kubernetes binaries: of `SVC_KUBE_VERSION` when it is set (built by
 * `SVC_KUBE_VERSION=<tag> tools/build.sh` and `... tools/build.sh node` into their own folder),
 * else of the default version. etcd, kubectl, CoreDNS and pause are the default's whatever the version.
 */
export const KUBE_TOOLS: readonly Tool[] = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
];

export function tool(name: Tool): string {
  return path.join(KUBE_TOOLS.includes(name) ? kubeToolsDir() : toolsDir(), name);
}

/**
 * The Kubernetes version in a versioned binary's file name (`kubelet-v1.28.15` -> `{ version:
 * 'v1.28.15', minor: 28 }`); undefined for a name without one.
 */
export function versionOf(file: string): { version: string; minor: number } | undefined {
  const m = /-(v1\.(\d+)\.\d+)$/.exec(file);
  return m === null ? undefined : { version: m[1] ?? '', minor: Number(m[2]) };
}

/** The versioned file each tool's link points at (`kubelet-v1.36.3`): what a running node runs. */
export function binaries(): Record<string, string> {
  return Object.fromEntries(
    TOOLS.map((t) => {
      try {
        return [t, path.basename(realpathSync(tool(t)))];
      } catch {
        return [t, 'missing'];
      }
    }),
  );
}

export async function readState(dir: string): Promise<NodeState | undefined> {
  try {
    return JSON.parse(await readFile(paths(dir).state, 'utf8')) as NodeState;
  } catch {
    return undefined;
  }
}
