/**
 * Opens the store the configuration names. The Redis store (and ioredis) and the dashboard's are
 * loaded only when named: a worker on the files store never holds them.
 */
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Counters } from '../limits/counters.ts';
import pkg from '../../package.json' with { type: 'json' };
import { FilesStore } from './files.ts';
import type { Store } from './store.ts';

/**
 * `files` opens the data directory; a `redis://` URL connects (and keeps reconnecting) to Redis.
 * With `dashboard_url` (mode pro), APIs and policies come from the dashboard (pro/).
 */
export async function openStore(
  config: Pick<GatewayConfig, 'store' | 'data_dir' | 'redis_key_prefix'> &
    Partial<
      Pick<
        GatewayConfig,
        'dashboard_url' | 'node_secret' | 'dashboard_orgs' | 'dashboard_poll_interval_ms' | 'secret'
      >
    >,
  log: Logger,
  /** Where quotas are counted: in mode pro, a key's quota reset in the dashboard ends its periods there. */
  counters?: Counters,
): Promise<Store> {
  if (config.dashboard_url !== undefined && config.node_secret !== undefined) {
    const { dashboard_url: url, node_secret: nodeSecret } = config;
    const local = await openStore({ ...config, dashboard_url: undefined }, log);
    const { DashboardStore } = await import('./pro/index.ts');
    return new DashboardStore(local, {
      url,
      nodeSecret,
      // Certificates' private keys from the dashboard are kept sealed under it, as /svc/certs does.
      gatewaySecret: config.secret ?? nodeSecret,
      orgs: (config.dashboard_orgs ?? '')
        .split(',')
        .map((o) => o.trim())
        .filter((o) => o !== ''),
      pollIntervalMs: config.dashboard_poll_interval_ms ?? 10_000,
      dataDir: config.data_dir,
      ...(counters === undefined ? {} : { counters }),
      version: pkg.version,
      log: log.child({ store: 'dashboard' }),
    });
  }
  if (config.store === 'files') return FilesStore.open(config.data_dir, log.child({ store: 'files' }));
  const { RedisStore } = await import('./redis.ts');
  return new RedisStore(config.store, {
    prefix: config.redis_key_prefix,
    log: log.child({ store: 'redis' }),
  });
}
