/** The kubelet's and kube-proxy's configuration files. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_DOMAIN, DNS_IP, NODE_NAME, POD_CIDR, binaries, paths, tool, versionOf } from './layout.ts';
import { nodeKubectl } from './kubectl.ts';
import { daemon, waitDaemon } from './processes.ts';

/**
 * The kubelet's configuration for a kubelet of Kubernetes 1.`minor`, with only the fields that
 * version knows (an older kubelet decodes unknown fields leniently and ignores them, a newer one
 * might refuse them): `podLogsDir` from 1.30, `failCgroupV1` from 1.31. Below 1.30 pod logs go to
 * the kubelet's fixed /var/log/pods.
 */
export function kubeletConfig(
  p: ReturnType<typeof paths>,
  nodeIp: string,
  minor: number,
): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine has cgroup v1, which the kubelet refuses by default since 1.35; the field is
    // of 1.31 and later, and older kubelets run on cgroup v1 without it.
    ...(minor >= 31 ? { failCgroupV1: false } : {}),
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    staticPodPath: p.manifests,
    ...(minor >= 30 ? { podLogsDir: p.podLogs } : {}),
    address: nodeIp,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: path.join(p.pki, 'ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    clusterDNS: [DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    // No upstream resolver for pods: the machine's is not theirs to use, cluster names suffice.
    resolvConf: '',
    failSwapOn: false,
    // Images are made here, not pulled: never collect them.
    imageGCHighThresholdPercent: 100,
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    serializeImagePulls: false,
    maxPods: 110,
  };
}

/** The Kubernetes minor of the kubelet the node runs (from its versioned file name). */
export function kubeletMinor(): number {
  const file = binaries().kubelet ?? 'missing';
  const v = versionOf(file);
  if (v === undefined)
    throw new Error(`node: cannot tell the kubelet's version from ${tool('kubelet')} (${file})`);
  return v.minor;
}

/** Writes config/kubelet.yaml for the kubelet the node runs. */
export async function writeKubeletConfig(dir: string, nodeIp: string): Promise<void> {
  await writeFile(
    path.join(paths(dir).config, 'kubelet.yaml'),
    stringify(kubeletConfig(paths(dir), nodeIp, kubeletMinor())),
  );
}

/** Writes config/kube-proxy.yaml (iptables mode). */
export async function writeKubeProxyConfig(dir: string, nodeIp: string, kubeconfig: string): Promise<void> {
  const p = paths(dir);
  await writeFile(
    path.join(p.config, 'kube-proxy.yaml'),
    stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig: kubeconfig },
      hostnameOverride: NODE_NAME,
      clusterCIDR: POD_CIDR,
      bindAddress: nodeIp,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      // Leave the machine's conntrack settings alone.
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    }),
  );
}

/** Starts the kubelet (registering as {@link NODE_NAME}) and kube-proxy; returns their pids. */
export function startKubeletAndProxy(
  dir: string,
  nodeIp: string,
  kubeconfig: string,
): { kubelet: number; 'kube-proxy': number } {
  const p = paths(dir);
  return {
    kubelet: daemon(dir, 'kubelet', tool('kubelet'), [
      `--config=${path.join(p.config, 'kubelet.yaml')}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${p.kubelet}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${nodeIp}`,
    ]),
    'kube-proxy': daemon(dir, 'kube-proxy', tool('kube-proxy'), [
      `--config=${path.join(p.config, 'kube-proxy.yaml')}`,
    ]),
  };
}

/** Waits until the Node object is Ready (the kubelet's pid: fails at once with its log if it died). */
export async function waitNodeReady(dir: string, kubeletPid: number): Promise<void> {
  await waitDaemon(
    `Node ${NODE_NAME} Ready`,
    dir,
    'kubelet',
    kubeletPid,
    async () => {
      const out = await nodeKubectl(
        ['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
        undefined,
        dir,
      );
      return out.trim() === 'True';
    },
    120_000,
  );
}
