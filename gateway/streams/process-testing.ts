/**
 * For tests of a gateway's Bento as a process: which Bento processes run under a gateway process
 * (`ps`), and which loopback ports one listens on (its configuration file).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Processes whose parent is `ppid`, as `pid command` pairs. */
export function children(ppid: number): { pid: number; command: string }[] {
  let out: string;
  try {
    out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(ppid)], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [pid = '0', command = ''] = l.trim().split(/\s+/);
      return { pid: Number(pid), command };
    });
}

/** The Bento processes anywhere under process `root`. */
export function bentosUnder(root: number): number[] {
  const found: number[] = [];
  const walk = (pid: number): void => {
    for (const c of children(pid)) {
      if (c.command.startsWith('bento')) found.push(c.pid);
      walk(c.pid);
    }
  };
  walk(root);
  return found;
}

/** Whether process `pid` exists (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The loopback ports Bento `pid` was configured to listen on (`-c <file>`, `http.address`). */
export function bentoPorts(pid: number): number[] {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const conf = args[args.indexOf('-c') + 1];
  if (conf === undefined) return [];
  const text = readFileSync(conf, 'utf8');
  return [...text.matchAll(/address: 127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
}
