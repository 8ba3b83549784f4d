/**
 * The gateway benchmark's processes: what it starts (nginx, gateways, Redis, the Node floor and
 * the byte pump), all stopped at the end, and what it asks of the machine's tools.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

const children: ChildProcess[] = [];

/** Whether `cmd` is on the PATH. */
export function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Starts a process of the run; its stderr is shown when it exits with an error. */
export function start(cmd: string, args: string[], log: string): ChildProcess {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString();
    if (err.length > 20_000) err = err.slice(-10_000);
  });
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`bench: ${log} exited with ${String(code)}:\n${err}`);
  });
  children.push(child);
  return child;
}

/** Stops every process the run started and waits for them to exit. */
export async function stopAll(): Promise<void> {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await Promise.all(
    children.map((c) =>
      c.exitCode === null ? new Promise((resolve) => c.once('exit', resolve)) : Promise.resolve(),
    ),
  );
}

/** The first line `cmd args` prints (its version), or 'unknown'. */
export function versionOf(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error !== undefined) return 'unknown';
  return (
    `${r.stdout}${r.stderr}`
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? 'unknown'
  );
}
