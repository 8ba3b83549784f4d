/** Opens the store the configuration names. */
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { FilesStore } from './files.ts';
import { RedisStore } from './redis.ts';
import type { Store } from './store.ts';

/** `files` opens the data directory; a `redis://` URL connects (and keeps reconnecting) to Redis. */
export async function openStore(
  config: Pick<GatewayConfig, 'store' | 'data_dir' | 'redis_key_prefix'>,
  log: Logger,
): Promise<Store> {
  if (config.store === 'files') return FilesStore.open(config.data_dir, log.child({ store: 'files' }));
  return new RedisStore(config.store, {
    prefix: config.redis_key_prefix,
    log: log.child({ store: 'redis' }),
  });
}
