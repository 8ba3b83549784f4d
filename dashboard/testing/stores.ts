/**
 * The two storages as test fixtures, so that every suite that needs a store runs once on each:
 * SQLite in a temporary directory, and PostgreSQL on a server the suite starts itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../store/postgres.ts';
import { openSqliteStore } from '../store/sqlite.ts';
import type { Store } from '../store/store.ts';
import { startPostgres, type TestPostgres } from './postgres.ts';

/** One storage under test: opens fresh stores, or the same storage again (a restart). */
export interface StoreFixture {
  name: 'sqlite' | 'postgres';
  /** A new, empty storage location; the same `where` opens the same data again. */
  fresh(): Promise<string>;
  open(where: string, opts?: { now?: () => number }): Promise<Store>;
  /** Ends the PostgreSQL server and removes temporary files. */
  stop(): Promise<void>;
}

/** The SQLite fixture: a directory per storage. */
export function sqliteFixture(): StoreFixture {
  const root = mkdtempSync(join(tmpdir(), 'svc-db-sqlite-'));
  let n = 0;
  return {
    name: 'sqlite',
    fresh: () => Promise.resolve(join(root, `s${++n}`)),
    open: (dir, opts) => openSqliteStore(dir, opts),
    stop: () => {
      rmSync(root, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

/** The PostgreSQL fixture: one server for the suite, a database per storage. */
export function postgresFixture(): StoreFixture {
  let server: Promise<TestPostgres> | undefined;
  let n = 0;
  return {
    name: 'postgres',
    fresh: async () => {
      server ??= startPostgres();
      return (await server).createDatabase(`s${++n}`);
    },
    open: (url, opts) => openPostgresStore(url, opts),
    stop: async () => {
      if (server !== undefined) await (await server).stop();
    },
  };
}

/** Both fixtures, SQLite first. */
export function storeFixtures(): StoreFixture[] {
  return [sqliteFixture(), postgresFixture()];
}
