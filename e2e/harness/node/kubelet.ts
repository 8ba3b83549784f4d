/** The kubelet's and kube-proxy's configuration files. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_DOMAIN, DNS_IP, NODE_NAME, POD_CIDR, paths, tool } from './layout.ts';
import { nodeKubectl } from './kubectl.ts';
import { daemon, waitDaemon } from './processes.ts';

/** Writes config/kubelet.yaml. */
export async function writeKubeletConfig(dir: string, nodeIp: string): Promise<void> {
  const p = paths(dir);
  await writeFile(
    path.join(p.config, 'kubelet.yaml'),
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // This machine has cgroup v1, which the kubelet refuses by default since 1.35.
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
      staticPodPath: p.manifests,
      podLogsDir: p.podLogs,
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
    }),
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
