/**
 * The dashboard process (mode pro): configuration, logger, store (migrated at open), server.
 * Wiring only. `node dashboard/main.ts --admin-secret ... [--storage postgres --postgres-url ...]`
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../lib/config.ts';
import { errorMessage } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { COMPONENT, loadDashboardConfig } from './config/load.ts';
import { startDashboard } from './server.ts';
import { openPostgresStore } from './store/postgres.ts';
import { openSqliteStore } from './store/sqlite.ts';
import type { Store } from './store/store.ts';

const version = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

let config;
try {
  config = loadDashboardConfig({ argv: process.argv.slice(2) });
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : errorMessage(err)}\n`);
  process.exit(2);
}
const log = createLogger({ component: COMPONENT, level: config.log_level });

let store: Store;
try {
  store =
    config.storage === 'postgres'
      ? await openPostgresStore(config.postgres_url ?? '')
      : await openSqliteStore(config.data_dir);
} catch (err) {
  log.error('store failed to open', { storage: config.storage, error: errorMessage(err) });
  process.exit(1);
}
log.info('store open', { storage: store.kind, schema_version: await store.schemaVersion() });

const server = await startDashboard({ config, store, log, version, now: Date.now });

const stop = (signal: string): void => {
  log.info('shutting down', { signal });
  server
    .close()
    .then(() => store.close())
    .then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { error: errorMessage(err) });
        process.exit(1);
      },
    );
};
process.once('SIGTERM', () => {
  stop('SIGTERM');
});
process.once('SIGINT', () => {
  stop('SIGINT');
});
