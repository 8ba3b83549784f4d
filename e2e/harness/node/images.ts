/**
 * Images of the node made here, never pulled: one static binary `from scratch` (pause, CoreDNS)
 * built with buildah into a cached OCI archive, and the import of an archive into the node's
 * containerd.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { imageCacheDir, nodeDir, paths, tool } from './layout.ts';
import { sh } from './processes.ts';

/** Hash of a file, for image tags and cache names. */
function fileHash(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
}

export function imageTag(binary: 'pause' | 'coredns'): string {
  return fileHash(tool(binary));
}

/**
 * An image made of one static binary (`from scratch`), built with buildah into an OCI archive
 * under imageCacheDir(), reused while the binary is the same. Returns the archive's path.
 */
export async function scratchImage(opts: {
  name: string;
  tag: string;
  binary: string;
  entrypoint: string[];
  user?: string;
}): Promise<string> {
  const cache = imageCacheDir();
  await mkdir(cache, { recursive: true });
  const archive = path.join(cache, `${opts.name.replace(/[/:]/g, '_')}-${opts.tag}.oci.tar`);
  if (existsSync(archive)) return archive;
  const ctr = (await sh('buildah', ['from', 'scratch'])).trim();
  try {
    await sh('buildah', ['copy', '--chmod', '0755', ctr, opts.binary, opts.entrypoint[0] ?? '/bin']);
    await sh('buildah', [
      'config',
      '--entrypoint',
      JSON.stringify(opts.entrypoint),
      '--user',
      opts.user ?? '65532:65532',
      ctr,
    ]);
    await sh('buildah', ['commit', '--quiet', ctr, `oci-archive:${archive}.tmp:${opts.name}:${opts.tag}`]);
  } finally {
    await sh('buildah', ['rm', ctr]).catch(() => undefined);
  }
  await sh('mv', [`${archive}.tmp`, archive]);
  return archive;
}

/** Imports an image archive (OCI or docker) into the node's containerd, namespace k8s.io. */
export async function importImage(archive: string, dir = nodeDir()): Promise<void> {
  await sh('ctr', [
    '-a',
    paths(dir).containerdSocket,
    '-n',
    'k8s.io',
    'images',
    'import',
    '--all-platforms',
    archive,
  ]);
}
