import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonSchema } from './json-schema.ts';
import { apiDefinitionKind } from './kinds/api-definition.ts';
import { apiDefinitionModel, classicApiProperties } from './models/api-definition/index.ts';
import { fieldSupport, isNeutral, notSupportedPaths } from './support.ts';

/**
 * The reference's classic model, field paths only: the fields of the reference operator's
 * ApiDefinition CRD (api/v1alpha1, model.APIDefinitionSpec) and the top-level fields of the
 * reference gateway's classic API definition. `*` is any key of a map, `[]` the items of a list.
 */
const REFERENCE_FIELDS = `
api_id id name org_id active slug expiration listen_port protocol enable_proxy_protocol domain
do_not_track use_keyless use_oauth2 oauth_meta oauth_meta.allowed_access_types
oauth_meta.allowed_authorize_types oauth_meta.auth_login_redirect external_oauth use_openid
openid_options openid_options.providers openid_options.segregate_by_client scopes
idp_client_id_mapping_disabled strip_auth_data
auth auth.auth_header_name auth.use_param auth.param_name auth.use_cookie auth.cookie_name
auth.use_certificate auth.validate_signature auth.signature auth.signature.algorithm
auth.signature.header auth.signature.secret auth.signature.allowed_clock_skew
auth.signature.error_code auth.signature.error_message
auth_configs use_standard_auth use_basic_auth basic_auth basic_auth.disable_caching
basic_auth.cache_ttl basic_auth.extract_from_body basic_auth.body_user_regexp
basic_auth.body_password_regexp use_mutual_tls_auth client_certificates client_certificate_refs
pinned_public_keys pinned_public_keys_refs upstream_certificates upstream_certificate_refs
upstream_certificates_disabled certificate_pinning_disabled
enable_jwt use_go_plugin_auth enable_coprocess_auth custom_plugin_auth_enabled jwt_signing_method
jwt_source jwt_identity_base_field jwt_client_base_field jwt_policy_field_name jwt_default_policies
jwt_issued_at_validation_skew jwt_expires_at_validation_skew jwt_not_before_validation_skew
jwt_skip_kid jwt_scope_to_policy_mapping jwt_scope_claim_name notifications
notifications.shared_secret notifications.oauth_on_keychange_url enable_signature_checking
hmac_allowed_clock_skew hmac_allowed_algorithms request_signing request_signing.is_enabled
request_signing.secret request_signing.key_id request_signing.algorithm request_signing.header_list
request_signing.certificate_id request_signing.signature_header base_identity_provided_by
definition definition.location definition.key definition.strip_path
version_data version_data.not_versioned version_data.default_version version_data.versions
version_data.versions.*.name version_data.versions.*.expires version_data.versions.*.paths
version_data.versions.*.paths.ignored version_data.versions.*.paths.white_list
version_data.versions.*.paths.black_list version_data.versions.*.use_extended_paths
version_data.versions.*.extended_paths version_data.versions.*.global_headers
version_data.versions.*.global_headers_remove version_data.versions.*.global_headers_append
version_data.versions.*.global_response_headers version_data.versions.*.global_response_headers_remove
version_data.versions.*.global_response_headers_append version_data.versions.*.ignore_endpoint_case
version_data.versions.*.global_size_limit version_data.versions.*.override_target
version_data.versions.*.extended_paths.ignored version_data.versions.*.extended_paths.white_list
version_data.versions.*.extended_paths.black_list version_data.versions.*.extended_paths.cache
version_data.versions.*.extended_paths.transform version_data.versions.*.extended_paths.transform_response
version_data.versions.*.extended_paths.transform_jq version_data.versions.*.extended_paths.transform_jq_response
version_data.versions.*.extended_paths.transform_headers
version_data.versions.*.extended_paths.transform_response_headers
version_data.versions.*.extended_paths.advance_cache_config version_data.versions.*.extended_paths.hard_timeouts
version_data.versions.*.extended_paths.circuit_breakers version_data.versions.*.extended_paths.url_rewrites
version_data.versions.*.extended_paths.virtual version_data.versions.*.extended_paths.size_limits
version_data.versions.*.extended_paths.method_transforms version_data.versions.*.extended_paths.track_endpoints
version_data.versions.*.extended_paths.do_not_track_endpoints version_data.versions.*.extended_paths.validate_json
version_data.versions.*.extended_paths.internal
version_data.versions.*.extended_paths.ignored[].path version_data.versions.*.extended_paths.ignored[].ignore_case
version_data.versions.*.extended_paths.ignored[].method_actions
version_data.versions.*.extended_paths.advance_cache_config[].cache_key_regex
version_data.versions.*.extended_paths.advance_cache_config[].cache_response_codes
version_data.versions.*.extended_paths.transform[].template_data
version_data.versions.*.extended_paths.transform[].template_data.input_type
version_data.versions.*.extended_paths.transform[].template_data.template_mode
version_data.versions.*.extended_paths.transform[].template_data.enable_session
version_data.versions.*.extended_paths.transform[].template_data.template_source
version_data.versions.*.extended_paths.transform_jq[].filter
version_data.versions.*.extended_paths.transform_headers[].delete_headers
version_data.versions.*.extended_paths.transform_headers[].add_headers
version_data.versions.*.extended_paths.transform_headers[].act_on
version_data.versions.*.extended_paths.hard_timeouts[].timeout
version_data.versions.*.extended_paths.circuit_breakers[].threshold_percent
version_data.versions.*.extended_paths.circuit_breakers[].samples
version_data.versions.*.extended_paths.circuit_breakers[].return_to_service_after
version_data.versions.*.extended_paths.circuit_breakers[].disable_half_open_state
version_data.versions.*.extended_paths.url_rewrites[].path
version_data.versions.*.extended_paths.url_rewrites[].method
version_data.versions.*.extended_paths.url_rewrites[].match_pattern
version_data.versions.*.extended_paths.url_rewrites[].rewrite_to
version_data.versions.*.extended_paths.url_rewrites[].rewrite_to_internal
version_data.versions.*.extended_paths.url_rewrites[].rewrite_to_internal.target
version_data.versions.*.extended_paths.url_rewrites[].rewrite_to_internal.path
version_data.versions.*.extended_paths.url_rewrites[].rewrite_to_internal.query
version_data.versions.*.extended_paths.url_rewrites[].triggers
version_data.versions.*.extended_paths.url_rewrites[].triggers[].on
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.header_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.query_val_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.path_part_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.session_meta_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.request_context_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].options.payload_matches
version_data.versions.*.extended_paths.url_rewrites[].triggers[].rewrite_to
version_data.versions.*.extended_paths.url_rewrites[].triggers[].rewrite_to_internal
version_data.versions.*.extended_paths.virtual[].response_function_name
version_data.versions.*.extended_paths.virtual[].function_source_type
version_data.versions.*.extended_paths.virtual[].function_source_uri
version_data.versions.*.extended_paths.virtual[].use_session
version_data.versions.*.extended_paths.virtual[].proxy_on_error
version_data.versions.*.extended_paths.size_limits[].size_limit
version_data.versions.*.extended_paths.method_transforms[].to_method
version_data.versions.*.extended_paths.validate_json[].schema
version_data.versions.*.extended_paths.validate_json[].error_response_code
version_data.versions.*.extended_paths.validate_json[].disabled
uptime_tests uptime_tests.check_list uptime_tests.config
proxy proxy.preserve_host_header proxy.listen_path proxy.target_url proxy.target_internal
proxy.target_internal.target proxy.target_internal.path proxy.target_internal.query
proxy.disable_strip_slash proxy.strip_listen_path proxy.enable_load_balancing proxy.target_list proxy.mirror_targets
proxy.mirror_percent
proxy.check_host_against_uptime_tests proxy.transport proxy.transport.ssl_insecure_skip_verify
proxy.transport.ssl_ciphers proxy.transport.ssl_min_version proxy.transport.ssl_max_version
proxy.transport.ssl_force_common_name_check proxy.transport.proxy_url proxy.service_discovery
proxy.service_discovery.use_discovery_service proxy.service_discovery.query_endpoint
proxy.service_discovery.use_nested_query proxy.service_discovery.parent_data_path
proxy.service_discovery.data_path proxy.service_discovery.port_data_path
proxy.service_discovery.target_path proxy.service_discovery.use_target_list
proxy.service_discovery.cache_timeout proxy.service_discovery.endpoint_returns_list
disable_rate_limit disable_quota global_rate_limit global_rate_limit.rate global_rate_limit.per
custom_middleware custom_middleware.pre custom_middleware.post custom_middleware.post_key_auth
custom_middleware.auth_check custom_middleware.response custom_middleware.driver
custom_middleware.id_extractor custom_middleware.id_extractor.extract_from
custom_middleware.id_extractor.extract_with custom_middleware.id_extractor.extractor_config
custom_middleware.pre[].name custom_middleware.pre[].path custom_middleware.pre[].require_session
custom_middleware.pre[].raw_body_only custom_middleware_bundle custom_middleware_bundle_disabled
cache_options cache_options.enable_cache cache_options.cache_timeout cache_options.cache_all_safe_requests
cache_options.cache_response_codes cache_options.enable_upstream_cache_control
cache_options.cache_control_ttl_header cache_options.cache_by_headers
session_lifetime session_lifetime_respects_key_expiration internal auth_provider session_provider
event_handlers event_handlers.events enable_batch_request_support
enable_ip_whitelisting allowed_ips enable_ip_blacklisting blacklisted_ips dont_set_quota_on_create
expire_analytics_after response_processors response_processors[].name response_processors[].options
CORS CORS.enable CORS.allowed_origins CORS.allowed_methods CORS.allowed_headers CORS.exposed_headers
CORS.allow_credentials CORS.max_age CORS.options_passthrough CORS.debug
domain_disabled certificates certificate_secret_names tags tags_disabled enable_context_vars
config_data config_data_disabled tag_headers enable_detailed_recording detailed_tracing
analytics_plugin analytics_plugin.enable analytics_plugin.plugin_path analytics_plugin.func_name
upstream_auth contextRef
graphql graphql.enabled graphql.execution_mode graphql.version graphql.schema graphql.last_schema_update
graphql.type_field_configurations graphql.type_field_configurations[].type_name
graphql.type_field_configurations[].field_name graphql.type_field_configurations[].mapping
graphql.type_field_configurations[].mapping.disabled graphql.type_field_configurations[].mapping.path
graphql.type_field_configurations[].data_source graphql.type_field_configurations[].data_source.kind
graphql.type_field_configurations[].data_source.data_source_config
graphql.playground graphql.playground.enabled graphql.playground.path
graphql.engine graphql.engine.field_configs graphql.engine.data_sources graphql.engine.global_headers
graphql.engine.global_headers[].key graphql.engine.global_headers[].value
graphql.proxy graphql.proxy.auth_headers graphql.subgraph graphql.subgraph.sdl graphql.graph_ref
graphql.supergraph graphql.introspection graphql.introspection.disabled
`
  .split(/\s+/)
  .filter((p) => p !== '');

