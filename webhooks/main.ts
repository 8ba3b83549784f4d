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
import { FORBIDDEN, Informer, NOT_SERVED } from '../lib/k8s/informer.ts';
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
import type { ApiKind, SvcKind } from './lookups.ts';
import { configMapOf, RouteClaimCache } from './route-claims.ts';
import { claimOf } from './routes.ts';
import { admissionApp } from './server.ts';
import { WatchedKind, watchLookups } from './watch-lookups.ts';
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
startStreamsLinter(log, cfg.bentoPath);
const kc = loadKubeConfig(cfg.kubeconfig);
const clients = makeClients(kc);
const live = kubeLookups(clients);

// One informer per svc kind, shared: answering `get` and `list` from memory
// (webhooks/watch-lookups.ts), and the three API kinds feeding the route-claim cache. The webhook
// needs list and watch on each. Ingresses (the users of a template) are listed fresh when a
// template is deleted: the webhook needs list on them, not watch.
const svcKinds = [
  ...API_KINDS,
  'SecurityPolicy',
  'OperatorContext',
  'SubGraph',
  'SuperGraph',
  'APIDescription',
  'PortalAPICatalogue',
] as const;
const informers = svcKinds.map((kind) => {
  const plural = kinds.find((k) => k.kind === kind)?.plural ?? '';
  const spec = { apiVersion: `${GROUP}/${VERSION}`, kind, plural, namespaces: [] };
  return { kind, informer: new Informer(kc, spec, log), what: plural };
});
const watched = new Map(informers.map(({ kind, informer, what }) => [kind, new WatchedKind(what, informer)]));
const watchedKind = (kind: SvcKind): WatchedKind => {
  const w = watched.get(kind);
  if (w === undefined) throw new Error(`no informer for ${kind}`);
  return w;
};
const isSvcKind = (kind: string): kind is SvcKind => (svcKinds as readonly string[]).includes(kind);
const lookups = watchLookups({
  live,
  kinds: {
    ApiDefinition: watchedKind('ApiDefinition'),
    SvcOasApiDefinition: watchedKind('SvcOasApiDefinition'),
    SvcStreamsApiDefinition: watchedKind('SvcStreamsApiDefinition'),
    SecurityPolicy: watchedKind('SecurityPolicy'),
    OperatorContext: watchedKind('OperatorContext'),
    SubGraph: watchedKind('SubGraph'),
    SuperGraph: watchedKind('SuperGraph'),
    APIDescription: watchedKind('APIDescription'),
    PortalAPICatalogue: watchedKind('PortalAPICatalogue'),
  },
});

// The route check's cache of claims (webhooks/route-claims.ts), fed by the three API kinds'
// informers. Until it has synced, the check lists every API (from the caches above).
const routeClaims = new RouteClaimCache({
  claimOf: (kind, obj) => claimOf(kind, obj, live),
  fresh: async (kind, namespace, name) => {
    const obj = await live.get(kind, namespace, name);
    return obj === undefined ? undefined : claimOf(kind, obj, live);
  },
  log: log.child({ cache: 'route-claims' }),
});
for (const { kind, informer } of informers) {
  if (!(API_KINDS as readonly string[]).includes(kind)) continue;
  informer.on((event, obj, old) => {
    routeClaims.observe(kind as ApiKind, event, obj, old);
  });
}
const listed = informers.map(async ({ kind, informer }) => {
  await informer.start();
  // A kind whose CRD is not installed (an image newer than the cluster's CRDs) has no objects:
  // its empty cache is the truth until the CRD is, when the informer lists it. A forbidden kind
  // (a chart whose RBAC predates it) may have objects unseen: reviews that need it are refused
  // (CacheNotSyncedError), the others answered. Either way the server is ready.
  if (informer.unavailable === NOT_SERVED) watchedKind(kind).markSynced();
  else if (informer.unavailable === FORBIDDEN) watchedKind(kind).markUnlistable();
  const waited = informer.unavailable !== undefined;
  await informer.whenListed();
  watchedKind(kind).markSynced();
  if (waited) log.info(`${kind} listed now: reviews that need it are checked against it`, { kind });
});
const notSynced = (err: unknown): void => {
  log.error('watch caches not synced: reviews that need them are refused', { error: errorMessage(err) });
};
// The route claims need the API kinds only: a kind waited for does not hold them back.
void Promise.all(listed.filter((_, i) => (API_KINDS as readonly string[]).includes(informers[i]?.kind ?? '')))
  .then(() => routeClaims.markSynced())
  .catch(notSynced);
void Promise.all(listed)
  .then(() => {
    log.info('watch caches synced', { kinds: informers.map((i) => i.kind) });
  })
  .catch(notSynced);
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
        store: kubeCaStore(clients, cfg.namespace, cfg.caSecretName, cfg.caSecretOwner, log),
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
let stopping = false;
// Not ready until every watch cache has listed its kind: reviews go to replicas that can answer.
const ready = (): boolean => listening && certs.ready() && lookups.synced();
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
    // Held beside the caches until their watch events arrive (watch-lookups.ts).
    const kind = review.kind.kind;
    if (review.operation !== 'DELETE' && review.object !== undefined && isSvcKind(kind)) {
      lookups.admitted(kind, review.object, review.namespace);
    }
    if (resource === 'configmaps' && review.operation === 'UPDATE' && review.object !== undefined) {
      const cm = configMapOf(review.object);
      routeClaims.noteConfigMap(review.namespace ?? cm.namespace, cm.name, cm.content);
    }
  },
});

const first = await certs.start();
// While shutting down (below), every answer closes its connection: the API server's next review
// opens a new one, which the Service sends to a replica that is not stopping.
const server = https.createServer({ key: first.key, cert: first.cert, minVersion: 'TLSv1.2' }, (req, res) => {
  if (stopping) res.setHeader('Connection', 'close');
  app(req, res);
});
// The API server's client keeps an idle connection for 90 s (Go's IdleConnTimeout); Node's default
// of 5 s closed it under the client, whose next review on it then failed ("broken pipe", a 500 to
// the user). The client now closes first.
server.keepAliveTimeout = 120_000;
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
  if (stopping) return;
  stopping = true;
  // Not ready from now on, but still answering: the API server reaches this pod through the
  // Service, whose endpoints and the nodes' proxy rules drop a terminating pod only a moment
  // after the kubelet signalled it. Closing at once failed the reviews sent meanwhile
  // ("failed calling webhook ... connection refused", or "broken pipe" on a kept-alive
  // connection), even with another replica running (e2e/node/operator-faults.node.ts).
  log.info('shutting down', { signal, delaySeconds: cfg.shutdownDelaySeconds });
  listening = false;
  setTimeout(() => {
    close();
  }, cfg.shutdownDelaySeconds * 1000);
};
const close = (): void => {
  certs.stop();
  routeClaims.stop();
  for (const { informer } of informers) void informer.stop();
  server.close();
  server.closeIdleConnections();
  void ops?.close();
  void stopStreamsLinter();
  // In-flight reviews get a moment to finish.
  setTimeout(() => process.exit(0), 2_000).unref();
};
process.on('SIGTERM', () => {
  shutdown('SIGTERM');
});
process.on('SIGINT', () => {
  shutdown('SIGINT');
});
