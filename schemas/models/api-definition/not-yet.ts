/**
 * The fields of the reference's classic model at the end of the classic API: those svc does not
 * enforce yet, and a few of the same origin that it enforces since (`do_not_track`,
 * `uptime_tests`, `cache_options`, `response_processors`), and the versions' `definition`.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { notYet, enforced, strings, stringMap, openObject, closedObject, objectOf } from '../builders.ts';
import { versionDefinition } from './versions.ts';

/**
 * Fields of the reference's classic model that svc does not enforce yet (each flagged
 * `not-supported`): accepted so that migrating manifests are not refused for an unknown field,
 * refused when set to a value that changes behaviour (docs/compatibility.md).
 */
export function notYetClassicProperties(): Record<string, JsonSchema> {
  const flag = (
    description: string,
    reason: string,
    type: 'boolean' | 'string' | 'integer' = 'boolean',
  ): JsonSchema => notYet({ type, description }, reason);
  return {
    id: flag(
      'Database ID of other gateways; has no meaning here.',
      "a database ID of the reference's dashboard: svc has no such database, and names an API by `api_id`",
      'string',
    ),
    expiration: flag(
      'When the API stops being served (`2006-01-02 15:04`).',
      'not built yet: an API is served until it is deleted or `active` is false; versions can expire (`version_data.versions.<v>.expires`)',
      'string',
    ),
    enable_proxy_protocol: flag(
      'Accept the PROXY protocol on the listener (TCP APIs).',
      'not built yet: neither TCP and TLS listeners (`protocol` tcp, tls) nor HTTP listeners read a PROXY protocol header',
    ),
    do_not_track: enforced({
      type: 'boolean',
      description:
        'Leave the API\'s requests out of the request metrics (`svc_gateway_requests_total`, `svc_gateway_request_duration_seconds`; docs/gateway.md, "Metrics").',
    }),
    use_oauth2: enforced({
      type: 'boolean',
      description:
        'OAuth 2.0 at the gateway: clients registered with `/svc/oauth/clients/create`, tokens issued by `POST {listen_path}oauth/token` (client credentials, or a code of the authorize flow at `{listen_path}oauth/authorize`) and checked as bearer tokens (docs/gateway.md, "OAuth 2.0").',
    }),
    oauth_meta: enforced(
      closedObject(
        {
          title: 'OAuth2Meta',
          description:
            'Settings of the OAuth 2.0 authorization server: svc serves the `client_credentials` and `authorization_code` grants and the response types `code` and `token` (no refresh tokens, no password grant: refused).',
        },
        {
          allowed_access_types: {
            type: 'array',
            items: {
              type: 'string',
              enum: ['authorization_code', 'refresh_token', 'password', 'client_credentials'],
            },
            description:
              'Grant types clients may use at the token endpoint: `client_credentials`, `authorization_code` (with the response type `code`); `refresh_token` and `password` are refused.',
          },
          allowed_authorize_types: {
            type: 'array',
            items: { type: 'string', enum: ['code', 'token'] },
            description:
              '`response_type` values the authorize endpoint (`{listen_path}oauth/authorize`) takes: `code` (a code for the authorization_code grant) and `token` (a token, the implicit grant).',
          },
          auth_login_redirect: {
            type: 'string',
            description:
              'Login page of the authorization flow: the authorize endpoint sends the user there (307); once signed in, it asks `POST /svc/oauth/authorize-client` for the code or token. Required with `allowed_authorize_types`.',
          },
        },
      ),
    ),
    notifications: notYet(
      closedObject(
        { title: 'NotificationsManager', description: 'Where OAuth key changes are notified.' },
        {
          shared_secret: { type: 'string', description: 'Secret sent with notifications.' },
          oauth_on_keychange_url: { type: 'string', description: 'URL notified of key changes.' },
        },
      ),
      'notifies changes of keys issued by the OAuth 2.0 authorization server, which svc is not (see `use_oauth2`)',
    ),
    external_oauth: notYet(
      openObject(
        'Tokens of an external OAuth server checked by introspection or JWT: `enabled`, `providers`.',
      ),
      "not built yet: token introspection (RFC 7662) is not implemented; validate JWT access tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    use_openid: flag(
      'OpenID Connect authentication.',
      "not built yet as a method of its own (issuers and client IDs mapped to policies); validate OpenID Connect ID tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    openid_options: notYet(
      closedObject(
        { title: 'OpenIDOptions', description: 'OpenID Connect providers.' },
        {
          providers: {
            type: 'array',
            description: 'Accepted providers.',
            items: closedObject(
              { title: 'OIDProviderConfig', description: 'One provider.' },
              {
                issuer: { type: 'string', description: 'Issuer of the tokens.' },
                client_ids: stringMap('Client ID (base64) -> policy ID.'),
              },
            ),
          },
          segregate_by_client: { type: 'boolean', description: 'One rate limit and quota per client.' },
        },
      ),
      "not built yet as a method of its own (issuers and client IDs mapped to policies); validate OpenID Connect ID tokens with `enable_jwt` and the provider's JWKS URL",
    ),
    scopes: notYet(
      openObject(
        'Scope to policy mappings per method: `jwt` and `oidc`, each with `scope_claim_name` and `scope_to_policy`.',
      ),
      'not built yet in this form: for JWT, set `jwt_scope_claim_name` and `jwt_scope_to_policy_mapping`; OpenID Connect is not supported (see `use_openid`)',
    ),
    idp_client_id_mapping_disabled: flag(
      'Do not map identity provider client IDs to keys.',
      'belongs to the OpenID Connect method, which svc does not have (see `use_openid`)',
    ),
    use_go_plugin_auth: flag(
      'Authentication by a compiled plugin.',
      'Go plugins are shared objects loaded into a Go process and cannot run in a Node.js gateway: use a JavaScript or TypeScript plugin (`custom_middleware.auth_check` with `base_identity_provided_by: custom_auth`)',
    ),
    enable_coprocess_auth: enforced({
      type: 'boolean',
      description:
        'Authentication by the `custom_middleware.auth_check` hook of the gRPC plugin server (`custom_middleware.driver: grpc`; docs/gateway.md, "gRPC plugins"); refused with another driver or without an auth_check.',
    }),
    custom_plugin_auth_enabled: flag(
      'Authentication by a plugin of another gateway.',
      'plugins written for another gateway cannot run in svc: use a JavaScript or TypeScript plugin (`custom_middleware.auth_check` with `base_identity_provided_by: custom_auth`)',
    ),
    custom_middleware_bundle_disabled: flag(
      'Turns `custom_middleware_bundle` off (svc never loads bundles).',
      'belongs to plugin bundles, which svc never loads (see `custom_middleware_bundle`)',
    ),
    request_signing: notYet(
      closedObject(
        {
          title: 'RequestSigningMeta',
          description: 'Signing of upstream requests.',
          'x-svc-switch': 'is_enabled',
        },
        {
          is_enabled: { type: 'boolean', description: 'Sign upstream requests.' },
          secret: { type: 'string', description: 'HMAC secret.' },
          key_id: { type: 'string', description: 'Key ID sent with the signature.' },
          algorithm: { type: 'string', description: 'Signature algorithm.' },
          header_list: strings('Headers signed.'),
          certificate_id: { type: 'string', description: 'Certificate of an RSA signature.' },
          signature_header: { type: 'string', description: 'Header that carries the signature.' },
        },
      ),
      'not built yet: svc does not sign the requests it sends upstream (it checks the signatures of client requests: `enable_signature_checking`)',
    ),
    definition: versionDefinition,
    uptime_tests: enforced(
      closedObject(
        {
          title: 'UptimeTests',
          description:
            'Health checks of the load-balanced upstreams (with `proxy.check_host_against_uptime_tests`): each URL requested every `config.recheck_wait` seconds (default 10); a check fails when unreachable, past its `timeout` (milliseconds, default 5000) or outside 2xx. TCP checks (`protocol` tcp, `commands`, `enable_proxy_protocol`) are not supported yet.',
        },
        {
          check_list: {
            type: 'array',
            description:
              'Checks: `url`, `protocol`, `timeout`, `method`, `headers`, `body`, `commands`, `enable_proxy_protocol`.',
            items: openObject('One check.'),
          },
          config: openObject('Settings: `expire_utime_after`, `service_discovery`, `recheck_wait`.'),
        },
      ),
    ),
    cache_options: enforced(
      closedObject(
        {
          title: 'CacheOptions',
          description:
            'Response caching of GET, HEAD and OPTIONS requests, in Redis with the Redis store, else in the memory of each gateway process; kept per API and per key; a hit carries `X-Svc-Cached-Response: 1` (docs/gateway.md).',
          'x-svc-switch': 'enable_cache',
        },
        {
          enable_cache: { type: 'boolean', description: 'Turns caching on.' },
          cache_timeout: {
            type: 'integer',
            minimum: 0,
            description: 'Seconds a response stays cached (0: the default, 60).',
          },
          cache_all_safe_requests: {
            type: 'boolean',
            description: 'Cache every GET, HEAD and OPTIONS request (the safe methods, as the reference).',
          },
          cache_response_codes: {
            type: 'array',
            items: { type: 'integer' },
            description: 'Statuses that are cached (empty: any status, as the reference).',
          },
          enable_upstream_cache_control: {
            type: 'boolean',
            description:
              'The upstream decides: a response is stored only when it carries `x-tyk-cache-action-set`, for the seconds in `cache_control_ttl_header`.',
          },
          cache_control_ttl_header: {
            type: 'string',
            description:
              'Response header that gives the time to live (default `x-tyk-cache-action-set-ttl`).',
          },
          cache_by_headers: strings('Request headers whose values join the cache key.'),
        },
      ),
    ),
    session_lifetime: notYet(
      {
        type: 'integer',
        minimum: 0,
        description: 'Seconds a key lives after its last change; 0 forever.',
      },
      'not built yet: keys live until deleted or until their `expires`; removing keys some time after their last change is not implemented',
    ),
    session_lifetime_respects_key_expiration: flag(
      'Keep keys until they expire when that is later than `session_lifetime`.',
      'belongs to `session_lifetime`, which is not built yet',
    ),
    auth_provider: notYet(
      openObject('Authentication provider of other gateways: `name`, `storage_engine`, `meta`.'),
      "svc has one key store for every API (memory, files or Redis: the gateway's store setting); a provider per API is not built",
    ),
    session_provider: notYet(
      openObject('Session provider of other gateways: `name`, `storage_engine`, `meta`.'),
      "svc has one key store for every API (memory, files or Redis: the gateway's store setting); a provider per API is not built",
    ),
    enable_batch_request_support: flag(
      'Batch requests at `/tyk/batch/`.',
      'not built yet: the gateway has no batch endpoint; send the requests one by one (HTTP keep-alive or HTTP/2)',
    ),
    expire_analytics_after: notYet(
      {
        type: 'integer',
        minimum: 0,
        description: 'Seconds analytics records are kept.',
      },
      'not built yet: the dashboard keeps the analytics of every API for as long as its retention settings say (`analytics_minute_retention_hours`, `analytics_hour_retention_days`, `analytics_detail_retention_hours`, docs/dashboard.md)',
    ),
    response_processors: enforced({
      type: 'array',
      description:
        "Response processors, named the reference's way: `header_injector` changes the headers of every response of the API (its `options`: `remove_headers`, then `add_headers`, after the version's and the endpoint's header changes); `response_body_transform` names the endpoints' `transform_response` templates, which apply whether it is listed or not. Other processors are refused by name (docs/gateway.md, \"Response processors\").",
      items: closedObject(
        { title: 'ResponseProcessor', description: 'One response processor.' },
        {
          name: {
            type: 'string',
            description: 'Name of the processor: `header_injector` or `response_body_transform`.',
          },
          options: objectOf(
            {
              title: 'ResponseProcessorOptions',
              description:
                'Settings of the processor: `add_headers` and `remove_headers` for `header_injector`; `response_body_transform` takes none.',
              'x-kubernetes-preserve-unknown-fields': true,
            },
            {
              add_headers: stringMap(
                "Headers set on every response of the API (replacing the upstream's); values may hold `$tyk_meta.<key>` and, with `enable_context_vars`, `$tyk_context.<name>`.",
              ),
              remove_headers: strings('Headers removed from every response of the API.'),
            },
          ),
        },
      ),
    }),
    domain_disabled: flag(
      'Ignore `domain`.',
      'not built yet: a `domain` always applies; to serve on every host, leave `domain` empty',
    ),
    config_data_disabled: flag(
      'Hide `config_data` from middleware.',
      'not built yet: plugins always see `config_data`; leave it empty instead',
    ),
    tag_headers: notYet(
      strings('Request headers recorded as analytics tags.'),
      'not built yet: analytics records (docs/dashboard.md, "Traffic analytics") carry no tags',
    ),
    tags_disabled: flag(
      'Ignore `tags`.',
      'not built yet: `tags` always apply (they shard gateways); leave them empty instead',
    ),
    detailed_tracing: flag(
      'OpenTelemetry spans per middleware.',
      'OpenTelemetry tracing is not built yet: the gateway exports Prometheus metrics only',
    ),
    analytics_plugin: notYet(
      closedObject(
        {
          title: 'AnalyticsPluginConfig',
          description: 'A plugin that rewrites analytics records.',
          'x-svc-switch': 'enable',
        },
        {
          enable: { type: 'boolean', description: 'Turns the plugin on.' },
          plugin_path: { type: 'string', description: 'Plugin file.' },
          func_name: { type: 'string', description: 'Function name.' },
        },
      ),
      'analytics plugins are Go plugins (shared objects) that rewrite analytics records: Go plugins cannot run in a Node.js gateway',
    ),
    upstream_auth: notYet(
      openObject('Authentication towards the upstream: `enabled`, `basic_auth`, `oauth`.'),
      'not built yet: the gateway does not log in to the upstream (basic authentication, OAuth client credentials); send a fixed credential with `global_headers`, or use upstream mTLS (`upstream_certificates`)',
    ),
    upstream_certificates_disabled: flag(
      'Ignore `upstream_certificates`.',
      'not built yet: `upstream_certificates` always apply; leave the map empty instead',
    ),
    certificate_pinning_disabled: flag(
      'Ignore `pinned_public_keys`.',
      'not built yet: `pinned_public_keys` always apply; leave the map empty instead',
    ),
    client_certificate_refs: notYet(
      strings(
        'Secrets holding the client certificates static mTLS allows: read by the operator (ApiDefinition resources), which writes their IDs in client_certificates.',
      ),
      'names Kubernetes Secrets, which only the operator reads (an ApiDefinition resource): to the gateway, give the IDs of certificates uploaded to `/svc/certs` in `client_certificates`',
    ),
    pinned_public_keys_refs: notYet(
      stringMap(
        'Upstream host -> Secret holding the pinned public key: read by the operator (ApiDefinition resources), which writes the pin in pinned_public_keys.',
      ),
      'names Kubernetes Secrets, which only the operator reads (an ApiDefinition resource): to the gateway, give the pins in `pinned_public_keys`',
    ),
    upstream_certificate_refs: notYet(
      stringMap(
        'Upstream host -> Secret holding the upstream mTLS certificate: read by the operator (ApiDefinition resources), which writes its ID in upstream_certificates.',
      ),
      'names Kubernetes Secrets, which only the operator reads (an ApiDefinition resource): to the gateway, give certificates stored in `/svc/certs` in `upstream_certificates`',
    ),
  };
}
