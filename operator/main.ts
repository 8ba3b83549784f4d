/**
 * The svc operator: wiring only. Reads its configuration, elects a leader, starts the
 * controllers and the /healthz, /readyz and /metrics endpoints, and stops cleanly on SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type * as k8s from '@kubernetes/client-node';
import { API_VERSION } from '../schemas/common.ts';
import { errorMessage } from '../lib/errors.ts';
import { ConfigError } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { loadKubeConfig } from '../lib/k8s/client.ts';
import { EventRecorder } from '../lib/k8s/events.ts';
import { objectKey, type WatchSpec } from '../lib/k8s/informer.ts';
import { LeaderElector } from '../lib/k8s/leader.ts';
import { ControllerManager } from '../lib/k8s/manager.ts';
import { SvcObjects } from '../lib/k8s/objects.ts';
import { startOpsServer } from '../lib/http/ops-server.ts';
import { loadOperatorConfig, resyncPeriodMs, watchedNamespaces } from './config.ts';
import { GatewayClient } from './clients/gateway.ts';
import { Connections, secretReader } from './connections.ts';
import { derivedId } from './ids.ts';
import { reconcileApiDefinition, type ApiObject } from './controllers/api-definition.ts';
import {
  reconcileOperatorContext,
  type ContextObject,
  type ContextUser,
} from './controllers/operator-context.ts';

let cfg;
try {
  cfg = loadOperatorConfig(process.argv.slice(2));
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `svc-operator: ${errorMessage(err)}`);
  process.exit(2);
}

const log = createLogger({ component: 'operator', level: cfg.LOG_LEVEL });
const kc = loadKubeConfig(cfg.KUBECONFIG);
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const namespaces = watchedNamespaces(cfg);
const events = new EventRecorder(kc, 'svc-operator', log);
const now = (): Date => new Date();

const watch = (kind: string, plural: string): WatchSpec => ({
  apiVersion: API_VERSION,
  kind,
  plural,
  namespaces,
});
const apiSpec = watch('ApiDefinition', 'apidefinitions');
const contextSpec = watch('OperatorContext', 'operatorcontexts');

const manager = new ControllerManager({ kc, log, registry, resyncPeriodMs: resyncPeriodMs(cfg) });
const contexts = new SvcObjects<ContextObject>(kc, 'operatorcontexts');
const connections = new Connections({
  default: {
    mode: cfg.SVC_MODE,
    url: cfg.SVC_URL,
    auth: cfg.SVC_AUTH,
    org: cfg.SVC_ORG,
    insecureSkipVerify: cfg.SVC_TLS_INSECURE_SKIP_VERIFY,
  },
  contexts,
  secrets: secretReader(kc),
  makeClient: (conn) => new GatewayClient(conn),
});

/** The OperatorContext a resource refers to, as a work-queue key. */
function contextKeyOf(obj: k8s.KubernetesObject | undefined): string[] {
  const ref = (obj as { spec?: { contextRef?: { name: string; namespace?: string } } } | undefined)?.spec
    ?.contextRef;
  if (!ref || !obj?.metadata?.namespace) return [];
  return [`${ref.namespace ?? obj.metadata.namespace}/${ref.name}`];
}

const apiInformer = manager.informer<ApiObject>(apiSpec);
const apiObjects = new SvcObjects<ApiObject>(kc, 'apidefinitions');

manager.add({
  name: 'apidefinition',
  watch: apiSpec,
  workers: 32,
  reconcile: (key) =>
    reconcileApiDefinition(key, {
      read: (namespace, name) => Promise.resolve(apiInformer.get(namespace, name)),
      objects: apiObjects,
      connections,
      events,
      policyId: (ref) => derivedId(ref.namespace, ref.name),
      now,
      log,
    }),
  watches: [
    {
      // A context that appears or changes queues the APIs that use it.
      watch: contextSpec,
      map: (ctx) =>
        apiInformer
          .list()
          .filter((api) => contextKeyOf(api)[0] === objectKey(ctx))
          .map((api) => objectKey(api)),
    },
  ],
});

manager.add({
  name: 'operatorcontext',
  watch: contextSpec,
  reconcile: (key) =>
    reconcileOperatorContext(key, {
      objects: contexts,
      connections,
      events,
      usersOf: (namespace, name): ContextUser[] =>
        apiInformer
          .list()
          .filter((api) => contextKeyOf(api)[0] === `${namespace}/${name}`)
          .map((api) => ({
            kind: 'ApiDefinition',
            name: api.metadata.name,
            namespace: api.metadata.namespace,
          })),
      now,
      log,
    }),
  watches: [
    { watch: apiSpec, map: (api, old) => [...new Set([...contextKeyOf(api), ...contextKeyOf(old)])] },
  ],
});

const elector = cfg.LEADER_ELECTION
  ? new LeaderElector(
      kc,
      {
        namespace: cfg.POD_NAMESPACE,
        name: 'svc-operator-leader',
        identity: `${cfg.POD_NAME || hostname()}_${randomBytes(4).toString('hex')}`,
      },
      log,
    )
  : undefined;

const ops = await startOpsServer({
  host: '0.0.0.0',
  port: cfg.HEALTH_PROBE_PORT,
  healthz: () => true,
  // A standby replica is ready (it is healthy and waiting); the leader once its caches are full.
  readyz: () => (elector && !elector.leading ? true : manager.synced),
  registry,
});
log.info('operator starting', {
  mode: cfg.SVC_MODE,
  url: cfg.SVC_URL,
  namespaces: namespaces.length > 0 ? namespaces : 'all',
  resyncPeriod: cfg.SVC_RESYNC_PERIOD,
  healthPort: ops.port,
});

let stopping = false;
async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('operator stopping');
  await manager.stop();
  await elector?.release();
  await connections.close();
  await ops.close();
  process.exit(code);
}
process.once('SIGTERM', () => void shutdown(0));
process.once('SIGINT', () => void shutdown(0));

try {
  if (elector) {
    await elector.acquire(() => {
      log.error('lost leadership, exiting so that another replica takes over');
      process.exit(1);
    });
  }
  await manager.start();
} catch (err) {
  log.error('operator failed to start', { error: errorMessage(err) });
  await shutdown(1);
}
