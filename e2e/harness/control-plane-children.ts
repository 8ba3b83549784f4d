/**
 * The processes of a local control plane (etcd, kube-apiserver) as children of this process: each
 * logs to a file, is tethered (it ends with this process, SIGKILL included), is reported when it
 * dies unexpectedly, and is stopped (SIGTERM, then SIGKILL) with every control plane on SIGINT or
 * SIGTERM; the control planes' folders are removed at exit unless SVC_KEEP_CLUSTER_DIR is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { tether } from '../../lib/tether.ts';

const STOP_GRACE_MS = 5_000;
const LOG_TAIL_LINES = 30;

/** Reads the last lines of a log file for error messages; never throws. */
export function tail(file: string, lines = LOG_TAIL_LINES): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd();
    return text.split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `(cannot read ${file}: ${String(err)})`;
  }
}

/** A child process whose stdout and stderr go to a log file. */
export class Child {
  readonly name: string;
  readonly logFile: string;
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  running = true;
  /** Set while we stop it on purpose, so its exit is not reported as a crash. */
  stopping = false;
  /** Set once startup is over; before that, a death surfaces as startControlPlane's error instead. */
  reportCrash = false;
  exitDescription = '';

  constructor(name: string, bin: string, args: string[], logFile: string) {
    this.name = name;
    this.logFile = logFile;
    // A file (not a pipe) so the log survives our own crash and a busy event loop cannot stall the child.
    const fd = openSync(logFile, 'a');
    try {
      this.proc = spawn(bin, args, { stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    // However this process ends, SIGKILL included, etcd and kube-apiserver end with it.
    tether(this.proc);
    liveChildren.add(this);
    this.exited = new Promise((resolve) => {
      const done = (description: string): void => {
        if (!this.running) return;
        this.running = false;
        this.exitDescription = description;
        liveChildren.delete(this);
        if (this.reportCrash && !this.stopping && !shuttingDown) {
          process.stderr.write(`control-plane: ${name} ${description} unexpectedly; log: ${logFile}\n`);
        }
        resolve();
      };
      this.proc.once('exit', (code, signal) => {
        done(signal !== null ? `was killed by ${signal}` : `exited with code ${code ?? '?'}`);
      });
      this.proc.once('error', (err) => {
        done(`failed to start (${err.message})`);
      });
    });
  }

  /** Error naming the process, its log and the log's tail. */
  failure(message: string): Error {
    return new Error(
      `${this.name}: ${message}\nlog: ${this.logFile}\n--- last lines ---\n${tail(this.logFile)}`,
    );
  }

  async waitExit(ms: number): Promise<boolean> {
    if (!this.running) return true;
    const timeout = new AbortController();
    try {
      return await Promise.race([this.exited.then(() => true), delay(ms, false, { signal: timeout.signal })]);
    } finally {
      timeout.abort();
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited within the grace period. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.proc.kill('SIGTERM');
    if (await this.waitExit(STOP_GRACE_MS)) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }
}

/** Children still running, killed synchronously when the process exits for any reason. */
const liveChildren = new Set<Child>();
/** Temp dirs to remove on exit if their control plane was not stopped. */
export const ownedDirs = new Set<string>();
export const livePlanes = new Set<{ stop(): Promise<void> }>();
let hooksInstalled = false;
/** Set on SIGINT/SIGTERM: the terminal's Ctrl-C also reaches the children, so their exit is expected. */
let shuttingDown = false;

export function keepDirs(): boolean {
  const keep = process.env.SVC_KEEP_CLUSTER_DIR;
  return keep !== undefined && keep !== '';
}

export function installProcessHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // 'exit' handlers must be synchronous: no graceful stop, just make sure nothing outlives us.
  process.on('exit', () => {
    for (const child of liveChildren) child.proc.kill('SIGKILL');
    if (keepDirs()) return;
    for (const dir of ownedDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // Best effort: a killed child may still be closing files.
      }
    }
  });
  const onSignal = (signal: NodeJS.Signals, code: number): void => {
    // Another listener (e.g. cluster-main) owns the exit; we only make sure the children go.
    const othersListen = process.listenerCount(signal) > 1;
    // A second Ctrl-C means "now": the 'exit' hook still SIGKILLs the children.
    if (shuttingDown && !othersListen) process.exit(code);
    shuttingDown = true;
    void stopEverything().finally(() => {
      if (!othersListen) process.exit(code);
    });
  };
  process.on('SIGINT', () => {
    onSignal('SIGINT', 130);
  });
  process.on('SIGTERM', () => {
    onSignal('SIGTERM', 143);
  });
}

async function stopEverything(): Promise<void> {
  await Promise.allSettled([...livePlanes].map((plane) => plane.stop()));
  await Promise.allSettled([...liveChildren].map((child) => child.stop()));
}
