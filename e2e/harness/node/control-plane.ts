/**
 * The node's control plane as processes: etcd, kube-apiserver (serving on the node's address),
 * kube-controller-manager and kube-scheduler, each started detached with its log under logs/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  APISERVER_PORT,
  CLUSTER_DOMAIN,
  ETCD_PEER_PORT,
  ETCD_PORT,
  SERVICE_CIDR,
  paths,
  tool,
} from './layout.ts';
import type { User } from './pki.ts';
import { daemon, httpsGet, waitDaemon } from './processes.ts';

const etcdUrl = `http://127.0.0.1:${ETCD_PORT}`;

/** Starts etcd (no fsync: test data); returns its pid. */
export function startEtcd(dir: string): number {
  return daemon(dir, 'etcd', tool('etcd'), [
    '--name=svc-node',
    `--data-dir=${paths(dir).etcd}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`,
    `--initial-cluster=svc-node=http://127.0.0.1:${ETCD_PEER_PORT}`,
    '--unsafe-no-fsync',
    '--log-level=warn',
  ]);
}

/** Waits until etcd answers /health. */
export async function waitEtcd(dir: string, pid: number): Promise<void> {
  await waitDaemon(
    'etcd /health',
    dir,
    'etcd',
    pid,
    async () => {
      const res = await fetch(`${etcdUrl}/health`);
      return res.ok && (await res.text()).includes('"health":"true"');
    },
    30_000,
  );
}

/** Starts kube-apiserver on `<nodeIp>:6443` (tokens, RBAC and Node authorization); returns its pid. */
export function startApiserver(dir: string, nodeIp: string): number {
  const pki = (f: string): string => path.join(paths(dir).pki, f);
  return daemon(dir, 'kube-apiserver', tool('kube-apiserver'), [
    `--etcd-servers=${etcdUrl}`,
    `--bind-address=${nodeIp}`,
    `--advertise-address=${nodeIp}`,
    `--secure-port=${APISERVER_PORT}`,
    `--tls-cert-file=${pki('apiserver.crt')}`,
    `--tls-private-key-file=${pki('apiserver.key')}`,
    `--client-ca-file=${pki('ca.crt')}`,
    `--token-auth-file=${pki('tokens.csv')}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
    `--service-account-key-file=${pki('sa.pub')}`,
    `--service-account-signing-key-file=${pki('sa.key')}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
    `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
    '--kubelet-preferred-address-types=InternalIP',
  ]);
}

/** Waits until the apiserver answers /readyz. */
export async function waitApiserver(dir: string, pid: number, server: string): Promise<void> {
  const ca = readFileSync(path.join(paths(dir).pki, 'ca.crt'));
  await waitDaemon(
    'kube-apiserver /readyz',
    dir,
    'kube-apiserver',
    pid,
    async () => {
      const res = await httpsGet(`${server}/readyz`, ca);
      return res.status === 200;
    },
    90_000,
  );
}

/** Starts kube-controller-manager and kube-scheduler (no leader election: one of each). */
export function startControllers(
  dir: string,
  kubeconfigs: Record<User, string>,
): { 'kube-controller-manager': number; 'kube-scheduler': number } {
  const pki = (f: string): string => path.join(paths(dir).pki, f);
  const kcm = kubeconfigs['kube-controller-manager'];
  const scheduler = kubeconfigs['kube-scheduler'];
  return {
    'kube-controller-manager': daemon(dir, 'kube-controller-manager', tool('kube-controller-manager'), [
      `--kubeconfig=${kcm}`,
      `--authentication-kubeconfig=${kcm}`,
      `--authorization-kubeconfig=${kcm}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki('sa.key')}`,
      `--root-ca-file=${pki('ca.crt')}`,
      `--cluster-signing-cert-file=${pki('ca.crt')}`,
      `--cluster-signing-key-file=${pki('ca.key')}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller',
    ]),
    'kube-scheduler': daemon(dir, 'kube-scheduler', tool('kube-scheduler'), [
      `--kubeconfig=${scheduler}`,
      `--authentication-kubeconfig=${scheduler}`,
      `--authorization-kubeconfig=${scheduler}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ]),
  };
}
