/**
 * The svc admission webhook server: wiring only. Reads its configuration, gets its serving
 * certificate (cert-manager files or its own CA), serves the admission endpoints over HTTPS and
 * /healthz, /readyz and /metrics over plain HTTP, and stops cleanly on SIGTERM.
 */
import https from 'node:https';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ConfigError } from '../lib/config.ts';
import { errorMessage } from '../lib/errors.ts';
import { startOpsServer } from '../lib/http/ops-server.ts';
import { loadKubeConfig, makeClients } from '../lib/k8s/client.ts';
import { Informer } from '../lib/k8s/informer.ts';
import { GROUP, VERSION } from '../schemas/common.ts';
import { kinds } from '../schemas/index.ts';
import { createLogger } from '../lib/log.ts';
import {
  fileCerts,
  kubeCaStore,
  kubeWebhookConfigurations,
  selfManagedCerts,
  serviceHosts,
} from './certs.ts';
import type { CertSource } from './certs.ts';
import { finalizerNamespaces, loadWebhookConfig } from './config.ts';
import type { WebhookConfig } from './config.ts';
import { API_KINDS, kubeLookups } from './lookups.ts';
import { configMapOf, RouteClaimCache } from './route-claims.ts';
import { claimOf } from './routes.ts';
import { admissionApp } from './server.ts';
import { startStreamsLinter, stopStreamsLinter } from './streams-lint.ts';

let cfg: Readonly<WebhookConfig>;
try {
  cfg = loadWebhookConfig(process.argv.slice(2));
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `svc-webhooks: ${errorMessage(err)}`);
  process.exit(2);
}

const log = createLogger({ component: 'webhooks', level: cfg.logLevel });
// Bento checks SvcStreamsApiDefinition documents, as the gateway does (webhooks/streams-lint.ts).
startStreamsLinter(log);
const kc = loadKubeConfig(cfg.kubeconfig);
const clients = makeClients(kc);
const lookups = kubeLookups(clients);

// The route check's cache of claims (webhooks/route-claims.ts): the three API kinds watched in
// every namespace (the webhook needs list and watch on them). Until it has synced, the check
// lists every API as before, so admission is right from the first review.
const routeClaims = new RouteClaimCache({
  claimOf: (kind, obj) => claimOf(kind, obj, lookups),
  fresh: async (kind, namespace, name) => {
    const obj = await lookups.get(kind, namespace, name);
    return obj === undefined ? undefined : claimOf(kind, obj, lookups);
  },
  log: log.child({ cache: 'route-claims' }),
});
const informers = API_KINDS.map((kind) => {
  const plural = kinds.find((k) => k.kind === kind)?.plural ?? '';
  const informer = new Informer(kc, { apiVersion: `${GROUP}/${VERSION}`, kind, plural, namespaces: [] }, log);
  informer.on((event, obj, old) => {
    routeClaims.observe(kind, event, obj, old);
  });
  return informer;
});
void Promise.all(informers.map((i) => i.start()))
  .then(() => routeClaims.markSynced())
  .catch((err: unknown) => {
    log.error('route claims not cached: every admission lists the APIs', { error: errorMessage(err) });
  });
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const reviews = new Counter({
  name: 'svc_webhook_reviews_total',
  help: 'Admission reviews answered, by resource, endpoint and outcome (allowed, denied, error).',
  labelNames: ['resource', 'mode', 'outcome'],
  registers: [registry],
});
const latency = new Histogram({
  name: 'svc_webhook_review_duration_seconds',
  help: 'Time to answer an admission review.',
  labelNames: ['resource', 'mode'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

const extraHosts = cfg.extraHosts
  .split(',')
  .map((h) => h.trim())
  .filter((h) => h !== '');
const certs: CertSource =
  cfg.certMode === 'files'
    ? fileCerts({ dir: cfg.certDir, intervalMs: cfg.resyncSeconds * 1000, log })
    : selfManagedCerts({
        store: kubeCaStore(clients, cfg.namespace, cfg.caSecretName),
        configurations: kubeWebhookConfigurations(
          clients,
          { mutating: cfg.mutatingConfigurationName, validating: cfg.validatingConfigurationName },
          log,
        ),
        hosts: [...serviceHosts(cfg.serviceName, cfg.namespace), ...extraHosts],
        resyncMs: cfg.resyncSeconds * 1000,
        log,
      });

let listening = false;
const ready = (): boolean => listening && certs.ready();
const ops =
  cfg.healthPort === 0
    ? undefined
    : await startOpsServer({
        host: cfg.address,
        port: cfg.healthPort,
        healthz: () => true,
        readyz: ready,
        registry,
      });

const app = admissionApp({
  lookups: { ...lookups, routeClaims },
  log,
  ready,
  finalizerNamespaces: finalizerNamespaces(cfg),
  onReview: (r) => {
    reviews.inc({ resource: r.resource, mode: r.mode, outcome: r.outcome });
    latency.observe({ resource: r.resource, mode: r.mode }, r.seconds);
  },
  onAdmitted: (resource, review) => {
    if (resource === 'configmaps' && review.operation === 'UPDATE' && review.object !== undefined) {
      const cm = configMapOf(review.object);
      routeClaims.noteConfigMap(review.namespace ?? cm.namespace, cm.name, cm.content);
    }
  },
});

const first = await certs.start();
const server = https.createServer({ key: first.key, cert: first.cert, minVersion: 'TLSv1.2' }, app);
certs.onRotate((c) => {
  try {
    server.setSecureContext({ key: c.key, cert: c.cert, minVersion: 'TLSv1.2' });
  } catch (err) {
    log.error('new serving certificate refused; serving the previous one', { error: errorMessage(err) });
  }
});
await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(cfg.port, cfg.address, () => {
    resolve();
  });
});
listening = true;
log.info('webhook server listening', { address: cfg.address, port: cfg.port, certMode: cfg.certMode });

const shutdown = (signal: string): void => {
  log.info('shutting down', { signal });
  listening = false;
  certs.stop();
  routeClaims.stop();
  for (const i of informers) void i.stop();
  server.close();
  server.closeIdleConnections();
  void ops?.close();
  void stopStreamsLinter();
  // In-flight reviews get a moment; the API server retries on another replica otherwise.
  setTimeout(() => process.exit(0), 2_000).unref();
};
process.on('SIGTERM', () => {
  shutdown('SIGTERM');
});
process.on('SIGINT', () => {
  shutdown('SIGINT');
});
