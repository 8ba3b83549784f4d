/**
 * The node's processes: commands run to completion, daemons started detached with their output in
 * the node's logs, waiting on them (with their log's tail when they die), finding and ending them.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { waitFor } from '../../../lib/testing/wait.ts';
import { STOP_GRACE_MS, paths } from './layout.ts';

const execFileAsync = promisify(execFile);

export async function sh(cmd: string, args: string[], opts: { input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err !== null) {
        reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr.trim()}`));
      } else {
        resolve(stdout);
      }
    });
    // A command that exits without reading its stdin is reported through its exit code.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

export async function shOk(cmd: string, args: string[]): Promise<boolean> {
  try {
    await execFileAsync(cmd, args);
    return true;
  } catch {
    return false;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A process as itself, not only its pid (pids are reused: pid_max is 32768 here and the counter
 * wraps in minutes under a test run): `<pid>@<start time>`, the start time in clock ticks since
 * boot (field 22 of /proc/<pid>/stat); undefined once it is gone.
 */
export function processIdentity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: fields 3 on follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = fields[22 - 3];
    return start === undefined ? undefined : `${pid}@${start}`;
  } catch {
    return undefined;
  }
}

/** The pid still runs the command we started (pids are reused). */
export function ours(pid: number, dir: string, name: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(name) && cmdline.includes(dir);
  } catch {
    return false;
  }
}

export function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `(cannot read ${file}: ${String(err)})`;
  }
}

/** Starts a daemon detached from us, its output in logs/<name>.log. */
export function daemon(dir: string, name: string, bin: string, args: string[]): number {
  const logFile = path.join(paths(dir).logs, `${name}.log`);
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
    child.unref();
    if (child.pid === undefined) throw new Error(`node: ${name} did not start`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

export async function httpsGet(
  url: string,
  ca: Buffer,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ca, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` }, timeout: 5_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout GET ${url}`)));
    req.on('error', reject);
  });
}

/** Waits for `check`, failing at once with the daemon's log if it died. */
export async function waitDaemon(
  what: string,
  dir: string,
  name: string,
  pid: number,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  try {
    await waitFor(
      what,
      async () => {
        if (!alive(pid)) throw new Error(`${name} exited`);
        return await check().catch(() => false);
      },
      timeoutMs,
      250,
    );
  } catch (err) {
    const logFile = path.join(paths(dir).logs, `${name}.log`);
    throw new Error(
      `node: ${err instanceof Error ? err.message : String(err)}\nlog: ${logFile}\n--- last lines ---\n${tail(logFile)}`,
      { cause: err },
    );
  }
}

export function procsWithCmdline(match: (cmdline: string) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (match(cmdline)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

export function execFileSyncQuiet(cmd: string, args: string[]): void {
  // rmdir(2) on a cgroup dir; node's rmSync refuses non-empty-looking cgroup dirs.
  const res = spawnSync(cmd, args);
  if (res.status !== 0) throw new Error(`${cmd} failed`);
}

export async function killAndWait(pids: number[], what: string, log: (m: string) => void): Promise<void> {
  const live = pids.filter(alive);
  if (live.length === 0) return;
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Gone.
    }
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (Date.now() < deadline && live.some(alive)) await delay(100);
  const stubborn = live.filter(alive);
  for (const pid of stubborn) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  if (stubborn.length > 0) log(`${what}: killed ${stubborn.length} process(es) that ignored SIGTERM`);
  while (live.some(alive)) await delay(50);
}
