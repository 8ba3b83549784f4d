/**
 * The gateway's process configuration: one closed schema, the env variable and flag of each key,
 * and the type the loader returns. Kept here rather than in schemas/ because nothing else reads it
 * and it has no CRD.
 */
import { availableParallelism } from 'node:os';
import type { ConfigSource } from '../../lib/config.ts';
import type { JsonSchema } from '../../schemas/json-schema.ts';
import { LOG_LEVELS, type LogLevel } from '../../lib/log.ts';

/** Where the gateway keeps definitions and counters: the embedded files store or a Redis URL. */
export const STORE_PATTERN = '^(files|rediss?://.+)$';

/** The gateway's configuration schema; every key is documented and checked strictly. */
export const gatewayConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['secret'],
  properties: {
    secret: {
      type: 'string',
      minLength: 1,
      description:
        'Shared secret of the management API (`X-Svc-Authorization` header). Required: the gateway refuses to start without it.',
    },
    listen_address: {
      type: 'string',
      default: '0.0.0.0',
      description: 'Address the gateway port and the API ports bind to.',
    },
    listen_port: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 8080,
      description:
        'Gateway port (HTTP). APIs without their own `listen_port` are served here. 0 picks a free port.',
    },
    control_port: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      description:
        'Port of the management API (`/svc/...`, `/hello`, `/ready`). Absent: the management API shares the gateway port. 0 picks a free port.',
    },
    store: {
      type: 'string',
      pattern: STORE_PATTERN,
      default: 'files',
      description:
        '`files` keeps definitions as files under `data_dir` and counters in memory; `redis://host:port[/db]` (or `rediss://`) shares everything between gateway nodes.',
    },
    data_dir: {
      type: 'string',
      minLength: 1,
      default: 'data',
      description: 'Directory of the files store (created when missing).',
    },
    redis_key_prefix: {
      type: 'string',
      default: 'svc-gw:',
      description: 'Prefix of every Redis key and channel, so several gateway groups can share one Redis.',
    },
    workers: {
      type: 'integer',
      minimum: 1,
      maximum: 256,
      default: availableParallelism(),
      description: 'Processes serving the ports (node:cluster). Default: the number of cores.',
    },
    upstream_connect_timeout_ms: {
      type: 'integer',
      minimum: 1,
      default: 5000,
      description: 'Milliseconds to open a connection to an upstream before answering 504.',
    },
    upstream_timeout_ms: {
      type: 'integer',
      minimum: 1,
      default: 30000,
      description:
        'Milliseconds to wait for the response headers, and between two chunks of the response body, before answering 504.',
    },
    tls_cert_file: {
      type: 'string',
      minLength: 1,
      description: 'PEM certificate (chain) of the HTTPS listeners (APIs with `protocol: https`).',
    },
    tls_key_file: { type: 'string', minLength: 1, description: 'PEM private key of `tls_cert_file`.' },
    trust_forwarded_headers: {
      type: 'boolean',
      default: false,
      description:
        'Trust `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Real-IP` from clients (set it behind a load balancer). When false they are replaced.',
    },
    fast_path: {
      type: 'boolean',
      default: true,
      description:
        'Serve simple requests to APIs without middleware (keyless, nothing enabled, http upstream) on a connection-level HTTP/1.1 fast path instead of node:http; anything else on the connection falls back to node:http. See docs/design/gateway.md.',
    },
    log_level: {
      type: 'string',
      enum: [...LOG_LEVELS],
      default: 'info',
      description: 'Lowest level logged.',
    },
    shutdown_timeout_ms: {
      type: 'integer',
      minimum: 0,
      default: 10000,
      description: 'On SIGTERM, milliseconds in-flight requests get to finish before the process exits.',
    },
  },
};

/** Environment variable and flag of each key. */
export const gatewayConfigSources: Readonly<Record<string, ConfigSource>> = {
  secret: { env: 'SVC_GW_SECRET', flag: 'secret' },
  listen_address: { env: 'SVC_GW_LISTEN_ADDRESS', flag: 'host' },
  listen_port: { env: 'SVC_GW_LISTEN_PORT', flag: 'port' },
  control_port: { env: 'SVC_GW_CONTROL_PORT', flag: 'control-port' },
  store: { env: 'SVC_GW_STORE', flag: 'store' },
  data_dir: { env: 'SVC_GW_DATA_DIR', flag: 'data-dir' },
  redis_key_prefix: { env: 'SVC_GW_REDIS_KEY_PREFIX', flag: 'redis-key-prefix' },
  workers: { env: 'SVC_GW_WORKERS', flag: 'workers' },
  upstream_connect_timeout_ms: {
    env: 'SVC_GW_UPSTREAM_CONNECT_TIMEOUT_MS',
    flag: 'upstream-connect-timeout-ms',
  },
  upstream_timeout_ms: { env: 'SVC_GW_UPSTREAM_TIMEOUT_MS', flag: 'upstream-timeout-ms' },
  tls_cert_file: { env: 'SVC_GW_TLS_CERT_FILE', flag: 'tls-cert' },
  tls_key_file: { env: 'SVC_GW_TLS_KEY_FILE', flag: 'tls-key' },
  trust_forwarded_headers: { env: 'SVC_GW_TRUST_FORWARDED_HEADERS', flag: 'trust-forwarded-headers' },
  fast_path: { env: 'SVC_GW_FAST_PATH', flag: 'fast-path' },
  log_level: { env: 'SVC_GW_LOG_LEVEL', flag: 'log-level' },
  shutdown_timeout_ms: { env: 'SVC_GW_SHUTDOWN_TIMEOUT_MS', flag: 'shutdown-timeout-ms' },
};

/** The decoded configuration (see the schema for each key). */
export interface GatewayConfig {
  secret: string;
  listen_address: string;
  listen_port: number;
  control_port?: number;
  store: string;
  data_dir: string;
  redis_key_prefix: string;
  workers: number;
  upstream_connect_timeout_ms: number;
  upstream_timeout_ms: number;
  tls_cert_file?: string;
  tls_key_file?: string;
  trust_forwarded_headers: boolean;
  fast_path: boolean;
  log_level: LogLevel;
  shutdown_timeout_ms: number;
}
