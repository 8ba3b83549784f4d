/** The `x-svc-api-gateway` vendor extension and the OAS document that carries it. */
import type { JsonSchema } from '../json-schema.ts';
import { securityScheme } from './oas/authentication.ts';
import { oasOperation } from './oas/operation.ts';
import { DURATION, enabled, ipList, seconds, statuses, switched } from './oas/parts.ts';
import { oasStreamingExtension } from './oas/streaming.ts';
import { nonEmptyString, strings, objectOf } from './builders.ts';

const oasCors = switched('OasCors', 'Cross-origin resource sharing (classic `CORS`).', {
  allowedOrigins: strings('Allowed origins.'),
  allowedMethods: strings('Allowed methods.'),
  allowedHeaders: strings('Allowed request headers.'),
  exposedHeaders: strings('Headers exposed to clients.'),
  allowCredentials: { type: 'boolean', description: 'Allow credentials.' },
  maxAge: seconds('Seconds a preflight answer may be cached.'),
  optionsPassthrough: { type: 'boolean', description: 'Send preflight requests on to the upstream.' },
  debug: { type: 'boolean', description: 'Log CORS decisions.' },
});

const oasCache = switched('OasCache', 'Response caching (classic `cache_options`).', {
  timeout: seconds('Seconds a response stays cached (0: 60).'),
  cacheAllSafeRequests: { type: 'boolean', description: 'Cache every GET, HEAD and OPTIONS request.' },
  cacheResponseCodes: statuses,
  cacheByHeaders: strings('Headers joining the cache key.'),
  enableUpstreamCacheControl: { type: 'boolean', description: 'The upstream decides what is cached.' },
  controlTTLHeaderName: { type: 'string', description: 'Response header giving the time to live.' },
});

/** A list of upstream hosts (`domain`), each with its `field`. */
const perUpstreamHost = (description: string, field: string, value: JsonSchema): JsonSchema => ({
  type: 'array',
  description,
  items: objectOf(
    { required: ['domain', field] },
    { domain: { type: 'string', description: 'Upstream host.' }, [field]: value },
  ),
});

