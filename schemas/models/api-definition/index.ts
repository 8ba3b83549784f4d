/**
 * The classic API definition: the model the gateway stores and serves (`apiDefinitionModel`) and
 * the fields it shares with the ApiDefinition resource (`classicApiProperties`), assembled from
 * one file per section: auth.ts, proxy.ts, plugins.ts, access.ts (IP lists and limits),
 * versions.ts and endpoints.ts (versions and their per-path middleware), events.ts, graphql.ts,
 * not-yet.ts (fields of the reference svc does not enforce yet); ../builders.ts holds what they
 * share with the other models.
 * The order of the fields is the order of the generated CRD and types.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { ID_PATTERN, objectIdSchema } from '../../rules/ids.ts';
import { accessProperties } from './access.ts';
import { authProperties } from './auth.ts';
import { enforced, closedObject, strings } from '../builders.ts';
import { eventHandlers } from './events.ts';
import { graphql } from './graphql.ts';
import { notYetClassicProperties } from './not-yet.ts';
import { pluginProperties } from './plugins.ts';
import { proxy } from './proxy.ts';
import { versionData } from './versions.ts';

export { proxy } from './proxy.ts';

/** IDs the gateway accepts for APIs and policies: the one ID rule (schemas/rules/ids.ts). */
export const idPattern = ID_PATTERN;

/**
 * Fields a classic API definition has both in the gateway and in the ApiDefinition resource.
 * The gateway model adds `org_id` and IDs where the resource has cluster references.
 */
export const classicApiProperties: Record<string, JsonSchema> = {
  name: { 'x-svc-support': 'supported', type: 'string', minLength: 1, description: 'Name of the API.' },
  slug: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Short name of the API, used in dashboards.',
  },
  active: {
    'x-svc-support': 'supported',
    type: 'boolean',
    default: true,
    description: 'Whether the gateway serves the API.',
  },
  internal: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Reachable only from other APIs of the gateway, never from clients.',
  },
  protocol: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['', 'http', 'https', 'h2c', 'tcp', 'tls'],
    description:
      'Protocol of the listener. Empty serves on the gateway port with its protocol; http and https serve HTTP APIs on a `listen_port`; tcp and tls pipe each connection on the `listen_port` to a `tcp://` `proxy.target_url` (tls terminating TLS with the API\'s `certificates`, else the gateway\'s), honouring the IP lists and `global_rate_limit` per connection (docs/gateway.md, "TCP and TLS APIs"). h2c is not supported yet.',
  },
  listen_port: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    maximum: 65535,
    description: 'Port the gateway listens on for this API; 0 uses the gateway port.',
  },
  domain: {
    'x-svc-support': 'supported',
    type: 'string',
    description:
      'Host the API is bound to (`api.example.com` or `*.example.com`); requests must match it. A wildcard covers names of any depth below it (`a.example.com`, `a.b.example.com`) unless `domain_wildcard_one_label` is set.',
  },
  domain_wildcard_one_label: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'With a wildcard `domain` (`*.example.com`): serve names exactly one label below it (`a.example.com`, not `a.b.example.com`), as an Ingress wildcard host does; what the Ingress controller sets. An svc extension; refused without a wildcard domain.',
  },
  proxy,
  ...authProperties,
  ...pluginProperties,
  ...accessProperties,
  enable_detailed_recording: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      "Record request and response bodies in analytics: each request's analytics record carries its query and the first 16 KiB of its request body and of the upstream's response body, kept by the dashboard as the API's request log (`GET /api/analytics/requests`, the web UI's Analytics tab). Needs a dashboard that takes analytics records (mode pro, or `analytics_dashboard_url`); requests of the API are served by node:http, which reads bodies. A request body over 1 MiB or without a Content-Length streams upstream unrecorded (marked cut).",
  },
  enable_context_vars: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Replace `$tyk_context.` variables (path, path_parts, remote_addr, request_id, request_data, headers_<Name>, cookies_<name>) in header values and URL rewrites.',
  },
  version_data: versionData,
  event_handlers: enforced(eventHandlers),
  tags: {
    'x-svc-support': 'supported',
    type: 'array',
    items: { type: 'string' },
    description: 'Labels, also used to shard gateways.',
  },
  config_data: {
    'x-svc-support': 'supported',
    type: 'object',
    description: 'Free-form settings made available to middleware.',
    'x-kubernetes-preserve-unknown-fields': true,
  },
  CORS: closedObject(
    {
      'x-svc-support': 'supported',
      'x-svc-switch': 'enable',
      title: 'CorsConfig',
      description: 'Cross-origin resource sharing.',
    },
    {
      enable: { type: 'boolean', description: 'Answer CORS requests at the gateway.' },
      allowed_origins: strings(
        'Allowed origins: exact, `*` (any; also when empty), or one `*` wildcard (`https://*.example.com`).',
      ),
      allowed_methods: strings('Allowed methods (default GET, POST, HEAD; OPTIONS always).'),
      allowed_headers: strings(
        'Headers a request may send (default Origin, Accept, Content-Type, X-Requested-With; `*` any).',
      ),
      exposed_headers: strings('Headers exposed to clients.'),
      allow_credentials: { type: 'boolean', description: 'Allow credentials.' },
      max_age: { type: 'integer', minimum: 0, description: 'Seconds a preflight answer may be cached.' },
      options_passthrough: {
        type: 'boolean',
        description:
          'Send preflight requests on to the upstream (with the CORS headers) instead of answering them with 204.',
      },
      debug: { type: 'boolean', description: 'Log CORS decisions (debug level).' },
    },
  ),
  graphql,
  ...notYetClassicProperties(),
};

