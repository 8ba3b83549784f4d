/**
 * The gateway process: configuration, logger, store, then either the cluster primary
 * (`--workers` > 1) or one serving process. Wiring only; loaded by main.ts once the compile
 * cache is on.
 */
import cluster from 'node:cluster';
import { hostname } from 'node:os';
import { bentoPath } from '../lib/bento/binary.ts';
import { ConfigError } from '../lib/config.ts';
import { errorMessage } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { loadGatewayConfig, loadTls } from './config/load.ts';
import { runPrimary, STARTED } from './server/cluster.ts';
import { Gateway } from './server/gateway.ts';
import { IdleRelease, releaseMemory } from './server/memory.ts';
import { localBus, workerBus } from './server/node-bus.ts';
import { openCounters } from './limits/open.ts';
import { openStore } from './store/open.ts';

async function main(): Promise<void> {
  let config;
  let tls;
  try {
    config = loadGatewayConfig({ argv: process.argv.slice(2) });
    tls = loadTls(config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  const log = createLogger({ component: 'gateway', level: config.log_level }).child({ pid: process.pid });

  if (config.workers > 1 && cluster.isPrimary) {
    runPrimary({
      workers: config.workers,
      log,
      shutdownTimeoutMs: config.shutdown_timeout_ms,
      streams: config.streaming_enabled ? { binary: bentoPath(config.streaming_bento_path) } : undefined,
    });
    return;
  }

  const counters = await openCounters(config, log);
  const store = await openStore(config, log, counters);
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({
      config,
      store,
      counters,
      log,
      tls,
      bus: cluster.isWorker ? workerBus() : localBus(),
      idleRelease: new IdleRelease({ turn: (cluster.worker?.id ?? 0) % 4 }),
      // Each worker serves on its own: the registry of gateways names it apart (gateway/nodes/).
      ...(cluster.worker === undefined
        ? {}
        : { nodeName: `${hostname()}:${String(config.listen_port)}/worker-${String(cluster.worker.id)}` }),
    });
  } catch (err) {
    log.error('gateway failed to start', { error: errorMessage(err) });
    await store.close();
    await counters.close();
    process.exit(1);
  }
  // What the first load held and no longer needs goes back to the system before serving long.
  releaseMemory();
  if (cluster.isWorker) process.send?.(STARTED);

  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { reason });
    void gateway
      .stop()
      .then(() => Promise.all([store.close(), counters.close()]))
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.on('SIGINT', () => {
    stop('SIGINT');
  });
  // A worker whose primary is gone has nobody to answer to.
  if (cluster.isWorker)
    process.on('disconnect', () => {
      stop('primary gone');
    });
}

await main();
