/**
 * The node's own containerd (its own root, state, socket and runc root, beside any containerd of
 * the machine): its configuration, with the CRI plugin set for this kind of machine.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PAUSE_IMAGE, paths } from './layout.ts';
import { imageTag } from './images.ts';
import { daemon, shOk, waitDaemon } from './processes.ts';

/** Writes config/containerd.toml. */
export async function writeContainerdConfig(dir: string): Promise<void> {
  const p = paths(dir);
  await writeFile(
    path.join(p.config, 'containerd.toml'),
    `# The test node's own containerd: its own root, state, socket and runc root.
version = 2
root = "${path.join(p.containerd, 'root')}"
state = "${path.join(p.containerd, 'state')}"
[grpc]
  address = "${p.containerdSocket}"
[ttrpc]
  address = "${p.containerdSocket}.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "${path.join(p.containerd, 'opt')}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}:${imageTag('pause')}"
  # Processes here lack CAP_SYS_RESOURCE: a sandbox asking for oom_score_adj -998 fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${path.join(p.containerd, 'runc')}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${p.cniConf}"
`,
  );
}

/** Starts the node's containerd; returns its pid. */
export function startContainerd(dir: string): number {
  return daemon(dir, 'containerd', 'containerd', [
    '--config',
    path.join(paths(dir).config, 'containerd.toml'),
  ]);
}

/** Waits until containerd answers on its socket. */
export async function waitContainerd(dir: string, pid: number): Promise<void> {
  await waitDaemon(
    'containerd socket',
    dir,
    'containerd',
    pid,
    () => shOk('ctr', ['-a', paths(dir).containerdSocket, 'version']),
    30_000,
  );
}
