/**
 * Where the Bento binary is: the configured path, else the one `make deps` builds
 * (tools/build.sh: `$SVC_TOOLS_DIR`, else `$XDG_CACHE_HOME/svc-tools/bin`, else
 * `~/.cache/svc-tools/bin`, file `bento`).
 */
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { environment } from '../config.ts';

/** The directory tools/build.sh builds into, resolved as `tools/build.sh --print` resolves it. */
export function builtToolsDir(env: Readonly<Record<string, string | undefined>> = environment()): string {
  const explicit = env.SVC_TOOLS_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-tools', 'bin');
}

/** The Bento binary to run: `configured` when set, else the one `make deps` built. */
export function bentoPath(configured?: string): string {
  return configured !== undefined && configured !== '' ? configured : path.join(builtToolsDir(), 'bento');
}

/** Why the binary at `file` can't run, or undefined when it is an executable file. */
export function bentoMissing(file: string): string | undefined {
  try {
    accessSync(file, constants.X_OK);
    return undefined;
  } catch {
    return `the stream processor (Bento) is not installed at ${file}: run \`make deps\` (tools/build.sh builds it) or set streaming_bento_path (SVC_GW_STREAMING_BENTO_PATH)`;
  }
}