/** A classic API definition as the gateway stores and serves it. */
export const apiDefinitionModel: JsonSchema = closedObject(
  {
    title: 'GatewayApiDefinition',
    description: 'A classic API definition, as stored by the gateway (`/svc/apis`).',
    required: ['name', 'proxy'],
  },
  {
    api_id: { 'x-svc-support': 'supported', ...objectIdSchema('ID of the API; generated when absent.') },
    org_id: { 'x-svc-support': 'supported', type: 'string', description: 'Organization the API belongs to.' },
    is_oas: {
      'x-svc-support': 'supported',
      type: 'boolean',
      description:
        'Set by the gateway on the classic form of an OAS API (`/svc/apis/oas`): its one version is named `""`. Refused in `/svc/apis` writes.',
    },
    ...classicApiProperties,
    jwt_default_policies: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string', pattern: idPattern },
      description: 'Policy IDs applied when a token has no policy claim.',
    },
    jwt_scope_to_policy_mapping: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string', pattern: idPattern },
      description:
        'Scope -> policy ID: the policies of the scopes a token carries (claim `jwt_scope_claim_name`) are applied too (instead of the default policies when those were used).',
    },
    certificates: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string' },
      description: 'IDs of the certificates served on this API (HTTPS listen ports).',
    },
    client_certificates: {
      'x-svc-support': 'supported',
      type: 'array',
      items: { type: 'string' },
      description: 'SHA-256 fingerprints of the client certificates allowed by static mTLS.',
    },
    upstream_certificates: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Upstream mTLS: upstream host (`api.example.com`, `*.example.com` for its subdomains, `*` for any) -> ID of a certificate stored with its private key (`/svc/certs`), presented when the gateway connects to an https upstream with that host. An exact host wins over a wildcard, a wildcard over `*`.',
    },
    pinned_public_keys: {
      'x-svc-support': 'supported',
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'Certificate pinning: upstream host (`api.example.com`, `*.example.com`, `*`) -> comma-separated certificate IDs (`/svc/certs`) or public-key pins `sha256/<base64 of the SHA-256 of the DER SubjectPublicKeyInfo>`. A TLS connection to that upstream whose leaf public key matches none is refused (502).',
    },
  },
);
