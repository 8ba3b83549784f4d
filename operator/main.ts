/**
 * The svc operator: wiring only. Reads its configuration, elects a leader, starts the
 * controllers and the /healthz, /readyz and /metrics endpoints, and stops cleanly on SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { errorMessage } from '../lib/errors.ts';
import { ConfigError } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { loadKubeConfig } from '../lib/k8s/client.ts';
import { EventRecorder } from '../lib/k8s/events.ts';
import { LeaderElector } from '../lib/k8s/leader.ts';
import { ControllerManager } from '../lib/k8s/manager.ts';
import { SvcObjects } from '../lib/k8s/objects.ts';
import { startOpsServer } from '../lib/http/ops-server.ts';
import { gatewayApiPerGateway, loadOperatorConfig, resyncPeriodMs, watchedNamespaces } from './config.ts';
import { Connections, clientFor, secretReader } from './connections.ts';
import { LicenseChecker } from './license.ts';
import { apiDefinitionController } from './controllers/api-definition.ts';
import { apiKeyController } from './controllers/api-key.ts';
import type { ControllerEnv } from './controllers/env.ts';
import { Convergence } from './controllers/convergence.ts';
import {
  svcOasApiDefinitionController,
  svcStreamsApiDefinitionController,
} from './controllers/oas-api-definition.ts';
import { operatorContextController, type ContextObject } from './controllers/operator-context.ts';
import { portalControllers } from './controllers/portal/index.ts';
import { securityPolicyController } from './controllers/security-policy.ts';
import { subGraphController } from './controllers/sub-graph.ts';
import { superGraphController } from './controllers/super-graph.ts';
import { ingressController } from './controllers/ingress.ts';
import { gatewayApiControllers } from './controllers/gateway-api.ts';
import { templateController } from './controllers/template.ts';

let cfg;
try {
  cfg = loadOperatorConfig(process.argv.slice(2));
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `svc-operator: ${errorMessage(err)}`);
  process.exit(2);
}

const log = createLogger({ component: 'operator', level: cfg.LOG_LEVEL });
// Mode pro: the license key is checked at start (form, expiry, signature with the public key).
const license = new LicenseChecker({ publicKey: cfg.SVC_OPERATOR_LICENSE_PUBLIC_KEY });
if (cfg.SVC_MODE === 'pro') {
  const problem = await license.problem(cfg.SVC_OPERATOR_LICENSEKEY);
  if (problem !== undefined) {
    console.error(`svc-operator: environment variable SVC_OPERATOR_LICENSEKEY: Invalid value: ${problem}`);
    process.exit(2);
  }
}
const kc = loadKubeConfig(cfg.KUBECONFIG);
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const namespaces = watchedNamespaces(cfg);
const events = new EventRecorder(kc, 'svc-operator', log);
const now = (): Date => new Date();

const manager = new ControllerManager({ kc, log, registry, resyncPeriodMs: resyncPeriodMs(cfg) });
const contexts = new SvcObjects<ContextObject>(kc, 'operatorcontexts');
const connections = new Connections({
  default: {
    mode: cfg.SVC_MODE,
    url: cfg.SVC_URL,
    auth: cfg.SVC_AUTH,
    org: cfg.SVC_ORG,
    insecureSkipVerify: cfg.SVC_TLS_INSECURE_SKIP_VERIFY,
    ...(cfg.SVC_OPERATOR_LICENSEKEY === undefined ? {} : { licenseKey: cfg.SVC_OPERATOR_LICENSEKEY }),
  },
  contexts,
  secrets: secretReader(kc),
  makeClient: clientFor,
  license,
});

// Each controller wires its own watches (operator/controllers/<kind>.ts).
const convergence = new Convergence(registry);
const env: ControllerEnv = { manager, kc, namespaces, connections, events, now, log, convergence };
manager.add(apiDefinitionController(env));
manager.add(svcOasApiDefinitionController(env));
manager.add(svcStreamsApiDefinitionController(env));
manager.add(securityPolicyController(env));
manager.add(operatorContextController(env, contexts));
manager.add(apiKeyController(env));
manager.add(subGraphController(env));
manager.add(superGraphController(env));
for (const c of portalControllers(env)) manager.add(c);
const ingress = ingressController(env, {
  watchClass: cfg.WATCH_INGRESS_CLASS,
  httpPort: cfg.SVC_HTTP_INGRESS_PORT,
  httpsPort: cfg.SVC_HTTPS_INGRESS_PORT,
  address: cfg.SVC_INGRESS_ADDRESS,
  publishService: cfg.SVC_PUBLISH_SERVICE,
  managementUrl: cfg.SVC_URL,
});
manager.add(ingress.spec);
const perGateway = gatewayApiPerGateway(cfg);
for (const c of gatewayApiControllers(env, {
  managementUrl: cfg.SVC_URL,
  address: cfg.SVC_INGRESS_ADDRESS,
  ...(perGateway === undefined ? {} : { perGateway }),
}))
  manager.add(c);
manager.add(templateController(env, ingress.templateUsers, 'ApiDefinition', ingress.freshTemplateUsers));
manager.add(
  templateController(env, ingress.templateUsers, 'SvcOasApiDefinition', ingress.freshTemplateUsers),
);

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
  // A standby replica is ready (it is healthy and waiting): its pod's webhook container serves
  // admission and is in the Service only while the whole pod is ready (docs/install.md, Probes).
  // The leader is ready once its caches are full.
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
  // Events still waiting get a moment to be written.
  await Promise.race([events.flushed(), new Promise((resolve) => setTimeout(resolve, 2000))]);
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
