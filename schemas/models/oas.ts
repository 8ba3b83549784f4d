import type { JsonSchema } from '../json-schema.ts';

const enabled = (what: string): JsonSchema => ({ type: 'boolean', description: `Enables ${what}.` });

const ipList = (what: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: `${what} IPv4 or IPv6 addresses and CIDR ranges (no wildcards).`,
});

/** A duration as Go writes one (`1m30s`): decimal numbers, each with a unit. */
export const DURATION = '^([0-9]+(\\.[0-9]+)?(h|m|s|ms|us|µs|ns))+$';

const credentialLocation = (where: string): JsonSchema => ({
  title: 'CredentialLocation',
  description: `Read the credentials from ${where} as well.`,
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: enabled('this location'),
    name: { type: 'string', description: 'Name of the header, query parameter or cookie.' },
  },
});

/** Settings of one security scheme under `x-svc-api-gateway.server.authentication`. */
const securityScheme: JsonSchema = {
  title: 'OasSecurityScheme',
  description: 'Gateway settings of a security scheme declared in `components.securitySchemes`.',
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: enabled('the scheme'),
    header: credentialLocation('a header'),
    query: credentialLocation('a query parameter (case-sensitive)'),
    cookie: credentialLocation('a cookie (case-sensitive)'),
    enableClientCertificate: enabled('dynamic mTLS: a client certificate replaces the token'),
    signatureValidation: {
      title: 'OasSignatureValidation',
      description: 'Signature validation with the auth token.',
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: enabled('signature validation'),
        algorithm: {
          type: 'string',
          enum: ['VendorSHA256', 'VendorMD5'],
          description: 'Signature algorithm.',
        },
        header: { type: 'string', description: 'Header that carries the signature.' },
        query: { type: 'string', description: 'Query parameter that carries the signature.' },
        secret: { type: 'string', description: 'Shared secret.' },
        allowedClockSkew: { type: 'integer', minimum: 0, description: 'Allowed clock skew in seconds.' },
        errorCode: { type: 'integer', minimum: 400, maximum: 599, description: 'Status of a refusal.' },
        errorMessage: { type: 'string', description: 'Message of a refusal.' },
      },
    },
    source: {
      type: 'string',
      description:
        'JWT: the key that verifies tokens: a base64 secret or PEM public key, or the URL of a JWKS.',
    },
    signingMethod: {
      type: 'string',
      enum: ['hmac', 'rsa', 'ecdsa'],
      description: 'JWT: the family of algorithms the tokens are signed with.',
    },
    identityBaseField: { type: 'string', description: 'JWT: the claim that identifies the client (`sub`).' },
    skipKid: { type: 'boolean', description: 'JWT: ignore the `kid` header of tokens.' },
    policyFieldName: { type: 'string', description: 'JWT: the claim that carries the policy ID to apply.' },
    clientBaseField: { type: 'string', description: 'JWT: the claim that names the client key.' },
    defaultPolicies: {
      type: 'array',
      items: { type: 'string' },
      description: 'JWT: policy IDs applied when a token has no policy claim.',
    },
    issuedAtValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `iat`.',
    },
    notBeforeValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `nbf`.',
    },
    expiresAtValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `exp`.',
    },
    cacheTTL: {
      type: 'integer',
      minimum: 0,
      description: 'Basic auth: seconds verified credentials stay cached.',
    },
    disableCaching: { type: 'boolean', description: 'Basic auth: no credential cache.' },
    extractCredentialsFromBody: {
      title: 'OasBodyCredentials',
      description: 'Basic auth: take the credentials from the request body.',
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: enabled('body extraction'),
        userRegexp: { type: 'string', description: 'Regular expression with one group capturing the user.' },
        passwordRegexp: {
          type: 'string',
          description: 'Regular expression with one group capturing the password.',
        },
      },
    },
  },
};

const switched = (
  title: string,
  description: string,
  properties: Record<string, JsonSchema> = {},
): JsonSchema => ({
  title,
  description,
  type: 'object',
  properties: { enabled: enabled('it'), ...properties },
  'x-kubernetes-preserve-unknown-fields': true,
});

