/**
 * Stopping the node: its processes (containers included), its mounts, cgroups, bridge, iptables
 * chains and sysctls, and its data.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { nodeDir, paths, readState, tool } from './layout.ts';
import type { NodeOptions } from './layout.ts';
import { withNodeLock } from './lock.ts';
import { removeBridge, removeChains } from './network.ts';
import { execFileSyncQuiet, killAndWait, ours, procsWithCmdline, sh } from './processes.ts';

/** Every process in the kubelet's pod cgroups (containers and their children). */
export function podProcesses(): number[] {
  const pids = new Set<number>();
  const walk = (d: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(d);
    } catch {
      return;
    }
    try {
      for (const line of readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n')) {
        if (line !== '') pids.add(Number(line));
      }
    } catch {
      // Not a cgroup dir.
    }
    for (const e of entries) {
      const sub = path.join(d, e);
      try {
        if (statSync(sub).isDirectory()) walk(sub);
      } catch {
        // Removed meanwhile.
      }
    }
  };
  walk('/sys/fs/cgroup/pids/kubepods');
  return [...pids];
}

/** Removes the kubelet's cgroups (deepest first) in every v1 hierarchy, once they hold no process. */
function removePodCgroups(): void {
  let hierarchies: string[];
  try {
    hierarchies = readdirSync('/sys/fs/cgroup');
  } catch {
    return;
  }
  const rmdirDeep = (d: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) rmdirDeep(path.join(d, e));
    try {
      execFileSyncQuiet('rmdir', [d]);
    } catch {
      // Still busy: left for the next stop.
    }
  };
  for (const h of hierarchies) {
    const root = path.join('/sys/fs/cgroup', h, 'kubepods');
    if (existsSync(root)) rmdirDeep(root);
  }
}

/**
 * Stops the node: the kubelet, every container, containerd and its shims, kube-proxy (and its
 * iptables rules), the control plane; unmounts everything mounted under the node's directory
 * and the pods' network namespaces; removes the bridge, the CNI's iptables chains and the pod
 * cgroups; restores the sysctls; deletes the node's data (its logs stay in `logs/`).
 */
export async function stopNode(opts: NodeOptions = {}): Promise<void> {
  const log = (m: string): void => {
    if (opts.verbose === true) process.stderr.write(`node: ${m}\n`);
  };
  await withNodeLock(nodeDir(), () => stopNodeUnlocked(log), log);
}

/** {@link stopNode} for a caller holding the node's lock (a start replacing a broken node). */
export async function stopNodeUnlocked(log: (m: string) => void): Promise<void> {
  const dir = nodeDir();
  const p = paths(dir);
  const state = await readState(dir);
  const pidOf = (name: string): number[] => {
    const pid = state?.pids[name];
    const listed = pid !== undefined && ours(pid, dir, name) ? [pid] : [];
    // Also any copy started against this dir whose pid was not recorded (a start that crashed),
    // of whichever version (a node of another SVC_KUBE_VERSION ran another folder's binaries).
    const started = (c: string): boolean => path.basename(c.split(' ')[0] ?? '') === name && c.includes(dir);
    return [...new Set([...listed, ...procsWithCmdline(started)])];
  };

  await killAndWait(pidOf('kubelet'), 'kubelet', log);
  // Containers: SIGKILL, as the kubelet is no longer there to stop them gracefully.
  for (const pid of podProcesses()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  const shims = procsWithCmdline((c) => c.includes('containerd-shim') && c.includes(p.containerdSocket));
  const containerd = state?.pids.containerd;
  await killAndWait(
    [...shims, ...(containerd !== undefined && ours(containerd, dir, 'containerd') ? [containerd] : [])],
    'containerd',
    log,
  );
  await killAndWait(pidOf('kube-proxy'), 'kube-proxy', log);
  if (existsSync(tool('kube-proxy'))) {
    // Removes the KUBE-* chains and rules kube-proxy wrote.
    await sh(tool('kube-proxy'), ['--cleanup']).catch((err: unknown) => {
      log(`kube-proxy --cleanup: ${String(err)}`);
    });
  }
  for (const name of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
    await killAndWait(pidOf(name), name, log);
  }

  // Mounts: the kubelet's volumes, containerd's rootfs and shm, the pods' netns; deepest first.
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const mounts = mountinfo
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`) || /^\/(var\/)?run\/netns\/cni-/.test(m))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) {
    await sh('umount', [m]).catch(() => sh('umount', ['-l', m]).catch(() => undefined));
  }
  for (const netns of existsSync('/run/netns') ? readdirSync('/run/netns') : []) {
    if (netns.startsWith('cni-')) await rm(path.join('/run/netns', netns), { force: true });
  }
  if (mounts.length > 0) log(`unmounted ${mounts.length} mount(s)`);

  removePodCgroups();
  await removeBridge();
  await removeChains();
  for (const [key, value] of Object.entries(state?.sysctls ?? {})) {
    await writeFile(path.join('/proc/sys', key.replaceAll('.', '/')), value).catch(() => undefined);
  }
  for (const d of Object.values(p)) {
    if (d !== p.logs) await rm(d, { recursive: true, force: true, maxRetries: 3 });
  }
  log('stopped');
}
