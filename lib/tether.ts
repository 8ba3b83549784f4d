/**
 * Children that end when their parent ends, however the parent ends (SIGKILL, the OOM killer, a
 * crash: no exit handler runs then). Linux's PR_SET_PDEATHSIG is not reachable from Node without
 * native code, so each child gets a watcher: a small `sh` holding the read end of a pipe whose
 * only write end is in this process. When this process ends, the kernel closes the write end, the
 * watcher's read returns, and it stops the child (SIGTERM, then SIGKILL after a grace period).
 * While this process lives the watcher does nothing; once the child has exited it is killed, so it
 * never signals a process ID that may have been reused.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';

/** How long a child has, once its parent is gone, between SIGTERM and SIGKILL (seconds). */
export const ORPHAN_GRACE_S = 2;

// `read` returns at end of file (the parent gone). The watcher ignores SIGINT: Ctrl-C in a terminal
// reaches the whole process group, and the watcher must outlive that to stop a child that ignores
// it. $1: the child's PID, $2: the grace period.
const WATCHER = [
  "trap '' INT",
  'read -r _ || :',
  'kill -TERM "$1" 2>/dev/null || exit 0',
  'i=0',
  'while [ "$i" -lt "$2" ] && kill -0 "$1" 2>/dev/null; do sleep 1; i=$((i + 1)); done',
  'kill -KILL "$1" 2>/dev/null',
  'exit 0',
].join('\n');

/**
 * Ties `child` to this process: it is stopped when this process ends, whatever ends it. Returns
 * the watcher (tests look at it; callers need not).
 */
export function tether(child: ChildProcess, graceS = ORPHAN_GRACE_S): ChildProcess | undefined {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return undefined;
  const watcher = spawn('/bin/sh', ['-c', WATCHER, 'svc-tether', String(pid), String(graceS)], {
    // stdin: the pipe; its write end stays here, unread and unwritten, until this process ends.
    stdio: ['pipe', 'ignore', 'ignore'],
    env: {},
  });
  watcher.on('error', () => undefined);
  const pipe = watcher.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null;
  pipe?.on('error', () => undefined);
  // Neither keeps this process alive.
  watcher.unref();
  pipe?.unref?.();
  child.once('exit', () => {
    watcher.kill('SIGKILL');
  });
  return watcher;
}
