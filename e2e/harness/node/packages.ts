/** The host's packages the node needs (Debian's), installed with apt-get when missing. */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * Host commands and the Debian package that brings each: everything the node and tools/images.sh
 * run that a minimal Debian lacks (checked on a machine where none of them was installed).
 * containerd brings ctr; util-linux (mount, nsenter, flock) is essential in Debian.
 */
export const HOST_PACKAGES: Record<string, string> = {
  containerd: 'containerd',
  runc: 'runc',
  '/usr/lib/cni/bridge': 'containernetworking-plugins',
  '/usr/lib/cni/portmap': 'containernetworking-plugins',
  '/usr/lib/cni/host-local': 'containernetworking-plugins',
  // kubelet and kube-proxy write iptables rules; kube-proxy clears UDP flows with conntrack.
  iptables: 'iptables',
  conntrack: 'conntrack',
  // The node's address (ip route/addr) and its bridge; br_netfilter for the bridge sysctls.
  ip: 'iproute2',
  modprobe: 'kmod',
  openssl: 'openssl',
  // Images (tools/images.sh): buildah builds them, debootstrap makes the Debian base.
  buildah: 'buildah',
  debootstrap: 'debootstrap',
};

function onPath(cmd: string): boolean {
  if (cmd.startsWith('/')) return existsSync(cmd);
  return (process.env.PATH ?? '')
    .split(':')
    .concat(['/usr/sbin', '/sbin'])
    .some((d) => existsSync(path.join(d, cmd)));
}

/** Another apt-get (a second test run, a person) may hold dpkg's lock: wait for it, not fail. */
const WAIT_FOR_LOCK = ['-o', 'DPkg::Lock::Timeout=600'];

/** apt-get installs the host packages that are missing (we are root on these machines). */
export async function ensureHostPackages(log: (m: string) => void): Promise<void> {
  const missing = [
    ...new Set(
      Object.entries(HOST_PACKAGES)
        .filter(([cmd]) => !onPath(cmd))
        .map(([, pkg]) => pkg),
    ),
  ];
  if (missing.length === 0) return;
  log(`apt-get install -y ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): Promise<unknown> =>
    execFileAsync('apt-get', [...WAIT_FOR_LOCK, 'install', '-y', '-q', ...missing], {
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
  try {
    await install();
  } catch {
    await execFileAsync('apt-get', [...WAIT_FOR_LOCK, 'update', '-q'], { env, maxBuffer: 64 * 1024 * 1024 });
    await install();
  }
}
