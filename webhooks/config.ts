/** Configuration of the webhook server: flags, environment variables (set by the chart), or a file. */
import { configSources, loadConfig } from '../lib/config.ts';
import { LOG_LEVELS } from '../lib/log.ts';
import type { LogLevel } from '../lib/log.ts';
import type { JsonSchema } from '../schemas/json-schema.ts';

/** Where the serving certificate comes from. */
export const CERT_MODES = ['files', 'self-managed'] as const;

/** The decoded configuration. */
export interface WebhookConfig {
  /** HTTPS port of the admission endpoints. */
  port: number;
  /** Address to listen on. */
  address: string;
  /** Plain-HTTP port of /healthz and /readyz for the kubelet; 0 turns it off. */
  healthPort: number;
  /** `files`: tls.crt and tls.key in certDir (cert-manager). `self-managed`: our own CA. */
  certMode: (typeof CERT_MODES)[number];
  certDir: string;
  /** Namespace the server runs in (the CA Secret lives there). */
  namespace: string;
  /** Service the API server calls; its DNS names go into the serving certificate. */
  serviceName: string;
  caSecretName: string;
  /**
   * ServiceAccount of the namespace that owns the CA Secret (an ownerReference), so that
   * uninstalling the release that made both removes the Secret too; empty: no owner.
   */
  caSecretOwner: string;
  mutatingConfigurationName: string;
  validatingConfigurationName: string;
  /** More DNS names or IP addresses for the serving certificate (comma-separated). */
  extraHosts: string;
  /** How often the CA Secret and the webhook configurations' caBundle are checked. */
  resyncSeconds: number;
  /**
   * After SIGTERM, how long the server keeps answering (not ready) before it closes: the
   * Service's endpoints and every node's proxy forget a terminating pod a moment after it was
   * told to stop, and a review sent to it meanwhile would fail the API server's request.
   */
  shutdownDelaySeconds: number;
  /** Kubeconfig file; in a pod, the service account is used. */
  kubeconfig?: string;
  logLevel: LogLevel;
  /**
   * Add the operator's finalizer to the objects it will manage, so that it need not write it
   * itself; false when no operator runs with this server (nobody would remove it).
   */
  finalizers: boolean;
  /** The operator's watched namespaces (its WATCH_NAMESPACE, comma-separated; empty is all). */
  watchNamespace: string;
  /** The Bento binary that checks streams (webhooks/streams-lint.ts); default: the one `make deps` builds. */
  bentoPath?: string;
}

const schema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 9443, description: 'HTTPS port.' },
    address: { type: 'string', minLength: 1, default: '0.0.0.0', description: 'Listen address.' },
    healthPort: { type: 'integer', minimum: 0, maximum: 65535, default: 8082, description: 'Health port.' },
    certMode: {
      type: 'string',
      enum: CERT_MODES,
      default: 'self-managed',
      description: 'Certificate source.',
    },
    certDir: {
      type: 'string',
      minLength: 1,
      default: '/tmp/k8s-webhook-server/serving-certs',
      description: 'Directory of tls.crt and tls.key (files mode).',
    },
    namespace: {
      type: 'string',
      minLength: 1,
      default: 'svc-operator-system',
      description: 'Own namespace.',
    },
    serviceName: {
      type: 'string',
      minLength: 1,
      default: 'svc-operator-webhook-service',
      description: 'Webhook Service name.',
    },
    caSecretName: {
      type: 'string',
      minLength: 1,
      default: 'svc-operator-webhook-ca',
      description: 'Secret that keeps the self-managed CA.',
    },
    caSecretOwner: {
      type: 'string',
      default: '',
      description:
        "ServiceAccount of the namespace that owns the CA Secret (removed with it: the chart's); empty: none.",
    },
    mutatingConfigurationName: {
      type: 'string',
      minLength: 1,
      default: 'svc-operator-mutating-webhook-configuration',
      description: 'MutatingWebhookConfiguration whose caBundle is kept (self-managed).',
    },
    validatingConfigurationName: {
      type: 'string',
      minLength: 1,
      default: 'svc-operator-validating-webhook-configuration',
      description: 'ValidatingWebhookConfiguration whose caBundle is kept (self-managed).',
    },
    extraHosts: { type: 'string', default: '', description: 'Extra certificate names, comma-separated.' },
    resyncSeconds: { type: 'integer', minimum: 1, default: 10, description: 'Resync period.' },
    shutdownDelaySeconds: {
      type: 'integer',
      minimum: 0,
      default: 5,
      description: 'Seconds the server keeps answering after SIGTERM, before it closes.',
    },
    kubeconfig: { type: 'string', minLength: 1, description: 'Kubeconfig file.' },
    logLevel: { type: 'string', enum: LOG_LEVELS, default: 'info', description: 'Log level.' },
    finalizers: {
      type: 'boolean',
      default: true,
      description: "Add the operator's finalizer on create and update.",
    },
    watchNamespace: {
      type: 'string',
      default: '',
      description: "The operator's watched namespaces, comma-separated; empty is all.",
    },
    bentoPath: {
      type: 'string',
      minLength: 1,
      description: 'The Bento binary that checks streams (the operator image: /usr/local/bin/bento).',
    },
  },
};

/** Environment variable and flag of each key: `SVC_WEBHOOK_<KEY>` and `--<key>` but where named. */
const sources = configSources(schema, 'SVC_WEBHOOK_', {
  namespace: { env: 'POD_NAMESPACE' },
  serviceName: { env: 'SVC_WEBHOOK_SERVICE', flag: 'service' },
  caSecretName: { env: 'SVC_WEBHOOK_CA_SECRET', flag: 'ca-secret' },
  caSecretOwner: { env: 'SVC_WEBHOOK_CA_SECRET_OWNER', flag: 'ca-secret-owner' },
  mutatingConfigurationName: { env: 'SVC_WEBHOOK_MUTATING_CONFIGURATION', flag: 'mutating-configuration' },
  validatingConfigurationName: {
    env: 'SVC_WEBHOOK_VALIDATING_CONFIGURATION',
    flag: 'validating-configuration',
  },
  kubeconfig: { env: 'KUBECONFIG' },
  logLevel: { env: 'LOG_LEVEL' },
  watchNamespace: { env: 'WATCH_NAMESPACE' },
});

/** Reads the configuration once; throws a ConfigError naming every problem. */
export function loadWebhookConfig(
  argv: readonly string[],
  env?: Readonly<Record<string, string | undefined>>,
): Readonly<WebhookConfig> {
  return loadConfig<WebhookConfig>({
    component: 'webhooks',
    schema,
    sources,
    argv,
    ...(env === undefined ? {} : { env }),
  });
}

/** Where the operator's finalizer is added: its watched namespaces (empty is all), or nowhere. */
export function finalizerNamespaces(
  cfg: Pick<WebhookConfig, 'finalizers' | 'watchNamespace'>,
): readonly string[] | false {
  if (!cfg.finalizers) return false;
  // Split as the operator splits its WATCH_NAMESPACE (operator/config.ts), not more leniently.
  return cfg.watchNamespace.split(',').filter((ns) => ns !== '');
}
