/**
 * The dashboard's process configuration: one closed schema, the env variable and flag of each
 * key, and the type the loader returns. Like the gateway's, it has no default secret.
 */
import { configSources, serverProcessProperties } from '../../lib/config.ts';
import type { JsonSchema } from '../../schemas/json-schema.ts';
import type { LogLevel } from '../../lib/log.ts';

/** The shortest admin secret accepted: long enough not to be guessed. */
export const MIN_SECRET_LENGTH = 16;

/** The dashboard's configuration schema; every key is documented and checked strictly. */
export const dashboardConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['admin_secret'],
  properties: {
    admin_secret: {
      type: 'string',
      minLength: MIN_SECRET_LENGTH,
      description:
        'Secret of the admin API (`/admin/...`, header `admin-auth`): organisations and their first users. Required, at least 16 characters; there is no default.',
    },
    listen_address: { type: 'string', default: '0.0.0.0', description: 'Address the dashboard binds to.' },
    listen_port: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 3000,
      description:
        'Port of the dashboard (management API, `/hello`, `/ready`, `/metrics`). 0 picks a free port.',
    },
    storage: {
      type: 'string',
      enum: ['sqlite', 'postgres'],
      default: 'sqlite',
      description:
        '`sqlite` keeps everything in `<data_dir>/dashboard.sqlite` (node:sqlite); `postgres` in the database of `postgres_url`.',
    },
    data_dir: {
      type: 'string',
      minLength: 1,
      default: 'data',
      description: 'Directory of the SQLite file (created when missing).',
    },
    postgres_url: {
      type: 'string',
      pattern: '^postgres(ql)?://.+',
      description: '`postgres://user:password@host:port/database`: required when `storage` is `postgres`.',
    },
    page_size: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: 'Items per page of the lists (`?p=<page>`; `?p=-1` returns every item).',
    },
    streaming_enabled: {
      type: 'boolean',
      default: false,
      description: '`streaming.enabled`: manage streams APIs (`/api/apis/streams`). False refuses them.',
    },
    allow_explicit_policy_id: {
      type: 'boolean',
      default: false,
      description:
        'Accept the `id` of a policy on create (the operator keeps policy IDs stable this way). False refuses a policy that names its ID.',
    },
    enable_duplicate_slugs: {
      type: 'boolean',
      default: false,
      description:
        'Let several APIs of an organisation share a slug. False refuses a second API with a slug in use.',
    },
    api_writes_system_users_only: {
      type: 'boolean',
      default: false,
      description:
        'Only system users (the operator) may write API definitions (classic, OAS, streams); others get 403. Recommended in production.',
    },
    node_secret: {
      type: 'string',
      minLength: MIN_SECRET_LENGTH,
      description:
        'Secret gateways in mode pro send (`--node-secret`, header `x-svc-node-secret`) to register and load APIs, policies and keys from `/system/...`. Unset: no gateway can connect. At least 16 characters.',
    },
    analytics_minute_retention_hours: {
      type: 'integer',
      minimum: 1,
      maximum: 8760,
      default: 48,
      description:
        "Traffic analytics: hours the per-minute rollups of the gateways' requests are kept (ranges up to 48 hours are read per minute).",
    },
    analytics_hour_retention_days: {
      type: 'integer',
      minimum: 1,
      maximum: 3650,
      default: 90,
      description: "Traffic analytics: days the per-hour rollups of the gateways' requests are kept.",
    },
    analytics_detail_retention_hours: {
      type: 'integer',
      minimum: 1,
      maximum: 8760,
      default: 24,
      description:
        'Traffic analytics: hours the detailed records (with bodies) of APIs with `enable_detailed_recording` are kept.',
    },
    analytics_detail_max_records: {
      type: 'integer',
      minimum: 1,
      maximum: 1000000,
      default: 1000,
      description:
        'Traffic analytics: detailed records kept per API at most (its newest); each body is at most 16 KiB, so an API keeps at most this x 32 KiB of bodies.',
    },
    metrics_enabled: {
      type: 'boolean',
      default: true,
      description: 'Answer Prometheus scrapes on `/metrics` (no secret, like `/hello`).',
    },
    ...serverProcessProperties,
  },
};

/** Environment variable and flag of each key: `SVC_DB_<KEY>` and `--<key>` but where named. */
export const dashboardConfigSources = configSources(dashboardConfigSchema, 'SVC_DB_', {
  listen_address: { flag: 'host' },
  listen_port: { flag: 'port' },
});

/** The decoded configuration (see the schema for each key). */
export interface DashboardConfig {
  admin_secret: string;
  listen_address: string;
  listen_port: number;
  storage: 'sqlite' | 'postgres';
  data_dir: string;
  postgres_url?: string;
  page_size: number;
  streaming_enabled: boolean;
  allow_explicit_policy_id: boolean;
  enable_duplicate_slugs: boolean;
  api_writes_system_users_only: boolean;
  node_secret?: string;
  analytics_minute_retention_hours: number;
  analytics_hour_retention_days: number;
  analytics_detail_retention_hours: number;
  analytics_detail_max_records: number;
  metrics_enabled: boolean;
  log_level: LogLevel;
  shutdown_timeout_ms: number;
}
