import type { JsonSchema } from '../schemas/json-schema.ts';
import { durationPattern, loadConfig, parseDuration, type ConfigSource } from '../lib/config.ts';

/** Operator configuration, read once at start (the chart fills it from the secret svc-operator-conf). */
export interface OperatorConfig {
  SVC_MODE: 'ce' | 'pro';
  SVC_URL: string;
  SVC_ORG: string;
  SVC_AUTH: string;
  SVC_OPERATOR_LICENSEKEY?: string;
  SVC_OPERATOR_LICENSE_PUBLIC_KEY?: string;
  SVC_TLS_INSECURE_SKIP_VERIFY: boolean;
  WATCH_NAMESPACE: string;
  WATCH_INGRESS_CLASS: string;
  SVC_HTTP_INGRESS_PORT: number;
  SVC_HTTPS_INGRESS_PORT: number;
  SVC_INGRESS_ADDRESS: string;
  SVC_PUBLISH_SERVICE: string;
  SVC_GATEWAY_API_ADDRESSES: 'shared' | 'per-gateway';
  SVC_GATEWAY_API_PORT_RANGE: string;
  SVC_GATEWAY_API_GATEWAY_SERVICE: string;
  SVC_RESYNC_PERIOD: string;
  HEALTH_PROBE_PORT: number;
  LEADER_ELECTION: boolean;
  POD_NAMESPACE: string;
  POD_NAME: string;
  KUBECONFIG?: string;
  LOG_LEVEL: 'error' | 'warn' | 'info' | 'debug';
}

const port = (description: string, dflt: number): JsonSchema => ({
  type: 'integer',
  minimum: 0,
  maximum: 65535,
  default: dflt,
  description,
});

const schema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['SVC_MODE', 'SVC_URL', 'SVC_ORG', 'SVC_AUTH'],
  properties: {
    SVC_MODE: { type: 'string', enum: ['ce', 'pro'], description: 'ce: a gateway; pro: a dashboard.' },
    SVC_URL: { type: 'string', pattern: '^https?://[^\\s/]+', description: 'Management URL.' },
    SVC_ORG: { type: 'string', minLength: 1, description: 'Organization ID.' },
    SVC_AUTH: { type: 'string', minLength: 1, description: 'API key of the operator user.' },
    SVC_OPERATOR_LICENSEKEY: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]*$',
      description: 'License key (JWT form); required in mode pro.',
    },
    SVC_OPERATOR_LICENSE_PUBLIC_KEY: {
      type: 'string',
      description:
        "PEM (SPKI) public key the license key's signature is verified with. Mode pro needs it: unsigned keys are refused, and a signed key that cannot be verified counts as no license.",
    },
    SVC_TLS_INSECURE_SKIP_VERIFY: { type: 'boolean', default: false, description: 'Skip TLS verification.' },
    WATCH_NAMESPACE: {
      type: 'string',
      default: '',
      pattern: '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      description: 'Comma-separated namespaces; empty watches all.',
    },
    WATCH_INGRESS_CLASS: { type: 'string', default: 'svc', minLength: 1, description: 'Ingress class.' },
    SVC_HTTP_INGRESS_PORT: port('HTTP ingress port.', 8080),
    SVC_HTTPS_INGRESS_PORT: port('HTTPS ingress port.', 8443),
    SVC_INGRESS_ADDRESS: {
      type: 'string',
      default: '',
      description: "Comma-separated IPs or host names written to the Ingresses' status.loadBalancer.",
    },
    SVC_PUBLISH_SERVICE: {
      type: 'string',
      default: '',
      pattern: '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description:
        "The gateway's Service (namespace/name), whose address goes into the Ingresses' status.loadBalancer when SVC_INGRESS_ADDRESS is empty.",
    },
    SVC_GATEWAY_API_ADDRESSES: {
      type: 'string',
      enum: ['shared', 'per-gateway'],
      default: 'shared',
      description:
        "Gateway API addresses (docs/gateway-api.md). shared: every Gateway is served on the gateway's own ports and reports SVC_INGRESS_ADDRESS. per-gateway: each Gateway gets a Service of its own (its ClusterIP the Gateway's address) whose ports lead to gateway ports allocated to that Gateway from SVC_GATEWAY_API_PORT_RANGE.",
    },
    SVC_GATEWAY_API_PORT_RANGE: {
      type: 'string',
      default: '20000-20999',
      pattern: '^[0-9]{1,5}-[0-9]{1,5}$',
      description:
        'per-gateway addresses: the gateway ports (first-last) allocated to Gateways, one per Gateway and listener port.',
    },
    SVC_GATEWAY_API_GATEWAY_SERVICE: {
      type: 'string',
      default: '',
      pattern: '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description:
        "per-gateway addresses: the gateway's Service (namespace/name, the chart's svc-gateway) whose endpoints (the gateway pods) each Gateway's Service leads to.",
    },
    SVC_RESYNC_PERIOD: {
      type: 'string',
      default: '10h',
      pattern: durationPattern,
      description: 'Controller cache expiry: every object is reconciled this often (e.g. 10h, 30m, 45s).',
    },
    HEALTH_PROBE_PORT: port('Port of /healthz, /readyz and /metrics.', 8081),
    LEADER_ELECTION: { type: 'boolean', default: true, description: 'Elect one active replica on a Lease.' },
    POD_NAMESPACE: { type: 'string', default: 'svc-operator-system', description: 'Namespace of the Lease.' },
    POD_NAME: { type: 'string', default: '', description: 'Identity for leader election.' },
    KUBECONFIG: { type: 'string', description: 'Kubeconfig file; in-cluster config when unset.' },
    LOG_LEVEL: {
      type: 'string',
      enum: ['error', 'warn', 'info', 'debug'],
      default: 'info',
      description: 'Log level.',
    },
  },
};