/** Whether `path` names a field of `schema` (maps and lists walked through `*` and `[]`). */
function hasPath(schema: JsonSchema, path: string): boolean {
  let node: JsonSchema | undefined = schema;
  for (const raw of path.split('.')) {
    const list = raw.endsWith('[]');
    const part = list ? raw.slice(0, -2) : raw;
    if (node === undefined) return false;
    if (part === '*')
      node = typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
    else node = node.properties?.[part];
    if (list) node = node?.items;
  }
  return node !== undefined;
}

describe('the classic model is complete', () => {
  test('every field of the reference classic model exists in the ApiDefinition spec', () => {
    const missing = REFERENCE_FIELDS.filter((p) => !hasPath(apiDefinitionKind.spec, p));
    assert.deepEqual(missing, []);
  });

  test('every field of the reference classic model exists in the gateway model (but the cluster-only ones)', () => {
    const clusterOnly = new Set(['contextRef', 'certificate_secret_names']);
    const missing = REFERENCE_FIELDS.filter((p) => !clusterOnly.has(p) && !hasPath(apiDefinitionModel, p));
    assert.deepEqual(missing, []);
  });

  test('every top-level classic field carries its own support flag', () => {
    const unflagged = Object.entries(classicApiProperties)
      .filter(([, s]) => s['x-svc-support'] === undefined)
      .map(([k]) => k);
    assert.deepEqual(unflagged, []);
    const spec = Object.entries(apiDefinitionKind.spec.properties ?? {})
      .filter(([, s]) => s['x-svc-support'] === undefined)
      .map(([k]) => k);
    assert.deepEqual(spec, []);
  });

  test("every field not supported yet says why (x-svc-reason, its own or its parent's)", () => {
    for (const [model, fields] of [
      ['ApiDefinition spec', fieldSupport(apiDefinitionKind.spec)],
      ['gateway model', fieldSupport(apiDefinitionModel)],
    ] as const) {
      const notSupported = fields.filter((f) => f.support === 'not-supported');
      assert.ok(notSupported.length > 50, `${model}: only ${String(notSupported.length)}`);
      const without = notSupported.filter((f) => (f.reason ?? '').trim().length < 20).map((f) => f.path);
      assert.deepEqual(without, [], `${model}: not-supported fields without a reason`);
    }
    const supported = fieldSupport(apiDefinitionModel).filter((f) => f.support === 'supported');
    assert.deepEqual(
      supported.filter((f) => f.reason !== undefined).map((f) => f.path),
      [],
      'a supported field carries no reason',
    );
  });

  test("a child shares its parent's reason unless it has its own", () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: {
        a: {
          type: 'object',
          'x-svc-support': 'not-supported',
          'x-svc-reason': 'parent reason',
          properties: {
            b: { type: 'string' },
            c: { type: 'string', 'x-svc-reason': 'own reason' },
            d: { type: 'array', items: { type: 'object', properties: { e: { type: 'string' } } } },
          },
        },
        f: { type: 'string', 'x-svc-support': 'supported', 'x-svc-reason': 'ignored' },
      },
    };
    assert.deepEqual(
      fieldSupport(schema).map((f) => [f.path, f.support, f.reason]),
      [
        ['a', 'not-supported', 'parent reason'],
        ['a.b', 'not-supported', 'parent reason'],
        ['a.c', 'not-supported', 'own reason'],
        ['a.d', 'not-supported', 'parent reason'],
        ['a.d[].e', 'not-supported', 'parent reason'],
        ['f', 'supported', undefined],
      ],
    );
  });

  test('every reference field has a state in the generated field list', () => {
    const listed = new Set(fieldSupport(apiDefinitionKind.spec).map((f) => f.path));
    const missing = REFERENCE_FIELDS.filter((p) => !listed.has(p) && !p.endsWith('.*'));
    assert.deepEqual(missing, []);
  });
});

