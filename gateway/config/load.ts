/**
 * Loads the gateway configuration once at start (file, environment, flags; later sources win),
 * strictly, and says how to fix each problem.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig, whereToSet } from '../../lib/config.ts';
import { errorMessage } from '../../lib/errors.ts';
import { gatewayConfigSchema, gatewayConfigSources, type GatewayConfig } from './schema.ts';

/** Name the gateway uses in configuration errors and logs. */
export const COMPONENT = 'svc-gateway';

/** Certificate and key of the HTTPS listeners, read at start. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

/**
 * The rules across fields, in the order they are checked: a configuration that breaks one is
 * refused with its problem (the first only).
 */
const CROSS_FIELD_RULES: readonly { broken: (c: Readonly<GatewayConfig>) => boolean; problem: string }[] = [
  {
    broken: (c) => (c.tls_cert_file === undefined) !== (c.tls_key_file === undefined),
    problem: 'tls_cert_file and tls_key_file: set both (--tls-cert and --tls-key) or neither',
  },
  {
    broken: (c) => c.control_tls && (c.control_port === undefined || c.tls_cert_file === undefined),
    problem:
      'control_tls: serves the management API on its own port over HTTPS: set control_port (--control-port) and the certificate (--tls-cert and --tls-key)',
  },
  {
    broken: (c) => c.https_port !== undefined && c.tls_cert_file === undefined,
    problem: 'https_port: an HTTPS port needs the certificate: set --tls-cert and --tls-key',
  },
  {
    broken: (c) =>
      c.https_port !== undefined && (c.https_port === c.listen_port || c.https_port === c.control_port),
    problem: 'https_port: must differ from listen_port and control_port',
  },
  {
    broken: (c) => c.dashboard_url !== undefined && c.analytics_dashboard_url !== undefined,
    problem:
      'analytics_dashboard_url: mode pro sends analytics to dashboard_url (--dashboard): leave analytics_dashboard_url out',
  },
  {
    broken: (c) => c.analytics_dashboard_url !== undefined && c.node_secret === undefined,
    problem: "node_secret: analytics_dashboard_url needs the dashboard's node secret (--node-secret)",
  },
  {
    broken: (c) =>
      (c.dashboard_url === undefined) !== (c.node_secret === undefined) &&
      c.analytics_dashboard_url === undefined,
    problem:
      'dashboard_url and node_secret: mode pro needs both (--dashboard and --node-secret), mode ce neither (but for analytics_dashboard_url)',
  },
  {
    broken: (c) => c.control_port !== undefined && c.control_port !== 0 && c.control_port === c.listen_port,
    problem: 'control_port: must differ from listen_port; leave it out to share the gateway port',
  },
];

/**
 * Reads and checks the configuration. Throws a ConfigError listing every problem; a missing
 * secret says where it can be set.
 */
export function loadGatewayConfig(opts: {
  argv: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
}): Readonly<GatewayConfig> {
  let config: Readonly<GatewayConfig>;
  try {
    config = loadConfig<GatewayConfig>({
      component: COMPONENT,
      schema: gatewayConfigSchema,
      sources: gatewayConfigSources,
      argv: opts.argv,
      ...(opts.env === undefined ? {} : { env: opts.env }),
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(COMPONENT, err.problems.map(explainRequired));
    throw err;
  }
  const broken = CROSS_FIELD_RULES.find((r) => r.broken(config));
  if (broken !== undefined) throw new ConfigError(COMPONENT, [broken.problem]);
  return config;
}

/** Reads the TLS certificate and key named by the configuration, if any. */
export function loadTls(config: Readonly<GatewayConfig>): TlsMaterial | undefined {
  if (config.tls_cert_file === undefined || config.tls_key_file === undefined) return undefined;
  const problems: string[] = [];
  const read = (file: string, key: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      problems.push(`${key}: cannot read ${file}: ${errorMessage(err)}`);
      return Buffer.alloc(0);
    }
  };
  const cert = read(config.tls_cert_file, 'tls_cert_file');
  const key = read(config.tls_key_file, 'tls_key_file');
  if (problems.length > 0) throw new ConfigError(COMPONENT, problems);
  return { cert, key };
}

function explainRequired(problem: string): string {
  const m = /^([a-z_]+): Required value: add this field$/.exec(problem);
  const key = m?.[1];
  if (key === undefined) return problem;
  const why =
    key === 'secret' ? ' (it protects the management API; the gateway does not start without it)' : '';
  return `${key}: required${why}: ${whereToSet(key, gatewayConfigSources)}`;
}
