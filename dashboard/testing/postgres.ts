/**
 * A PostgreSQL server of its own for a test: `initdb` into a temporary directory and `postgres`
 * on a free port (Debian's binaries under /usr/lib/postgresql/<version>/bin), never the
 * machine's shared server. PostgreSQL refuses to run as root, so as root both run as the
 * `postgres` user (setpriv, which execs it: signals reach the server itself), which then owns the directory.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitFor } from '../../lib/testing/wait.ts';

/** A running test server. */
export interface TestPostgres {
  /** `postgres://svc@127.0.0.1:<port>/postgres`; no password (trust, loopback only). */
  url: string;
  /** A fresh empty database on the server, as a URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** The newest Debian PostgreSQL `bin` directory, or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** Starts PostgreSQL in a temporary directory; `stop` ends it and removes the directory. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error('PostgreSQL is not installed: apt-get install postgresql');
  const dir = mkdtempSync(join(tmpdir(), 'svc-db-pg-'));
  const asRoot = userInfo().uid === 0;
  const cmd = (exe: string, args: string[]): [string, string[]] =>
    asRoot
      ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', join(bin, exe), ...args]]
      : [join(bin, exe), args];
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const [initExe, initArgs] = cmd('initdb', [
    '-D',
    data,
    '-U',
    'svc',
    '-A',
    'trust',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  execFileSync(initExe, initArgs, { stdio: 'pipe' });
  const port = await freePort();
  const [exe, args] = cmd('postgres', [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=50',
  ]);
  const proc: ChildProcess = spawn(exe, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      resolve();
    }),
  );
  const url = `postgres://svc@127.0.0.1:${port}/postgres`;
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGINT'); // fast shutdown
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      `postgres on port ${port}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
        const c = new pg.Client({ connectionString: url });
        try {
          await c.connect();
          await c.query('SELECT 1');
          return true;
        } finally {
          await c.end().catch(() => undefined);
        }
      },
      60_000,
      100,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    createDatabase: async (name) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      } finally {
        await c.end();
      }
      return `postgres://svc@127.0.0.1:${port}/${name}`;
    },
    stop,
  };
}