/** The `x-svc-api-gateway` vendor extension of an OAS document. */
export const oasGatewayExtension: JsonSchema = objectOf(
  {
    title: 'OasGatewayExtension',
    description: 'Gateway settings of an OAS API (`x-svc-api-gateway`).',
    required: ['info', 'server', 'upstream'],
    'x-kubernetes-preserve-unknown-fields': true,
  },
  {
    info: objectOf(
      { title: 'OasInfo', description: 'Identity and state of the API.', required: ['name', 'state'] },
      {
        id: { type: 'string', description: 'API ID; set by the gateway or the operator.' },
        orgId: { type: 'string', description: 'Organization of the API.' },
        name: nonEmptyString('Name of the API.'),
        state: objectOf(
          { title: 'OasState', description: 'Whether the API is served.', required: ['active'] },
          {
            active: { type: 'boolean', description: 'Serve the API.' },
            internal: { type: 'boolean', description: 'Reachable only from other APIs.' },
          },
        ),
      },
    ),
    upstream: objectOf(
      {
        title: 'OasUpstream',
        description: 'Where requests go.',
        required: ['url'],
        'x-kubernetes-preserve-unknown-fields': true,
      },
      {
        url: nonEmptyString('Upstream address.'),
        mutualTLS: objectOf(
          {
            title: 'OasUpstreamMutualTls',
            description:
              'Client certificates the gateway presents upstream (classic: `upstream_certificates`).',
          },
          {
            enabled: enabled('upstream client certificates'),
            domainToCertificateMapping: perUpstreamHost(
              'Upstream host (api.example.com, *.example.com or *) and the ID of a certificate uploaded with its key.',
              'certificate',
              { type: 'string', description: 'Certificate ID.' },
            ),
          },
        ),
        certificatePinning: objectOf(
          {
            title: 'OasCertificatePinning',
            description: 'Public keys the upstream must present (classic: `pinned_public_keys`).',
          },
          {
            enabled: enabled('certificate pinning'),
            domainToPublicKeysMapping: perUpstreamHost(
              'Upstream host and its pins: certificate IDs or `sha256/<base64>` public-key pins.',
              'publicKeys',
              strings('Pins of the host.'),
            ),
          },
        ),
      },
    ),
    server: objectOf(
      {
        title: 'OasServer',
        description: 'How the gateway serves the API.',
        required: ['listenPath'],
        'x-kubernetes-preserve-unknown-fields': true,
      },
      {
        listenPath: objectOf(
          { title: 'OasListenPath', description: 'Base path on the gateway.', required: ['value'] },
          {
            value: { type: 'string', pattern: '^/', description: 'Listen path; starts with `/`.' },
            strip: { type: 'boolean', description: 'Remove the listen path before proxying.' },
          },
        ),
        customDomain: objectOf(
          { title: 'OasCustomDomain', description: 'Host the API is bound to.' },
          {
            enabled: enabled('the custom domain'),
            name: { type: 'string', description: 'Domain name.' },
            certificates: strings(
              "IDs of the certificates (stored with their private keys) served to clients for the domain (classic: `certificates`): the API is then served over HTTPS on the gateway's HTTPS port (`https_port`), the certificate chosen by the client's server name (SNI).",
            ),
          },
        ),
        detailedTracing: objectOf(
          { title: 'OasDetailedTracing', description: 'Detailed tracing of requests.' },
          { enabled: enabled('detailed tracing') },
        ),
        clientCertificates: objectOf(
          {
            title: 'OasClientCertificates',
            description:
              'Static mutual TLS: only clients presenting a listed certificate pass (classic: `use_mutual_tls_auth`, `client_certificates`).',
          },
          {
            enabled: enabled('static mutual TLS'),
            allowlist: strings('IDs of the certificates allowed.'),
          },
        ),
        authentication: objectOf(
          {
            title: 'OasAuthentication',
            description: 'Client authentication.',
            'x-kubernetes-preserve-unknown-fields': true,
          },
          {
            enabled: enabled('authentication (false makes the API keyless)'),
            stripAuthorizationData: {
              type: 'boolean',
              description: 'Remove the credentials before proxying.',
            },
            baseIdentityProvider: {
              type: 'string',
              description: 'Chained auth: the method that provides the session.',
            },
            securitySchemes: {
              type: 'object',
              additionalProperties: securityScheme,
              description: 'Settings per security scheme name.',
            },
          },
        ),
      },
    ),
    middleware: objectOf(
      {
        title: 'OasMiddleware',
        description:
          'Per-API and per-operation middleware, converted to the classic fields the gateway enforces (docs/gateway.md, "OAS APIs"); any other entry that is set is refused by name.',
        'x-kubernetes-preserve-unknown-fields': true,
      },
      {
        global: objectOf(
          {
            title: 'OasGlobalMiddleware',
            description: 'Middleware of every request to the API.',
            'x-kubernetes-preserve-unknown-fields': true,
          },
          {
            ipAllowList: objectOf(
              {
                title: 'OasIpAllowList',
                description:
                  'Only clients in `allow` pass (classic: `enable_ip_whitelisting`, `allowed_ips`).',
              },
              {
                enabled: enabled('the allow list'),
                allow: ipList('Client addresses allowed:'),
              },
            ),
            ipBlockList: objectOf(
              {
                title: 'OasIpBlockList',
                description:
                  'Clients in `block` are refused with 403 (classic: `enable_ip_blacklisting`, `blacklisted_ips`).',
              },
              {
                enabled: enabled('the block list'),
                block: ipList('Client addresses refused:'),
              },
            ),
            rateLimit: objectOf(
              {
                title: 'OasRateLimit',
                description:
                  'Rate limit of the whole API, all clients together (classic: `global_rate_limit`); over it: 429.',
              },
              {
                enabled: enabled('the API-wide rate limit'),
                rate: { type: 'integer', minimum: 1, description: 'Requests allowed per `per`.' },
                per: {
                  type: 'string',
                  pattern: DURATION,
                  description:
                    'The window, as a duration of whole seconds: `1s`, `30s`, `1m`, `1h30m` (units h, m, s; ms, us and ns only as parts of whole seconds).',
                },
              },
            ),
            cors: oasCors,
            cache: oasCache,
            skipRateLimit: {
              type: 'boolean',
              description: "Skip the keys' rate limits on this API (classic: `disable_rate_limit`).",
            },
            skipQuota: {
              type: 'boolean',
              description:
                "Skip the keys' quota checks on every request to this API (classic: `disable_quota`); nothing is counted.",
            },
            skipQuotaReset: {
              type: 'boolean',
              description:
                "Keep a key's quota counters when the key is created or updated, for keys granted this API (classic: `dont_set_quota_on_create`).",
            },
          },
        ),
        operations: {
          type: 'object',
          description:
            'Middleware per operation, by the `operationId` of an operation in `paths` (its path and method); an ID that names no operation is refused.',
          additionalProperties: oasOperation,
        },
      },
    ),
  },
);

/** An OAS 3.x document carrying `x-svc-api-gateway` (the body of `/svc/apis/oas`). */
export const oasApiDocument: JsonSchema = objectOf(
  {
    title: 'OasApiDocument',
    description: 'An OpenAPI 3.x document with the gateway extension `x-svc-api-gateway`.',
    required: ['openapi', 'info', 'paths', 'x-svc-api-gateway'],
    'x-kubernetes-preserve-unknown-fields': true,
  },
  {
    openapi: { type: 'string', pattern: '^3\\.', description: 'OpenAPI version, 3.x.' },
    info: objectOf(
      {
        title: 'OasDocumentInfo',
        description: 'Document information.',
        required: ['title', 'version'],
        'x-kubernetes-preserve-unknown-fields': true,
      },
      {
        title: { type: 'string', description: 'Title of the API.' },
        version: { type: 'string', description: 'Version of the document.' },
      },
    ),
    paths: {
      type: 'object',
      description: 'Operations by path.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    components: {
      type: 'object',
      description: 'Reusable parts, among them `securitySchemes`.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    'x-svc-api-gateway': oasGatewayExtension,
    'x-svc-streaming': oasStreamingExtension,
  },
);