/** Each setting is read from the environment variable of its name; these also from a flag (`--mode`). */
const flags: Readonly<Record<keyof OperatorConfig, string | undefined>> = {
  SVC_MODE: 'mode',
  SVC_URL: 'url',
  SVC_ORG: 'org',
  SVC_AUTH: undefined,
  SVC_OPERATOR_LICENSEKEY: undefined,
  SVC_OPERATOR_LICENSE_PUBLIC_KEY: undefined,
  SVC_TLS_INSECURE_SKIP_VERIFY: 'insecure-skip-verify',
  WATCH_NAMESPACE: 'watch-namespace',
  WATCH_INGRESS_CLASS: 'watch-ingress-class',
  SVC_HTTP_INGRESS_PORT: undefined,
  SVC_HTTPS_INGRESS_PORT: undefined,
  SVC_INGRESS_ADDRESS: 'ingress-address',
  SVC_PUBLISH_SERVICE: 'publish-service',
  SVC_GATEWAY_API_ADDRESSES: 'gateway-api-addresses',
  SVC_GATEWAY_API_PORT_RANGE: 'gateway-api-port-range',
  SVC_GATEWAY_API_GATEWAY_SERVICE: 'gateway-api-gateway-service',
  SVC_RESYNC_PERIOD: 'resync-period',
  HEALTH_PROBE_PORT: 'health-probe-port',
  LEADER_ELECTION: 'leader-election',
  POD_NAMESPACE: undefined,
  POD_NAME: undefined,
  KUBECONFIG: 'kubeconfig',
  LOG_LEVEL: 'log-level',
};

const sources: Record<string, ConfigSource> = Object.fromEntries(
  Object.entries(flags).map(([env, flag]) => [env, flag === undefined ? { env } : { env, flag }]),
);

/** Reads the operator configuration; throws a ConfigError that names every problem. */
export function loadOperatorConfig(
  argv: readonly string[],
  env?: Readonly<Record<string, string | undefined>>,
): Readonly<OperatorConfig> {
  return loadConfig<OperatorConfig>({
    component: 'svc-operator',
    schema,
    sources,
    argv,
    env,
    rules: (raw) => [
      ...(raw.SVC_MODE === 'pro' &&
      (raw.SVC_OPERATOR_LICENSEKEY === undefined || raw.SVC_OPERATOR_LICENSEKEY === '')
        ? [
            'environment variable SVC_OPERATOR_LICENSEKEY: Required value: mode pro needs a license key (JWT form)',
          ]
        : []),
      ...gatewayApiAddressProblems(raw),
    ],
  });
}

