/**
 * Opens the counters the configuration names: Redis with the Redis store; with the files store,
 * memory in a single process, or the primary's memory for a cluster worker (relay.ts). The Redis
 * counters (and ioredis under them) are loaded only for a Redis store, not by every worker.
 */
import cluster from 'node:cluster';
import type { Logger } from '../../lib/log.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Counters } from './counters.ts';
import { MemoryCounters } from './memory.ts';
import { workerCounters } from './relay.ts';

/** Counters for the configured store. */
export async function openCounters(
  config: Pick<GatewayConfig, 'store' | 'redis_key_prefix'>,
  log: Logger,
): Promise<Counters> {
  if (config.store !== 'files') {
    const { RedisCounters } = await import('./redis.ts');
    return new RedisCounters(config.store, {
      prefix: config.redis_key_prefix,
      log: log.child({ part: 'counters' }),
    });
  }
  return cluster.isWorker ? workerCounters() : new MemoryCounters();
}
