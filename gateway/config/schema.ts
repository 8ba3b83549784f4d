/**
 * The gateway's process configuration: one closed schema, the env variable and flag of each key,
 * and the type the loader returns. Kept here rather than in schemas/ because nothing else reads it
 * and it has no CRD.
 */
import { availableParallelism } from 'node:os';
import { configSources, serverProcessProperties } from '../../lib/config.ts';
import type { JsonSchema } from '../../schemas/json-schema.ts';
import type { LogLevel } from '../../lib/log.ts';

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
    control_tls: {
      type: 'boolean',
      default: false,
      description:
        'Serve the management API on `control_port` over HTTPS, with the certificate of `tls_cert_file` (the operator then reaches it at an `https://` URL; `SVC_TLS_INSECURE_SKIP_VERIFY` when that certificate is self-signed).',
    },
    https_port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description:
        "An HTTPS API port opened at start with the certificate of `tls_cert_file` and kept open while no API uses it (the HTTPS ingress port of a cluster, the chart's `ingress.httpsPort`): clients, load balancers and `kubectl port-forward` find it answering (404 for hosts no API serves) before the first API with this `listen_port` and after the last. APIs with this `listen_port` are served on it over HTTPS. Absent: API ports open and close with their APIs.",
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
    tls_handshake_timeout_ms: {
      type: 'integer',
      minimum: 1,
      default: 10000,
      description:
        'Milliseconds a client of a TLS API (protocol tls) has to finish its TLS handshake before its connection is closed; the upstream is dialled only after the handshake.',
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
        "Serve requests on a connection-level HTTP/1.1 fast path (request heads parsed off the socket, pooled raw upstream sockets) instead of node:http, on the gateway port and the API ports, HTTP and HTTPS (never the separate `control_port`). It runs the route's compiled middleware chain, for routes whose upstreams are all plain http without upstream TLS settings and whose middleware read only the request head (not: basic auth `extract_from_body`, JSON validation, body transforms, URL rewrites matching the payload, GraphQL). Anything else (such routes, the management API, no matching route, HTTP/1.0, `Transfer-Encoding`, `Expect`, upgrades, a head it finds unusual) hands the connection to node:http for the rest of its life. See docs/design/gateway.md.",
    },
    metrics_enabled: {
      type: 'boolean',
      default: true,
      description:
        'Answer Prometheus scrapes on `/metrics` (no secret, like `/hello`) on the listener of the management API: the control port when set, else the gateway port, where `/metrics` then belongs to the gateway. With `--workers` > 1 every scrape reports the whole node.',
    },
    node_heartbeat_interval_ms: {
      type: 'integer',
      minimum: 100,
      default: 5000,
      description:
        'Milliseconds between two heartbeats of this process in the registry of the gateways sharing the Redis store (`GET /svc/nodes`), where the operator finds every gateway that must serve an API before it is Ready.',
    },
    node_timeout_ms: {
      type: 'integer',
      minimum: 1000,
      default: 30000,
      description:
        'Milliseconds after its last heartbeat that a gateway process is dropped from the registry of the Redis store: until then a stopped gateway keeps the APIs it has not applied Pending; after it, they are Ready without it. Keep it several heartbeats long.',
    },
    ...serverProcessProperties,
    rate_limit_headers: {
      type: 'string',
      enum: ['quota', 'rate'],
      default: 'quota',
      description:
        "`X-RateLimit-Limit`, `-Remaining` and `-Reset` on responses carry the key's quota (`quota`) or its rate limit (`rate`).",
    },
    limits_fail_open: {
      type: 'boolean',
      default: false,
      description:
        'While the counters of rate limits and quotas (Redis) cannot be reached: false refuses limited requests with 503 (fail closed), true lets them through uncounted. Either way the outage is logged once.',
    },
    plugin_dir: {
      type: 'string',
      minLength: 1,
      description:
        "Directory of the APIs' plugin modules (`custom_middleware`): a plugin's path is relative to it and can't leave it. Unset: APIs with plugins are not served.",
    },
    enable_jsvm: {
      type: 'boolean',
      default: false,
      description:
        "Run the JavaScript of virtual endpoints (`extended_paths.virtual`, blob and file sources) and of otto middleware files (`custom_middleware.driver: otto`), the reference's `enable_jsvm`. A `node:vm` context is not a security boundary: with it on, whoever may write API definitions may run code in the gateway. False: an API with virtual endpoints or otto hooks is refused when written (400 naming the entry or hook) and not served when loaded.",
    },
    plugin_timeout_ms: {
      type: 'integer',
      minimum: 1,
      default: 1000,
      description: 'Milliseconds a plugin function may take before the request is answered 500.',
    },
    coprocess_grpc_server: {
      type: 'string',
      pattern: '^(tcp://[^/\\s]+:[0-9]+|unix:///?[^\\s]+)$',
      description:
        "The gRPC plugin server of APIs with `custom_middleware.driver: grpc` (the reference's `coprocess_options.coprocess_grpc_server`): `tcp://host:port` or `unix:///path/to.sock`. Each hook is a `Dispatch` call bounded by `plugin_timeout_ms`; a failed call answers 500. Unset: APIs with gRPC plugins are not served.",
    },
    jwks_cache_ttl_s: {
      type: 'integer',
      minimum: 1,
      default: 240,
      description:
        'Seconds a JWKS fetched for JWT authentication is used before it is fetched again (a token with an unknown `kid` refetches it at once, at most once per 10 s per URL).',
    },
    monitor_enable_trigger_monitors: {
      type: 'boolean',
      default: false,
      description:
        '`monitor.enable_trigger_monitors`: fire `TriggerExceeded` when quota use crosses a trigger limit.',
    },
    monitor_global_trigger_limit: {
      type: 'number',
      minimum: 0,
      maximum: 100,
      default: 0,
      description:
        '`monitor.global_trigger_limit`: percent of a quota whose crossing fires `TriggerExceeded` (0: none).',
    },
    monitor_user_keys: {
      type: 'boolean',
      default: false,
      description: '`monitor.monitor_user_keys`: watch the quotas of keys.',
    },
    monitor_org_keys: {
      type: 'boolean',
      default: false,
      description: '`monitor.monitor_org_keys`: watch the quotas of organisations (`enforce_org_quotas`).',
    },
    policies_allow_explicit_policy_id: {
      type: 'boolean',
      default: true,
      description:
        "`policies.allow_explicit_policy_id`: a policy created through `POST /svc/policies` keeps the `id` it is given (how the operator keeps policy IDs stable, so keys that apply a policy by ID keep working when it is recreated). False refuses a body's `id` with 400: the gateway generates every policy's ID. In mode pro the gateway writes no policy: it serves the dashboard's under the dashboard's IDs (the dashboard's own `allow_explicit_policy_id` decides them).",
    },
    streaming_enabled: {
      type: 'boolean',
      default: false,
      description:
        '`streaming.enabled`: run the streams of APIs (`x-svc-streaming`) on Bento (gateway/streams/). False: an API with streams is refused at write time.',
    },
    analytics_enabled: {
      type: 'boolean',
      default: true,
      description:
        'Mode pro (or mode ce with `analytics_dashboard_url`): send a record of each request (time, organisation, API, key hash and alias, method, path template, status, latencies, sizes, refusal reason) to the dashboard in batches, for its traffic analytics (gateway/analytics/). Never blocks a request: see `analytics_buffer_size`. No effect without `dashboard_url` or `analytics_dashboard_url`.',
    },
    analytics_sample_rate: {
      type: 'number',
      minimum: 0.001,
      maximum: 1,
      default: 1,
      description:
        'Mode pro: fraction of requests recorded for analytics (1: every request; 0.1: one in ten, each counted ten times by the dashboard).',
    },
    analytics_buffer_size: {
      type: 'integer',
      minimum: 1,
      maximum: 1000000,
      default: 10000,
      description:
        'Mode pro: analytics records a process holds at most while they wait to be sent; with the buffer full a record is dropped and counted (`svc_gateway_analytics_records_total{outcome="dropped_buffer_full"}` on `/metrics`).',
    },
    analytics_flush_interval_ms: {
      type: 'integer',
      minimum: 50,
      maximum: 600000,
      default: 2000,
      description:
        'Mode pro: milliseconds between two sends of analytics records to the dashboard (a batch of 1000 goes at once).',
    },
    analytics_dashboard_url: {
      type: 'string',
      pattern: '^https?://.+',
      description:
        "Mode ce: a dashboard that receives this gateway's analytics records (`POST /system/analytics` with `node_secret`), while its APIs, policies and keys stay in its own store; the records' organisations are the APIs' `org_id`. Mode pro sends them to `dashboard_url` and refuses this key.",
    },
    streaming_bento_path: {
      type: 'string',
      minLength: 1,
      description:
        'The Bento binary the gateway runs for streams. Default: the one `make deps` builds (tools/build.sh, `~/.cache/svc-tools/bin/bento`).',
    },
    dashboard_url: {
      type: 'string',
      pattern: '^https?://.+',
      description:
        'Mode pro: the dashboard this gateway loads its APIs, policies and keys from (`http(s)://host:port`), instead of its own store; it registers as a node and reloads when the dashboard announces a change. Needs `node_secret`. Keys written through the gateway, and all counters, stay in `store`.',
    },
    node_secret: {
      type: 'string',
      minLength: 1,
      description: "Mode pro: the dashboard's node secret (its `node_secret`), sent in `x-svc-node-secret`.",
    },
    dashboard_orgs: {
      type: 'string',
      default: '',
      description:
        'Mode pro: comma-separated IDs of the organisations whose APIs and policies this gateway serves. Empty: every organisation of the dashboard.',
    },
    dashboard_poll_interval_ms: {
      type: 'integer',
      minimum: 100,
      default: 10000,
      description:
        "Mode pro: while the dashboard's notification stream is down, milliseconds between two reads of its configuration (the fallback that still catches changes).",
    },
  },
};