/** The gateway ports of SVC_GATEWAY_API_PORT_RANGE (`first-last`); undefined when malformed. */
export function gatewayApiPortRange(text: string): { first: number; last: number } | undefined {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const first = Number(m[1]);
  const last = Number(m[2]);
  return first >= 1 && first <= last && last <= 65535 ? { first, last } : undefined;
}

/** The per-Gateway addresses settings (checked at load); undefined: Gateways share the gateway. */
export function gatewayApiPerGateway(
  cfg: Pick<
    OperatorConfig,
    'SVC_GATEWAY_API_ADDRESSES' | 'SVC_GATEWAY_API_PORT_RANGE' | 'SVC_GATEWAY_API_GATEWAY_SERVICE'
  >,
):
  | { range: { first: number; last: number }; gatewayService: { namespace: string; name: string } }
  | undefined {
  const range = gatewayApiPortRange(cfg.SVC_GATEWAY_API_PORT_RANGE);
  const [namespace = '', name = ''] = cfg.SVC_GATEWAY_API_GATEWAY_SERVICE.split('/');
  if (cfg.SVC_GATEWAY_API_ADDRESSES !== 'per-gateway' || range === undefined || name === '') return undefined;
  return { range, gatewayService: { namespace, name } };
}

/**
 * Per-Gateway addresses need the gateway's Service, and a port range that holds none of the
 * gateway's own ports (its port, the ingress ports): a Gateway's API there would be refused.
 */
function gatewayApiAddressProblems(raw: Readonly<Record<string, unknown>>): string[] {
  if (raw.SVC_GATEWAY_API_ADDRESSES !== 'per-gateway') return [];
  const problems: string[] = [];
  if (typeof raw.SVC_GATEWAY_API_GATEWAY_SERVICE !== 'string' || raw.SVC_GATEWAY_API_GATEWAY_SERVICE === '') {
    problems.push(
      "environment variable SVC_GATEWAY_API_GATEWAY_SERVICE: Required value: per-gateway addresses lead each Gateway's Service to the endpoints of the gateway's Service (namespace/name)",
    );
  }
  const text =
    typeof raw.SVC_GATEWAY_API_PORT_RANGE === 'string' ? raw.SVC_GATEWAY_API_PORT_RANGE : '20000-20999';
  const range = gatewayApiPortRange(text);
  if (range === undefined) {
    problems.push(
      `environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "${text}": first-last, with 1 <= first <= last <= 65535`,
    );
    return problems;
  }
  const url = typeof raw.SVC_URL === 'string' ? /^https?:\/\/[^/:]+:(\d+)/.exec(raw.SVC_URL) : null;
  const own = [
    ['SVC_HTTP_INGRESS_PORT', raw.SVC_HTTP_INGRESS_PORT ?? 8080],
    ['SVC_HTTPS_INGRESS_PORT', raw.SVC_HTTPS_INGRESS_PORT ?? 8443],
    ...(url ? [['the port of SVC_URL', Number(url[1])]] : []),
  ] as const;
  for (const [what, port] of own) {
    const n = Number(port);
    if (n >= range.first && n <= range.last) {
      problems.push(
        `environment variable SVC_GATEWAY_API_PORT_RANGE: Invalid value: "${text}": holds ${what} (${String(n)}), a port of the gateway's own`,
      );
    }
  }
  return problems;
}

/** Namespaces to watch; empty means all. */
export function watchedNamespaces(cfg: Pick<OperatorConfig, 'WATCH_NAMESPACE'>): string[] {
  return cfg.WATCH_NAMESPACE.split(',').filter((ns) => ns !== '');
}

/** The resync period in milliseconds. */
export function resyncPeriodMs(cfg: Pick<OperatorConfig, 'SVC_RESYNC_PERIOD'>): number {
  return parseDuration(cfg.SVC_RESYNC_PERIOD) ?? 36_000_000;
}