const headerList = (description: string): JsonSchema => ({
  type: 'array',
  description,
  items: {
    title: 'OasHeader',
    description: 'A header.',
    type: 'object',
    required: ['name'],
    properties: {
      name: { type: 'string', minLength: 1, description: 'Header name.' },
      value: { type: 'string', description: 'Header value.' },
    },
  },
});

const seconds = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });
const statuses: JsonSchema = { type: 'array', items: { type: 'integer' }, description: 'Statuses cached.' };

const endpointSwitch = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    ignoreCase: { type: 'boolean', description: 'Match the path case-insensitively.' },
  });

const headerTransform = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    add: headerList('Headers set (a header already there is replaced).'),
    remove: { type: 'array', items: { type: 'string' }, description: 'Headers removed.' },
  });

const bodyTransform = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    format: {
      type: 'string',
      enum: ['json', 'xml'],
      description:
        'Format of the body the template reads: `json`, or `xml` read into a map as the reference reads it (docs/gateway.md, "Body transforms").',
    },
    body: { type: 'string', description: 'The template, base64-encoded.' },
    path: { type: 'string', description: 'File of the template (instead of `body`).' },
  });

/** One rule of a URL rewrite trigger. */
const oasRewriteRule: JsonSchema = {
  title: 'OasUrlRewriteRule',
  description: 'A condition of a trigger.',
  type: 'object',
  required: ['in', 'pattern'],
  properties: {
    in: {
      type: 'string',
      enum: ['header', 'query', 'path', 'sessionMetadata', 'requestBody', 'requestContext'],
      description: 'Where the value is read.',
    },
    name: { type: 'string', description: 'Name of the header, parameter, path part or key.' },
    pattern: { type: 'string', description: 'Regular expression the value must match.' },
    negate: { type: 'boolean', description: 'Trigger when the value does not match.' },
  },
};

/** Middleware of one operation (`middleware.operations.<operationId>`). */
const oasOperation: JsonSchema = {
  title: 'OasOperation',
  description: 'Middleware of one operation (classic: `extended_paths` entries of its path and method).',
  type: 'object',
  properties: {
    allow: endpointSwitch('OasAllow', 'Only allowed operations are served (classic `white_list`).'),
    block: endpointSwitch('OasBlock', 'Refused with 403 (classic `black_list`).'),
    ignoreAuthentication: endpointSwitch(
      'OasIgnoreAuthentication',
      'Served without authentication (classic `ignored`).',
    ),
    internal: switched(
      'OasInternal',
      'Reachable only through internal targets of the gateway (`svc://self/...`, `svc://<api>/...`); a client calling it directly gets 403 (classic `internal`).',
    ),
    requestSizeLimit: switched('OasRequestSizeLimit', 'Largest request body (classic `size_limits`).', {
      value: { type: 'integer', minimum: 0, description: 'Bytes; past them 413.' },
    }),
    transformRequestHeaders: headerTransform(
      'OasTransformRequestHeaders',
      'Request header changes (classic `transform_headers`).',
    ),
    transformResponseHeaders: headerTransform(
      'OasTransformResponseHeaders',
      'Response header changes (classic `transform_response_headers`).',
    ),
    transformRequestMethod: switched(
      'OasTransformRequestMethod',
      'Method change (classic `method_transforms`).',
      {
        toMethod: { type: 'string', description: 'Method sent upstream.' },
      },
    ),
    urlRewrite: switched('OasUrlRewrite', 'URL rewrite (classic `url_rewrites`).', {
      pattern: { type: 'string', description: 'Regular expression over the path (the basic trigger).' },
      rewriteTo: { type: 'string', description: 'Rewrite target; `$1`... are the groups of `pattern`.' },
      triggers: {
        type: 'array',
        description: 'Advanced triggers; the first that fires gives the target.',
        items: {
          title: 'OasUrlRewriteTrigger',
          description: 'A trigger.',
          type: 'object',
          required: ['rules', 'rewriteTo'],
          properties: {
            condition: { type: 'string', enum: ['any', 'all'], description: 'Any rule or all rules.' },
            rules: { type: 'array', items: oasRewriteRule, description: 'The conditions.' },
            rewriteTo: { type: 'string', description: 'Rewrite target when the trigger fires.' },
          },
        },
      },
    }),
    transformRequestBody: bodyTransform(
      'OasTransformRequestBody',
      'Request body template (classic `transform`).',
    ),
    transformResponseBody: bodyTransform(
      'OasTransformResponseBody',
      'Response body template (classic `transform_response`).',
    ),
    validateRequest: switched(
      'OasValidateRequest',
      "The JSON body is validated against the operation's `requestBody` schema (classic `validate_json`).",
      {
        errorResponseCode: {
          type: 'integer',
          minimum: 400,
          maximum: 599,
          description: 'Status of a refused body (default 422).',
        },
      },
    ),
    mockResponse: switched(
      'OasMockResponse',
      'The gateway answers instead of the upstream (classic `mock_response`).',
      {
        code: { type: 'integer', description: 'Status (default 200).' },
        body: { type: 'string', description: 'Body.' },
        headers: headerList('Headers.'),
      },
    ),
    enforceTimeout: switched('OasEnforceTimeout', 'Upstream timeout (classic `hard_timeouts`).', {
      value: seconds('Seconds the upstream has to answer; past them 504.'),
    }),
    circuitBreaker: switched('OasCircuitBreaker', 'Circuit breaker (classic `circuit_breakers`).', {
      threshold: {
        type: 'number',
        minimum: 0,
        maximum: 1,
        description: 'Share of failed samples that opens it.',
      },
      sampleSize: { type: 'integer', minimum: 0, description: 'Requests the share is computed over.' },
      coolDownPeriod: seconds('Seconds before the endpoint is tried again.'),
      halfOpenStateEnabled: { type: 'boolean', description: 'Return to service on trial requests.' },
    }),
    cache: switched('OasOperationCache', 'Caching of this operation (classic `advance_cache_config`).', {
      timeout: seconds('Seconds a response stays cached.'),
      cacheResponseCodes: statuses,
    }),
    trackEndpoint: switched(
      'OasTrackEndpoint',
      "The operation's requests are counted under its path in the request metrics' `endpoint` label (classic `track_endpoints`).",
    ),
    doNotTrackEndpoint: switched(
      'OasDoNotTrackEndpoint',
      "The operation's requests are left out of the request metrics (classic `do_not_track_endpoints`).",
    ),
  },
  'x-kubernetes-preserve-unknown-fields': true,
};

