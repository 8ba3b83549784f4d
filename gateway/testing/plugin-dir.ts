/**
 * A plugin directory for tests (`--plugin-dir`): a new temporary directory holding the files a
 * test writes into it.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A new temporary directory, its name starting with `prefix`, holding `files`: each path
 * (relative to it, folders made as needed) with its text.
 */
export async function pluginDirWith(
  prefix: string,
  files: Readonly<Record<string, string>>,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}