/** Environment variable and flag of each key: `SVC_GW_<KEY>` and `--<key>` but where named. */
export const gatewayConfigSources = configSources(gatewayConfigSchema, 'SVC_GW_', {
  listen_address: { flag: 'host' },
  listen_port: { flag: 'port' },
  tls_cert_file: { flag: 'tls-cert' },
  tls_key_file: { flag: 'tls-key' },
  dashboard_url: { flag: 'dashboard' },
});

/** The decoded configuration (see the schema for each key). */
export interface GatewayConfig {
  secret: string;
  listen_address: string;
  listen_port: number;
  control_port?: number;
  control_tls: boolean;
  https_port?: number;
  store: string;
  data_dir: string;
  redis_key_prefix: string;
  workers: number;
  upstream_connect_timeout_ms: number;
  upstream_timeout_ms: number;
  tls_handshake_timeout_ms: number;
  tls_cert_file?: string;
  tls_key_file?: string;
  trust_forwarded_headers: boolean;
  fast_path: boolean;
  metrics_enabled: boolean;
  node_heartbeat_interval_ms: number;
  node_timeout_ms: number;
  log_level: LogLevel;
  shutdown_timeout_ms: number;
  rate_limit_headers: 'quota' | 'rate';
  limits_fail_open: boolean;
  plugin_dir?: string;
  enable_jsvm: boolean;
  plugin_timeout_ms: number;
  coprocess_grpc_server?: string;
  jwks_cache_ttl_s: number;
  monitor_enable_trigger_monitors: boolean;
  monitor_global_trigger_limit: number;
  monitor_user_keys: boolean;
  monitor_org_keys: boolean;
  policies_allow_explicit_policy_id: boolean;
  streaming_enabled: boolean;
  streaming_bento_path?: string;
  dashboard_url?: string;
  node_secret?: string;
  dashboard_orgs: string;
  dashboard_poll_interval_ms: number;
  analytics_enabled: boolean;
  analytics_sample_rate: number;
  analytics_buffer_size: number;
  analytics_flush_interval_ms: number;
  analytics_dashboard_url?: string;
}