const oasCors = switched('OasCors', 'Cross-origin resource sharing (classic `CORS`).', {
  allowedOrigins: { type: 'array', items: { type: 'string' }, description: 'Allowed origins.' },
  allowedMethods: { type: 'array', items: { type: 'string' }, description: 'Allowed methods.' },
  allowedHeaders: { type: 'array', items: { type: 'string' }, description: 'Allowed request headers.' },
  exposedHeaders: { type: 'array', items: { type: 'string' }, description: 'Headers exposed to clients.' },
  allowCredentials: { type: 'boolean', description: 'Allow credentials.' },
  maxAge: seconds('Seconds a preflight answer may be cached.'),
  optionsPassthrough: { type: 'boolean', description: 'Send preflight requests on to the upstream.' },
  debug: { type: 'boolean', description: 'Log CORS decisions.' },
});

const oasCache = switched('OasCache', 'Response caching (classic `cache_options`).', {
  timeout: seconds('Seconds a response stays cached (0: 60).'),
  cacheAllSafeRequests: { type: 'boolean', description: 'Cache every GET, HEAD and OPTIONS request.' },
  cacheResponseCodes: statuses,
  cacheByHeaders: { type: 'array', items: { type: 'string' }, description: 'Headers joining the cache key.' },
  enableUpstreamCacheControl: { type: 'boolean', description: 'The upstream decides what is cached.' },
  controlTTLHeaderName: { type: 'string', description: 'Response header giving the time to live.' },
});