describe('notSupportedPaths', () => {
  const cases: { name: string; value: Record<string, unknown>; want: string[] }[] = [
    { name: 'supported fields only', value: { name: 'a', use_keyless: true, tags: ['x'] }, want: [] },
    {
      name: 'neutral values are accepted',
      value: {
        do_not_track: false,
        session_lifetime: 0,
        tag_headers: [],
        pinned_public_keys_refs: {},
        expiration: '',
        CORS: { enable: false, max_age: 24, allowed_origins: ['https://a'] },
        cache_options: { enable_cache: false, cache_timeout: 60 },
        graphql: { enabled: false, execution_mode: 'proxyOnly' },
        proxy: { target_list: [], enable_load_balancing: false, transport: { ssl_ciphers: [] } },
        version_data: {
          versions: {
            Default: {
              name: 'Default',
              use_extended_paths: true,
              paths: { ignored: [], white_list: [], black_list: [] },
              extended_paths: { white_list: [], cache: [] },
              global_headers: {},
            },
          },
        },
      },
      want: [],
    },
    {
      name: 'every not-supported field set is listed, in document order',
      value: {
        use_openid: true,
        do_not_track: true,
        session_lifetime: 30,
        proxy: { disable_strip_slash: true, transport: { ssl_max_version: 772, proxy_url: 'http://p:3128' } },
        version_data: {
          versions: {
            'v/1': {
              global_headers: { 'x-a': 'b' },
              paths: { white_list: ['/a'] },
              extended_paths: {
                transform_jq: [{ path: '/x' }],
                white_list: [{ path: '/b' }],
                size_limits: [{ path: '/c' }],
              },
            },
          },
        },
        jwt_client_base_field: 'cid',
      },
      want: [
        'use_openid',
        'session_lifetime',
        'proxy.transport.ssl_max_version',
        'proxy.transport.proxy_url',
        'version_data.versions["v/1"].extended_paths.transform_jq',
        'jwt_client_base_field',
      ],
    },
    {
      name: 'values of the wrong type are left to the schema',
      value: { proxy: 'x', version_data: { versions: [] } },
      want: [],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.deepEqual(notSupportedPaths(apiDefinitionModel, c.value), c.want);
    });
  }

  test('a switch decides alone whether its object is neutral', () => {
    const cors: JsonSchema = { type: 'object', 'x-svc-switch': 'enable' };
    assert.equal(isNeutral(cors, { enable: false, max_age: 3 }), true);
    assert.equal(isNeutral(cors, { enable: true }), false);
    assert.equal(isNeutral({ type: 'array' }, [[], {}, '', 0, null]), true);
    assert.equal(isNeutral({ type: 'integer' }, 5), false);
  });
});
