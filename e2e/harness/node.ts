/**
 * A real single-node Kubernetes cluster on this machine, started by the project itself from real
 * parts: etcd and kube-apiserver (built by `make deps`), kube-controller-manager, kube-scheduler,
 * kubelet, kube-proxy (iptables mode), CoreDNS and the sandbox's pause (built by
 * `tools/build.sh node`), containerd, runc and the CNI plugins from Debian's packages (installed
 * here when missing), a bridge network with host-local addresses and portmap.
 *
 * Unlike control-plane.ts (one throwaway control plane per test process), the node outlives the
 * command that started it: its daemons run detached, their pids and settings are kept in
 * `nodeDir()/state.json`, the next `startNode()` reuses a node that is still healthy, and
 * `stopNode()` ends every process the node started (containers included), unmounts what they
 * mounted and undoes its network and sysctl changes. Needs root.
 *
 * The entry point: the parts live in node/, one job per file (layout, packages, processes, pki,
 * containerd, network, control-plane, kubelet, images, coredns, kubectl, start, stop).
 */
export {
  CLUSTER_DOMAIN,
  COREDNS_IMAGE,
  DNS_IP,
  NODE_NAME,
  PAUSE_IMAGE,
  POD_CIDR,
  SERVICE_CIDR,
  imageCacheDir,
  nodeDir,
} from './node/layout.ts';
export type { Node, NodeOptions } from './node/layout.ts';
export { ensureHostPackages } from './node/packages.ts';
export { importImage, scratchImage } from './node/images.ts';
export { nodeKubectl } from './node/kubectl.ts';
export { nodeStatus, startNode } from './node/start.ts';
export { stopNode } from './node/stop.ts';