/** The `x-svc-api-gateway` vendor extension of an OAS document. */
export const oasGatewayExtension: JsonSchema = {
  title: 'OasGatewayExtension',
  description: 'Gateway settings of an OAS API (`x-svc-api-gateway`).',
  type: 'object',
  required: ['info', 'server', 'upstream'],
  properties: {
    info: {
      title: 'OasInfo',
      description: 'Identity and state of the API.',
      type: 'object',
      required: ['name', 'state'],
      properties: {
        id: { type: 'string', description: 'API ID; set by the gateway or the operator.' },
        orgId: { type: 'string', description: 'Organization of the API.' },
        name: { type: 'string', minLength: 1, description: 'Name of the API.' },
        state: {
          title: 'OasState',
          description: 'Whether the API is served.',
          type: 'object',
          required: ['active'],
          properties: {
            active: { type: 'boolean', description: 'Serve the API.' },
            internal: { type: 'boolean', description: 'Reachable only from other APIs.' },
          },
        },
      },
    },
    upstream: {
      title: 'OasUpstream',
      description: 'Where requests go.',
      type: 'object',
      required: ['url'],
      properties: {
        url: { type: 'string', minLength: 1, description: 'Upstream address.' },
        mutualTLS: {
          title: 'OasUpstreamMutualTls',
          description:
            'Client certificates the gateway presents upstream (classic: `upstream_certificates`).',
          type: 'object',
          properties: {
            enabled: enabled('upstream client certificates'),
            domainToCertificateMapping: {
              type: 'array',
              description:
                'Upstream host (api.example.com, *.example.com or *) and the ID of a certificate uploaded with its key.',
              items: {
                type: 'object',
                required: ['domain', 'certificate'],
                properties: {
                  domain: { type: 'string', description: 'Upstream host.' },
                  certificate: { type: 'string', description: 'Certificate ID.' },
                },
              },
            },
          },
        },
        certificatePinning: {
          title: 'OasCertificatePinning',
          description: 'Public keys the upstream must present (classic: `pinned_public_keys`).',
          type: 'object',
          properties: {
            enabled: enabled('certificate pinning'),
            domainToPublicKeysMapping: {
              type: 'array',
              description:
                'Upstream host and its pins: certificate IDs or `sha256/<base64>` public-key pins.',
              items: {
                type: 'object',
                required: ['domain', 'publicKeys'],
                properties: {
                  domain: { type: 'string', description: 'Upstream host.' },
                  publicKeys: { type: 'array', items: { type: 'string' }, description: 'Pins of the host.' },
                },
              },
            },
          },
        },
      },
      'x-kubernetes-preserve-unknown-fields': true,
    },
    server: {
      title: 'OasServer',
      description: 'How the gateway serves the API.',
      type: 'object',
      required: ['listenPath'],
      properties: {
        listenPath: {
          title: 'OasListenPath',
          description: 'Base path on the gateway.',
          type: 'object',
          required: ['value'],
          properties: {
            value: { type: 'string', pattern: '^/', description: 'Listen path; starts with `/`.' },
            strip: { type: 'boolean', description: 'Remove the listen path before proxying.' },
          },
        },
        customDomain: {
          title: 'OasCustomDomain',
          description: 'Host the API is bound to.',
          type: 'object',
          properties: {
            enabled: enabled('the custom domain'),
            name: { type: 'string', description: 'Domain name.' },
          },
        },
        detailedTracing: {
          title: 'OasDetailedTracing',
          description: 'Detailed tracing of requests.',
          type: 'object',
          properties: { enabled: enabled('detailed tracing') },
        },
        clientCertificates: {
          title: 'OasClientCertificates',
          description:
            'Static mutual TLS: only clients presenting a listed certificate pass (classic: `use_mutual_tls_auth`, `client_certificates`).',
          type: 'object',
          properties: {
            enabled: enabled('static mutual TLS'),
            allowlist: {
              type: 'array',
              items: { type: 'string' },
              description: 'IDs of the certificates allowed.',
            },
          },
        },
        authentication: {
          title: 'OasAuthentication',
          description: 'Client authentication.',
          type: 'object',
          properties: {
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
          'x-kubernetes-preserve-unknown-fields': true,
        },
      },
      'x-kubernetes-preserve-unknown-fields': true,
    },
    middleware: {
      title: 'OasMiddleware',
      description:
        'Per-API and per-operation middleware, converted to the classic fields the gateway enforces (docs/gateway.md, "OAS APIs"); any other entry that is set is refused by name.',
      type: 'object',
      properties: {
        global: {
          title: 'OasGlobalMiddleware',
          description: 'Middleware of every request to the API.',
          type: 'object',
          properties: {
            ipAllowList: {
              title: 'OasIpAllowList',
              description: 'Only clients in `allow` pass (classic: `enable_ip_whitelisting`, `allowed_ips`).',
              type: 'object',
              properties: {
                enabled: enabled('the allow list'),
                allow: ipList('Client addresses allowed:'),
              },
            },
            ipBlockList: {
              title: 'OasIpBlockList',
              description:
                'Clients in `block` are refused with 403 (classic: `enable_ip_blacklisting`, `blacklisted_ips`).',
              type: 'object',
              properties: {
                enabled: enabled('the block list'),
                block: ipList('Client addresses refused:'),
              },
            },
            rateLimit: {
              title: 'OasRateLimit',
              description:
                'Rate limit of the whole API, all clients together (classic: `global_rate_limit`); over it: 429.',
              type: 'object',
              properties: {
                enabled: enabled('the API-wide rate limit'),
                rate: { type: 'integer', minimum: 1, description: 'Requests allowed per `per`.' },
                per: {
                  type: 'string',
                  pattern: DURATION,
                  description:
                    'The window, as a duration of whole seconds: `1s`, `30s`, `1m`, `1h30m` (units h, m, s; ms, us and ns only as parts of whole seconds).',
                },
              },
            },
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
          'x-kubernetes-preserve-unknown-fields': true,
        },
        operations: {
          type: 'object',
          description:
            'Middleware per operation, by the `operationId` of an operation in `paths` (its path and method); an ID that names no operation is refused.',
          additionalProperties: oasOperation,
        },
      },
      'x-kubernetes-preserve-unknown-fields': true,
    },
  },
  'x-kubernetes-preserve-unknown-fields': true,
};

const connector: JsonSchema = {
  type: 'object',
  description:
    'One connector: an object with a single key naming its type (`http_server`, `kafka`, `http_client`, `broker`, `portal_webhook`, ...) and its settings, plus an optional `label`.',
  minProperties: 1,
  'x-kubernetes-preserve-unknown-fields': true,
};

/** The `x-svc-streaming` vendor extension of a streams OAS document. */
export const oasStreamingExtension: JsonSchema = {
  title: 'OasStreamingExtension',
  description: 'Asynchronous streams of the API (`x-svc-streaming`).',
  type: 'object',
  required: ['streams'],
  properties: {
    streams: {
      type: 'object',
      minProperties: 1,
      description: 'Streams by name; each runs as its own pipeline: input, processors, output.',
      additionalProperties: {
        title: 'Stream',
        description: 'One stream.',
        type: 'object',
        required: ['input', 'output'],
        properties: {
          input: connector,
          output: connector,
          pipeline: {
            title: 'StreamPipeline',
            description: 'Processing between input and output.',
            type: 'object',
            properties: {
              processors: {
                type: 'array',
                items: {
                  type: 'object',
                  description: 'One processing step (`mapping`, `branch`, `switch`, `http`, ...).',
                  'x-kubernetes-preserve-unknown-fields': true,
                },
                description: 'Ordered processing steps.',
              },
            },
            'x-kubernetes-preserve-unknown-fields': true,
          },
        },
        'x-kubernetes-preserve-unknown-fields': true,
      },
    },
  },
  'x-kubernetes-preserve-unknown-fields': true,
};

/** An OAS 3.x document carrying `x-svc-api-gateway` (the body of `/svc/apis/oas`). */
export const oasApiDocument: JsonSchema = {
  title: 'OasApiDocument',
  description: 'An OpenAPI 3.x document with the gateway extension `x-svc-api-gateway`.',
  type: 'object',
  required: ['openapi', 'info', 'paths', 'x-svc-api-gateway'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.', description: 'OpenAPI version, 3.x.' },
    info: {
      title: 'OasDocumentInfo',
      description: 'Document information.',
      type: 'object',
      required: ['title', 'version'],
      properties: {
        title: { type: 'string', description: 'Title of the API.' },
        version: { type: 'string', description: 'Version of the document.' },
      },
      'x-kubernetes-preserve-unknown-fields': true,
    },
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
  'x-kubernetes-preserve-unknown-fields': true,
};
