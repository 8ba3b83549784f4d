/** Opens the counters the configuration names: in memory with the files store, else in Redis. */
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Counters } from './counters.ts';
import { MemoryCounters } from './memory.ts';
import { RedisCounters } from './redis.ts';

/** Counters for the configured store. */
export function openCounters(
  config: Pick<GatewayConfig, 'store' | 'redis_key_prefix'>,
  log: Logger,
): Counters {
  if (config.store === 'files') return new MemoryCounters();
  return new RedisCounters(config.store, {
    prefix: config.redis_key_prefix,
    log: log.child({ part: 'counters' }),
  });
}
