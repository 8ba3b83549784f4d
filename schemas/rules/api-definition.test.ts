import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  checkClassicApi,
  classicApiWarnings,
  domainKey,
  listenPathProblem,
  reservedPathProblem,
  routeKey,
  unsupportedFeatures,
} from './api-definition.ts';
import type { ClassicApiInput } from './read.ts';
import { formatProblem, type FieldProblem } from './field-problem.ts';

/** A keyless API at /a/ with `extra` merged over it (and `proxy` over its proxy). */
const api = (extra: Record<string, unknown> = {}, proxy: Record<string, unknown> = {}): ClassicApiInput => ({
  name: 'a',
  use_keyless: true,
  proxy: { listen_path: '/a/', target_url: 'http://u:1', ...proxy },
  ...extra,
});

const notYet = (path: string): ((p: FieldProblem) => boolean) => {
  return (p) => p.path === path && p.type === 'NotSupportedYet' && p.message === 'not supported by svc yet';
};

interface Case {
  name: string;
  api: ClassicApiInput;
  /** The exact problems; omitted: none. */
  want?: FieldProblem[];
  /** Or: one check per expected problem, in order. */
  each?: ((p: FieldProblem) => boolean)[];
}

const cases: Case[] = [
  { name: 'a minimal keyless API', api: api() },
  { name: 'a target without scheme means http (httpbin.org)', api: api({}, { target_url: 'httpbin.org' }) },
  { name: 'a cluster service address without scheme', api: api({}, { target_url: 'orders.shop.svc:8080' }) },
  { name: 'an https target with path and query', api: api({}, { target_url: 'https://u.example/b/?k=v' }) },
  ...['tcp://db:5432', 'tls://db:5432', 'h2c://grpc:50051', 'ws://chat:80', 'wss://chat:443'].map(
    (target): Case => ({
      name: `target ${target} is not supported`,
      api: api({}, { target_url: target }),
      want: [
        {
          path: 'proxy.target_url',
          type: 'NotSupported',
          message: `${JSON.stringify(target)}: the scheme ${JSON.stringify(target.split(':')[0])} is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080`,
        },
      ],
    }),
  ),
  {
    name: 'a target that is not a URL',
    api: api({}, { target_url: 'http://' }),
    want: [
      {
        path: 'proxy.target_url',
        type: 'Invalid',
        message: '"http://" is not a URL: write the upstream address, such as http://orders.default.svc:8080',
      },
    ],
  },
  {
    name: 'a target with credentials',
    api: api({}, { target_url: 'http://user:pw@u' }),
    want: [
      {
        path: 'proxy.target_url',
        type: 'Invalid',
        message:
          '"http://user:pw@u" carries credentials: remove the user and password from the URL (they are not sent upstream)',
      },
    ],
  },
  {
    name: 'target_url is required',
    api: api({}, { target_url: undefined }),
    want: [
      {
        path: 'proxy.target_url',
        type: 'Required',
        message: 'set the upstream address, such as http://<service>.<namespace>.svc:<port>',
      },
    ],
  },
  {
    name: 'target_url may be empty with load balancing over a target_list',
    api: api({}, { target_url: '', enable_load_balancing: true, target_list: ['u1:80', 'https://u2'] }),
  },
  {
    name: 'a target_list without enable_load_balancing leaves target_url required',
    api: api({}, { target_url: '', target_list: ['http://u1'] }),
    each: [(p) => p.path === 'proxy.target_url' && p.type === 'Required'],
  },
  {
    name: 'each target_list entry is a target',
    api: api({}, { enable_load_balancing: true, target_list: ['http://u1', 'ftp://u2'] }),
    each: [(p) => p.path === 'proxy.target_list[1]' && p.type === 'NotSupported'],
  },
  {
    name: 'each mirror target is an http or https target',
    api: api({}, { mirror_targets: ['http://m1:8080', 'ftp://m2'] }),
    each: [(p) => p.path === 'proxy.mirror_targets[1]' && p.type === 'NotSupported'],
  },
  {
    name: 'uptime checks: an http URL each; TCP checks not supported yet',
    api: api({
      uptime_tests: {
        check_list: [
          { url: 'http://u1/health' },
          {},
          { url: 'u2:22', protocol: 'tcp', commands: [{ name: 'send', message: 'ping' }] },
          { url: 'http://u3', enable_proxy_protocol: true },
        ],
      },
    }),
    each: [
      (p) => p.path === 'uptime_tests.check_list[1].url' && p.type === 'Required',
      (p) => p.path === 'uptime_tests.check_list[2].protocol' && p.type === 'NotSupported',
      (p) => p.path === 'uptime_tests.check_list[2].commands' && p.type === 'NotSupported',
      (p) => p.path === 'uptime_tests.check_list[3].enable_proxy_protocol' && p.type === 'NotSupported',
    ],
  },
  {
    name: 'target_url may be empty with the GraphQL execution engine',
    api: api(
      { graphql: { enabled: true, execution_mode: 'executionEngine', schema: 'type Query { a: String }' } },
      { target_url: '' },
    ),
  },
  {
    name: 'a proxyOnly GraphQL API needs its target_url',
    api: api({ graphql: { enabled: true, schema: 'type Query { a: String }' } }, { target_url: '' }),
    want: [
      {
        path: 'proxy.target_url',
        type: 'Required',
        message:
          'a proxyOnly GraphQL API sends its queries to the upstream: set its address, or use execution_mode executionEngine',
      },
    ],
  },
  {
    name: 'a GraphQL schema that does not build names its line and column',
    api: api({ graphql: { enabled: true, schema: 'type Query { a: Nope }' } }),
    want: [
      {
        path: 'graphql.schema',
        type: 'Invalid',
        message: 'the schema does not parse: line 1, column 17: Unknown type "Nope".',
      },
    ],
  },
  {
    name: 'a supergraph needs its subgraphs and its merged schema',
    api: api({ graphql: { enabled: true, execution_mode: 'supergraph' } }),
    want: [
      {
        path: 'graphql.supergraph.subgraphs',
        type: 'Required',
        message: 'a supergraph API needs its subgraphs: each with url and sdl',
      },
      {
        path: 'graphql.schema',
        type: 'Required',
        message:
          'a supergraph API needs the merged schema (SDL): set graphql.schema, or subgraphs that compose',
      },
    ],
  },
  {
    name: 'a proxyOnly GraphQL API needs its schema (svc does not introspect the upstream)',
    api: api({ graphql: { enabled: true, execution_mode: 'proxyOnly' } }),
    each: [
      (p) =>
        p.path === 'graphql.schema' &&
        p.type === 'Required' &&
        /proxyOnly .*does not fetch by introspection: set graphql\.schema/.test(p.message),
    ],
  },
  {
    name: 'the execution mode proxyOnly is the default: no schema is refused there too',
    api: api({ graphql: { enabled: true } }),
    each: [(p) => p.path === 'graphql.schema' && p.type === 'Required'],
  },
  {
    name: 'GraphQL off needs no schema',
    api: api({ graphql: { enabled: false, execution_mode: 'proxyOnly' } }),
  },
  {
    name: 'advance_cache_config: only the methods the cache stores (GET, HEAD, OPTIONS)',
    api: api({
      cache_options: { enable_cache: true },
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              advance_cache_config: [
                { path: '/a', method: 'GET' },
                { path: '/b', method: 'POST', timeout: 10 },
                { path: '/c', method: 'options' },
                { path: '/d', method: 'HEAD' },
                { path: '/e', method: 'DELETE', disabled: true },
                { path: '/f' },
                { path: '/g(', method: 'GET' },
              ],
            },
          },
        },
      },
    }),
    each: [
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.advance_cache_config[1].method' &&
        p.type === 'NotSupportedYet' &&
        p.message.startsWith('not supported by svc yet: caching "POST" answers'),
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.advance_cache_config[6].path' &&
        p.type === 'Invalid',
    ],
  },
  {
    name: 'validate_json: a JSON Schema that does not compile is refused with the reason',
    api: api({
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            extended_paths: {
              validate_json: [
                { path: '/ok', method: 'POST', schema: { type: 'object', required: ['name'] } },
                {
                  path: '/type',
                  method: 'POST',
                  schema: { type: 'object', properties: { a: { type: 'strin' } } },
                },
                { path: '/pattern', method: 'POST', schema: { type: 'string', pattern: '([a-z' } },
                {
                  path: '/b64',
                  method: 'POST',
                  schema_b64: Buffer.from('{"$ref":"#/definitions/missing"}').toString('base64'),
                },
                { path: '/not-b64', method: 'POST', schema_b64: Buffer.from('{').toString('base64') },
                { path: '/off', method: 'POST', disabled: true, schema: { type: 'strin' } },
              ],
            },
          },
        },
      },
    }),
    each: [
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.validate_json[1].schema' &&
        p.type === 'Invalid' &&
        p.message === 'the JSON Schema does not compile: type must be JSONType or JSONType[]: strin',
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.validate_json[2].schema' &&
        p.type === 'Invalid' &&
        p.message.startsWith('the JSON Schema does not compile: Invalid regular expression'),
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.validate_json[3].schema_b64' &&
        p.type === 'Invalid' &&
        p.message.startsWith(
          "the JSON Schema does not compile: can't resolve reference #/definitions/missing",
        ),
      (p) =>
        p.path === 'version_data.versions.Default.extended_paths.validate_json[4].schema_b64' &&
        p.type === 'Invalid' &&
        p.message.includes('not the base64 of JSON'),
    ],
  },
  {
    name: 'GraphQL settings svc does not enforce yet are refused',
    api: api({
      graphql: { enabled: true, schema: 'type Query { a: String }', proxy: { request_headers: { a: 'b' } } },
    }),
    each: [notYet('graphql.proxy')],
  },
  { name: 'protocol http', api: api({ protocol: 'http' }) },
  { name: 'protocol https on a port of its own', api: api({ protocol: 'https', listen_port: 8443 }) },
  { name: 'protocol empty', api: api({ protocol: '' }) },
  {
    name: 'protocol h2c is not supported',
    api: api({ protocol: 'h2c', listen_port: 9000 }),
    want: [
      {
        path: 'protocol',
        type: 'NotSupported',
        message:
          'this listener protocol is not supported yet by this gateway: set protocol to http, https, tcp or tls, or leave it empty to serve on the gateway port',
      },
    ],
  },
  ...['tcp', 'tls'].map((protocol): Case => ({
    name: `protocol ${protocol} on a port of its own to a tcp:// target, without a listen path`,
    api: { name: 'db', protocol, listen_port: 9000, proxy: { target_url: 'tcp://db.default.svc:5432' } },
  })),
  {
    name: 'protocol tcp with the defaults the API server writes (jwt_identity_base_field sub, auth header)',
    api: {
      name: 'db',
      protocol: 'tcp',
      listen_port: 9000,
      proxy: { target_url: 'tcp://db:5432' },
      jwt_identity_base_field: 'sub',
      auth: { auth_header_name: 'Authorization' },
    },
  },
  {
    name: 'protocol tcp with a value other than the default is refused by name',
    api: {
      name: 'db',
      protocol: 'tcp',
      listen_port: 9000,
      proxy: { target_url: 'tcp://db:5432' },
      jwt_identity_base_field: 'email',
    },
    each: [(p) => p.path === 'jwt_identity_base_field' && p.type === 'Forbidden'],
  },
  {
    name: 'protocol tcp with a bare host:port target (no scheme)',
    api: { name: 'db', protocol: 'tcp', listen_port: 9000, proxy: { target_url: 'db.default.svc:5432' } },
    want: [
      {
        path: 'proxy.target_url',
        type: 'Invalid',
        message:
          '"db.default.svc:5432" has no scheme: a tcp or tls API proxies to a tcp:// address, such as tcp://sessions-store.default.svc:6379',
      },
    ],
  },
  {
    name: 'protocol tcp: a version with per-path settings is refused at its path',
    api: {
      name: 'db',
      protocol: 'tcp',
      listen_port: 9000,
      proxy: { target_url: 'tcp://db:5432' },
      version_data: {
        not_versioned: true,
        versions: { Default: { name: 'Default', use_extended_paths: true, global_headers: { a: 'b' } } },
      },
    },
    each: [(p) => p.path === 'version_data.versions.Default.global_headers' && p.type === 'Forbidden'],
  },
  {
    name: 'listen path with a dot segment (/p/./)',
    api: api({}, { listen_path: '/p/./' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message: '"/p/./" has a "." or ".." segment: write the path it stands for, "/p/"',
      },
    ],
  },
  {
    name: 'listen path with a dot-dot segment',
    api: api({}, { listen_path: '/a/../b' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message: '"/a/../b" has a "." or ".." segment: write the path it stands for, "/b"',
      },
    ],
  },
  {
    name: 'listen path with a trailing dot segment',
    api: api({}, { listen_path: '/p/.' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message: '"/p/." has a "." or ".." segment: write the path it stands for, "/p/"',
      },
    ],
  },
  {
    name: 'listen path with an empty segment (//p/)',
    api: api({}, { listen_path: '//p/' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message: '"//p/" has an empty segment ("//"): write "/p/"',
      },
    ],
  },
  {
    name: 'listen path with a percent-encoded character (/p%2F)',
    api: api({}, { listen_path: '/p%2F' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message:
          '"/p%2F" has a percent-encoded character: listen paths are compared with request paths as clients send them, so write the characters themselves, such as "/p/"',
      },
    ],
  },
  {
    name: 'listen path with a percent-encoded character that is not a path character',
    api: api({}, { listen_path: '/caf%C3%A9/' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message:
          '"/caf%C3%A9/" has a percent-encoded character: listen paths are compared with request paths as clients send them, so use letters, digits and - . _ ~ ! $ & \' ( ) * + , ; = : @',
      },
    ],
  },
  {
    name: 'listen path with characters clients encode',
    api: api({}, { listen_path: '/users/{id} x/' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message:
          '"/users/{id} x/" has characters clients send percent-encoded ("{" "}" " "): use letters, digits and - . _ ~ ! $ & \' ( ) * + , ; = : @',
      },
    ],
  },
  {
    name: 'listen path without its leading slash',
    api: api({}, { listen_path: 'orders/' }),
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Invalid',
        message: '"orders/" must start with "/", such as "/orders/"',
      },
    ],
  },
  {
    name: 'upper case and dots inside segments are fine',
    api: api({}, { listen_path: '/P/.well-known/v1.2' }),
  },
  ...['/hello', '/ready', '/svc/x', '/svc', '/Hello/', '/ready/probe'].map((lp): Case => ({
    name: `${lp} is the management API's on the gateway port`,
    api: api({}, { listen_path: lp }),
    each: [
      (p) =>
        p.path === 'proxy.listen_path' &&
        p.type === 'Invalid' &&
        p.message.startsWith(`${JSON.stringify(lp)}: the gateway's management API answers /`) &&
        p.message.endsWith(
          'and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own',
        ),
    ],
  })),
  {
    name: 'reserved paths on listen_port 0 too',
    api: api({ listen_port: 0 }, { listen_path: '/hello/' }),
    each: [(p) => p.path === 'proxy.listen_path'],
  },
  {
    name: 'reserved paths are free on a listen_port',
    api: api({ listen_port: 9000 }, { listen_path: '/svc/' }),
  },
  { name: 'a path that only begins like a reserved one', api: api({}, { listen_path: '/helloworld/' }) },
  { name: 'a domain', api: api({ domain: 'api.example.com' }) },
  { name: 'a wildcard domain', api: api({ domain: '*.example.com' }) },
  { name: 'a domain with a port, in capitals', api: api({ domain: 'API.Example.com:8080' }) },
  {
    name: 'a one-label wildcard domain',
    api: api({ domain: '*.example.com', domain_wildcard_one_label: true }),
  },
  {
    name: 'domain_wildcard_one_label without a wildcard domain',
    api: api({ domain: 'api.example.com', domain_wildcard_one_label: true }),
    want: [
      {
        path: 'domain_wildcard_one_label',
        type: 'Invalid',
        message: 'applies to a wildcard domain (*.example.com) only: set such a domain, or remove the flag',
      },
    ],
  },
  {
    name: 'a domain that is not a host name',
    api: api({ domain: 'a*.example.com' }),
    want: [
      {
        path: 'domain',
        type: 'Invalid',
        message:
          '"a*.example.com" is not a host name: write one such as api.example.com, or *.example.com for its subdomains',
      },
    ],
  },
  {
    name: 'use_keyless with two methods names both',
    api: api({ use_standard_auth: true, use_basic_auth: true }),
    each: [
      (p) =>
        p.path === 'use_keyless' &&
        p.type === 'Forbidden' &&
        p.message ===
          'use_keyless excludes authentication, but use_standard_auth, use_basic_auth are true: set use_keyless to false, or turn use_standard_auth and use_basic_auth off',
    ],
  },
  {
    name: 'IPs and CIDRs, v4 and v6',
    api: api({
      enable_ip_whitelisting: true,
      allowed_ips: ['192.0.2.10', '10.0.0.0/8', '2001:db8::/32', '::1'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['203.0.113.0/24'],
    }),
  },
  {
    name: 'wildcards and bad addresses, each at its index',
    api: api({ allowed_ips: ['10.0.0.*', '10.0.0.1/33', 'localhost'], blacklisted_ips: ['1.2.3.4', '*'] }),
    want: [
      {
        path: 'allowed_ips[0]',
        type: 'Invalid',
        message:
          '"10.0.0.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
      },
      {
        path: 'allowed_ips[1]',
        type: 'Invalid',
        message: '"10.0.0.1/33" is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8',
      },
      {
        path: 'allowed_ips[2]',
        type: 'Invalid',
        message: '"localhost" is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8',
      },
      {
        path: 'blacklisted_ips[1]',
        type: 'Invalid',
        message: '"*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
      },
    ],
  },
  {
    // Detailed analytics records (gateway/middleware/detailed-recording): served.
    name: 'enable_detailed_recording is accepted',
    api: api({ enable_detailed_recording: true }),
    want: [],
  },
  {
    name: 'what the gateway enforces (or will) is accepted',
    api: api({
      use_keyless: false,
      use_basic_auth: true,
      basic_auth: {
        cache_ttl: 60,
        disable_caching: false,
        extract_from_body: true,
        body_user_regexp: '<user>(.*)</user>',
        body_password_regexp: '<password>(?<pw>.*)</password>',
      },
      auth: {
        auth_header_name: 'X-Auth',
        use_param: true,
        param_name: 'k',
        use_cookie: true,
        cookie_name: 'c',
      },
      auth_configs: {
        authToken: { auth_header_name: 'Authorization' },
        basic: { auth_header_name: 'Authorization' },
      },
      strip_auth_data: true,
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8'],
      version_data: {
        not_versioned: false,
        default_version: 'v2',
        versions: { v1: { name: 'v1' }, v2: { name: 'v2', use_extended_paths: true } },
      },
      disable_rate_limit: true,
      disable_quota: true,
      dont_set_quota_on_create: true,
      internal: false,
      active: true,
      tags: ['t'],
      config_data: { a: 1 },
      org_id: 'o',
      slug: 's',
      domain: 'api.example.com',
      listen_port: 8081,
      protocol: 'http',
      jwt_signing_method: 'rsa',
      jwt_source: 'https://idp/jwks',
      jwt_identity_base_field: 'sub',
      jwt_policy_field_name: 'pol',
      jwt_default_policies: ['p'],
      graphql: { enabled: false, execution_mode: 'proxyOnly' },
      CORS: { enable: false, allowed_origins: ['*'] },
      event_handlers: { events: {} },
      global_rate_limit: { rate: 100, per: 1, disabled: true },
    }),
  },
  {
    name: 'empty and zero values of unsupported settings ask for nothing (exported definitions)',
    api: api({
      auth: {
        use_certificate: false,
        validate_signature: false,
        signature: { algorithm: '', header: '', secret: '', allowed_clock_skew: 0, error_code: 0 },
      },
      auth_configs: { hmac: { use_certificate: false, signature: {} } },
      enable_signature_checking: false,
      base_identity_provided_by: '',
      global_rate_limit: { rate: 0, per: 0 },
      version_data: {
        versions: {
          Default: {
            name: 'Default',
            expires: '',
            override_target: '',
            global_headers: {},
            global_headers_remove: [],
            extended_paths: { ignored: [], white_list: [], black_list: [] },
          },
        },
      },
      event_handlers: { events: { QuotaExceeded: [] } },
      certificates: [],
      client_certificates: [],
      enable_detailed_recording: false,
      enable_context_vars: false,
      use_mutual_tls_auth: false,
      enable_jwt: false,
    }),
  },
  ...(
    [
      ['jwt_client_base_field', { jwt_client_base_field: 'cid' }],
      ['custom_middleware_bundle', { custom_middleware_bundle: 'bundle.zip' }],
      ['use_openid', { use_openid: true }],
      ...([['extended_paths.transform_jq', { transform_jq: [{ path: '/a', filter: '.' }] }]] as const).map(
        ([field, value]) => [
          `version_data.versions.v1.${field}`,
          {
            version_data: {
              versions: {
                v1: { name: 'v1', [field.startsWith('extended_paths') ? 'extended_paths' : field]: value },
              },
            },
          },
        ],
      ),
      ['expire_analytics_after', { expire_analytics_after: 60 }],
    ] as [string, Record<string, unknown>][]
  ).map(([path, extra]): Case => ({
    name: `${path} is refused as not supported yet`,
    api: api(extra),
    each: [notYet(path)],
  })),
  ...(['certificates', 'client_certificates'] as const).flatMap((field): Case[] => [
    {
      name: `${field} holds certificate IDs`,
      api: api({ [field]: [`org1${'a'.repeat(64)}`, 'b'.repeat(64)] }),
      want: [],
    },
    {
      name: `${field}: an entry that is not a certificate ID is refused`,
      api: api({ [field]: ['cert-1'] }),
      want: [
        {
          path: `${field}[0]`,
          type: 'Invalid',
          message:
            '"cert-1" is not a certificate ID: give the ID POST /svc/certs answered (organisation ID followed by the certificate\'s SHA-256 hex)',
        },
      ],
    },
  ]),
  {
    name: 'upstream_certificates and pinned_public_keys: hosts, wildcards and *, certificate IDs and pins',
    api: api({
      upstream_certificates: {
        'API.example.com': `org1${'a'.repeat(64)}`,
        '*.example.com': 'b'.repeat(64),
        '*': 'c'.repeat(64),
      },
      pinned_public_keys: {
        '10.0.0.1': `sha256/${'A'.repeat(43)}=, org1${'a'.repeat(64)}`,
        '*': `sha256/${'x+/9'.repeat(10)}abc=`,
      },
    }),
    want: [],
  },
  {
    name: 'upstream_certificates: a host with a scheme or port and an ID that is not one are refused',
    api: api({ upstream_certificates: { 'api.example.com:443': 'cert-1' } }),
    want: [
      {
        path: 'upstream_certificates["api.example.com:443"]',
        type: 'Invalid',
        message:
          '"api.example.com:443" is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)',
      },
      {
        path: 'upstream_certificates["api.example.com:443"]',
        type: 'Invalid',
        message:
          '"cert-1" is not a certificate ID: give the ID POST /svc/certs answered for a certificate uploaded with its private key',
      },
    ],
  },
  {
    name: 'pinned_public_keys: a malformed pin and an empty entry are refused',
    api: api({ pinned_public_keys: { '*': `sha256/${'A'.repeat(42)}=,` } }),
    want: [
      {
        path: 'pinned_public_keys["*"]',
        type: 'Invalid',
        message: `"sha256/${'A'.repeat(42)}=" is neither a certificate ID (organisation ID followed by the certificate's SHA-256 hex) nor a public-key pin (sha256/<base64 SHA-256 of the SubjectPublicKeyInfo>, 44 base64 characters)`,
      },
      {
        path: 'pinned_public_keys["*"]',
        type: 'Invalid',
        message: 'an empty entry: write the pins separated by single commas',
      },
    ],
  },
  {
    name: 'an API-wide rate limit is served; it needs both its values',
    api: api({ global_rate_limit: { rate: 100, per: 1 } }),
    want: [],
  },
  {
    name: 'an API-wide rate without its window is refused',
    api: api({ global_rate_limit: { rate: 100 } }),
    want: [
      {
        path: 'global_rate_limit.per',
        type: 'Required',
        message: 'a rate needs its window: set per to the seconds the rate counts over',
      },
    ],
  },
  {
    name: 'two methods at once: chained authentication is served',
    api: api({
      use_keyless: false,
      use_standard_auth: true,
      use_basic_auth: true,
      base_identity_provided_by: 'basic_auth_user',
    }),
  },
  {
    name: 'basic body regexps compile and have exactly one group',
    api: api({
      use_keyless: false,
      use_basic_auth: true,
      basic_auth: { extract_from_body: true, body_user_regexp: '<u>(.*)</u>(x)', body_password_regexp: '(' },
    }),
    want: [
      {
        path: 'basic_auth.body_user_regexp',
        type: 'Invalid',
        message:
          '"<u>(.*)</u>(x)" has 2 capturing groups: write exactly one, around the user name, such as <user>(.*)</user> (make other groups non-capturing: (?:...))',
      },
      {
        path: 'basic_auth.body_password_regexp',
        type: 'Invalid',
        message:
          '"(" is not a valid regular expression (Invalid regular expression: /(/: Unterminated group): escape special characters such as ( [ ? with a backslash',
      },
    ],
  },
  {
    name: 'a body regexp without a group',
    api: api({ basic_auth: { body_user_regexp: '<u>.*</u>' } }),
    each: [(p) => p.path === 'basic_auth.body_user_regexp' && p.message.includes('has 0 capturing groups')],
  },
  {
    name: 'a trailing backslash does not compile, whatever follows it',
    api: api({ basic_auth: { body_user_regexp: '(a)\\' } }),
    each: [(p) => p.path === 'basic_auth.body_user_regexp' && p.message.includes('not a valid regular')],
  },
  {
    name: 'extract_from_body needs both regexps',
    api: api({ use_keyless: false, use_basic_auth: true, basic_auth: { extract_from_body: true } }),
    want: [
      {
        path: 'basic_auth.body_user_regexp',
        type: 'Required',
        message:
          'extract_from_body needs a regular expression with one capturing group around the user name, such as <user>(.*)</user>',
      },
      {
        path: 'basic_auth.body_password_regexp',
        type: 'Required',
        message:
          'extract_from_body needs a regular expression with one capturing group around the password, such as <password>(.*)</password>',
      },
    ],
  },
  {
    name: 'GraphQL details are checked too',
    api: api({
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'a',
            data_source: { kind: 'HTTPJSONDataSource', data_source_config: { url: 'users/{{ .id }}' } },
          },
          {
            type_name: 'Query',
            field_name: 'b',
            data_source: { kind: 'REST', data_source_config: { url: 'http://x/{{ .object.id' } },
          },
          {
            type_name: 'Query',
            field_name: 'c',
            data_source: { kind: 'GraphQLDataSource', data_source_config: { url: 'ftp://x/graphql' } },
          },
        ],
      },
    }),
    want: [
      {
        path: 'graphql.schema',
        type: 'Required',
        message:
          'execution_mode executionEngine needs the GraphQL schema (SDL) of the API: set graphql.schema',
      },
      {
        path: 'graphql.type_field_configurations[0].data_source.data_source_config.url',
        type: 'Invalid',
        message:
          '"users/{{ .id }}" is not an absolute http(s) URL: write the scheme and host, such as http://users.default.svc:8080/graphql',
      },
      {
        path: 'graphql.type_field_configurations[1].data_source.kind',
        type: 'NotSupported',
        message: '"REST": use GraphQLDataSource or HTTPJSONDataSource',
      },
      {
        path: 'graphql.type_field_configurations[1].data_source.data_source_config.url',
        type: 'Invalid',
        message:
          '"http://x/{{ .object.id" has an unbalanced template: close each {{ with }}, such as {{ .object.id }}',
      },
      {
        path: 'graphql.type_field_configurations[2].data_source.data_source_config.url',
        type: 'Invalid',
        message: '"ftp://x/graphql" has the scheme "ftp": data sources are called over http or https',
      },
    ],
  },
  {
    name: "GraphQL version 2: the reference's data graph sample (REST sources, field configs) passes",
    api: api(
      {
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema:
            'type Query { user(id: Int!): User }\ntype User { id: Int posts: [Post] }\ntype Post { id: Int }',
          engine: {
            field_configs: [
              { type_name: 'Query', field_name: 'user', disable_default_mapping: true, path: [] },
              { type_name: 'User', field_name: 'posts', disable_default_mapping: true, path: [] },
            ],
            data_sources: [
              {
                kind: 'REST',
                name: 'User',
                internal: true,
                root_fields: [{ type: 'Query', fields: ['user'] }],
                config: {
                  // Another API of the gateway (the reference writes tyk://users-api/...).
                  url: 'svc://users-api/users/{{.arguments.id}}',
                  method: 'GET',
                  body: '',
                  headers: {},
                },
              },
              {
                kind: 'GraphQL',
                name: 'Posts',
                root_fields: [{ type: 'User', fields: ['posts'] }],
                config: {
                  url: 'http://posts:3102/graphql',
                  method: 'POST',
                  // Neutral values of another kind's settings set nothing: accepted.
                  body: '',
                  headers: {},
                  subscription_type: 'graphql-ws',
                  has_operation: true,
                  operation: 'query($id: Int) { posts(user: $id) { id } }',
                  variables: { id: '{{ .object.id }}' },
                },
              },
            ],
            global_headers: [{ key: 'x-from', value: 'svc' }],
          },
        },
      },
      { target_url: '' },
    ),
  },
  ((): Case => {
    const engine = (urls: string[], tls: Record<string, unknown>): ClassicApiInput =>
      api(
        {
          ...tls,
          graphql: {
            enabled: true,
            execution_mode: 'executionEngine',
            version: '2',
            schema: 'type Query { a: String b: String c: String }',
            engine: {
              data_sources: urls.map((url, i) => ({
                kind: 'GraphQL',
                name: `s${String(i)}`,
                root_fields: [{ type: 'Query', fields: [['a', 'b', 'c'][i]] }],
                config: { url, method: 'POST' },
              })),
            },
          },
        },
        { target_url: '' },
      );
    const message = (host: string): string =>
      `not supported by svc yet: upstream TLS settings (upstream_certificates, pinned_public_keys) for ${host}: the GraphQL engine calls its data sources and subgraphs without them; call that host through an API of its own (svc://<api>) with the settings`;
    return {
      name: 'GraphQL engine data sources at a host with upstream TLS settings are refused (the engine would call it without them); plain http, other hosts and svc:// pass',
      api: engine(
        ['https://pinned.example.com/graphql', 'http://pinned.example.com/graphql', 'svc://other/graphql'],
        { pinned_public_keys: { 'pinned.example.com': `sha256/${'A'.repeat(43)}=` } },
      ),
      want: [
        {
          path: 'graphql.engine.data_sources[0].config.url',
          type: 'NotSupportedYet',
          message: message('pinned.example.com'),
        },
      ],
    };
  })(),
  {
    name: 'GraphQL: a * client certificate covers every https data source, a templated host too',
    api: api(
      {
        upstream_certificates: { '*': `org1${'a'.repeat(64)}` },
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          schema: 'type Query { a: String b: String }',
          type_field_configurations: [
            {
              type_name: 'Query',
              field_name: 'a',
              data_source: {
                kind: 'HTTPJSONDataSource',
                data_source_config: { url: 'https://{{ .arguments.host }}/a', method: 'GET' },
              },
            },
            {
              type_name: 'Query',
              field_name: 'b',
              data_source: {
                kind: 'HTTPJSONDataSource',
                data_source_config: { url: 'https://b.example.com/b', method: 'GET' },
              },
            },
          ],
        },
      },
      { target_url: '' },
    ),
    each: [
      (p) =>
        p.path === 'graphql.type_field_configurations[0].data_source.data_source_config.url' &&
        p.type === 'NotSupportedYet' &&
        p.message.includes('for a host given by a template:'),
      (p) =>
        p.path === 'graphql.type_field_configurations[1].data_source.data_source_config.url' &&
        p.type === 'NotSupportedYet' &&
        p.message.includes('for b.example.com:'),
    ],
  },
  {
    name: 'GraphQL: a supergraph subgraph at a pinned https host is refused the same; one at svc:// passes',
    api: api({
      pinned_public_keys: { '*.example.com': `sha256/${'A'.repeat(43)}=` },
      graphql: {
        enabled: true,
        execution_mode: 'supergraph',
        supergraph: {
          subgraphs: [
            { name: 'a', url: 'https://a.example.com/graphql', sdl: 'type Query { a: String }' },
            { name: 'b', url: 'svc://b-api', sdl: 'type Query { b: String }' },
          ],
        },
      },
    }),
    each: [
      (p) =>
        p.path === 'graphql.supergraph.subgraphs[0].url' &&
        p.type === 'NotSupportedYet' &&
        p.message.includes('for a.example.com:'),
    ],
  },
  {
    name: 'GraphQL version 2: bad sources are refused at their paths',
    api: api(
      {
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String b(id: ID): String }',
          type_field_configurations: [{ type_name: 'Query', field_name: 'a' }],
          engine: {
            field_configs: [{ type_name: 'Query', field_name: 'nope' }],
            data_sources: [
              {
                kind: 'Kafka',
                root_fields: [{ type: 'Query', fields: ['a'] }],
                config: { broker_addresses: ['k:9092'], topics: ['t'] },
              },
              {
                kind: 'REST',
                root_fields: [
                  { type: 'Query', fields: ['a', 'b'] },
                  { type: 'Mutation', fields: ['x'] },
                ],
                config: {
                  url: 'tyk://users/{{.arguments.id}}',
                  method: 'TRACE',
                  headers: { 'x-h': '{{ .request.header.x }}', 'x-ok': '{{ .request.headers.x-key }}' },
                  operation: '{ a }',
                },
              },
              {
                kind: 'GraphQL',
                root_fields: [{ type: 'Query', fields: ['b'] }],
                config: { has_operation: true },
              },
              { kind: 'REST', root_fields: [] },
            ],
          },
        },
      },
      { target_url: '' },
    ),
    want: [
      {
        path: 'graphql.type_field_configurations',
        type: 'Invalid',
        message:
          'with graphql.version "2" the data graph is read from graphql.engine: move these fields to engine.data_sources and engine.field_configs, or remove graphql.version',
      },
      {
        path: 'graphql.engine.field_configs[0].field_name',
        type: 'Invalid',
        message: '"Query" has no field "nope" in graphql.schema',
      },
      {
        path: 'graphql.engine.data_sources[0].root_fields[0].type',
        type: 'Invalid',
        message: '"Query": a Kafka data source feeds subscription fields: list fields of Subscription',
      },
      {
        path: 'graphql.engine.data_sources[0].config.group_id',
        type: 'Required',
        message: 'name the consumer group: subscriptions sharing a group share the partitions of its topics',
      },
      {
        path: 'graphql.engine.data_sources[1].root_fields[0].fields[0]',
        type: 'Invalid',
        message:
          'Query.a is already served by graphql.engine.data_sources[0]: list each field in one data source',
      },
      {
        path: 'graphql.engine.data_sources[1].root_fields[1].type',
        type: 'Invalid',
        message: '"Mutation" is not an object type of graphql.schema',
      },
      {
        path: 'graphql.engine.data_sources[1].config.operation',
        type: 'Forbidden',
        message: 'not a setting of a REST data source: it takes url, method, headers, query, body',
      },
      {
        path: 'graphql.engine.data_sources[1].config.url',
        type: 'Invalid',
        message:
          '"tyk://users/{{.arguments.id}}": another API of the gateway is written svc://<api>/<path> here (tyk:// is the reference gateway\'s spelling)',
      },
      {
        path: 'graphql.engine.data_sources[1].config.method',
        type: 'NotSupported',
        message: '"TRACE": a REST data source calls with GET, POST, PUT, PATCH, DELETE',
      },
      {
        path: 'graphql.engine.data_sources[1].config.headers.x-h',
        type: 'Invalid',
        message:
          "\"{{ .request.header.x }}\": templates fill the field's arguments, its parent object's fields or the request's headers, such as {{ .arguments.id }}, {{ .object.id }} or {{ .request.headers.authorization }}",
      },
      {
        path: 'graphql.engine.data_sources[2].root_fields[0].fields[0]',
        type: 'Invalid',
        message:
          'Query.b is already served by graphql.engine.data_sources[1]: list each field in one data source',
      },
      {
        path: 'graphql.engine.data_sources[2].config.url',
        type: 'Required',
        message: 'set the http(s) URL the data source calls',
      },
      {
        path: 'graphql.engine.data_sources[2].config.operation',
        type: 'Required',
        message: 'has_operation is true: write the operation sent',
      },
      {
        path: 'graphql.engine.data_sources[3].config',
        type: 'Required',
        message: 'a REST data source needs its config, with the url it calls',
      },
    ],
  },
  {
    name: 'GraphQL: a version 2 engine without version "2" would be ignored: refused',
    api: api({
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { a: String }',
        engine: {
          field_configs: [],
          data_sources: [
            { kind: 'REST', root_fields: [{ type: 'Query', fields: ['a'] }], config: { url: 'http://a' } },
          ],
        },
      },
    }),
    want: [
      {
        path: 'graphql.engine',
        type: 'Invalid',
        message:
          'the version 2 data graph is read when graphql.version is "2": set graphql.version to "2", or write the graph in graphql.type_field_configurations',
      },
    ],
  },
  {
    name: 'wrongly typed fields read as absent (the schema reports them)',
    api: {
      name: 1,
      proxy: 'x',
      allowed_ips: 'x',
      basic_auth: [],
      version_data: { versions: [] },
      graphql: { type_field_configurations: [null, { data_source: 1 }] },
      auth_configs: null,
    },
    want: [
      {
        path: 'proxy.target_url',
        type: 'Required',
        message: 'set the upstream address, such as http://<service>.<namespace>.svc:<port>',
      },
    ],
  },
  {
    name: 'GraphQL version 2, Kafka sources: what the consumer cannot do is refused by name',
    api: api(
      {
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String } type P { n: String } type Subscription { s(n: String): P }',
          engine: {
            data_sources: [
              {
                kind: 'Kafka',
                root_fields: [{ type: 'Subscription', fields: ['s'] }],
                config: {
                  broker_addresses: ['k:9092', 'http://k:9092'],
                  topics: ['t.{{ .object.id }}', ''],
                  group_id: 'g',
                  client_id: 'c-{{.arguments.n}}',
                  kafka_version: '2.8.0',
                  balance_strategy: 'BalanceStrategySticky',
                  isolation_level: 'ReadCommitted',
                  sasl: { enable: true, user: 'u', password: 'p' },
                  url: 'http://x',
                },
              },
              {
                kind: 'GraphQL',
                root_fields: [{ type: 'Query', fields: ['a'] }],
                config: { url: 'http://g/', default_type_name: 'Nope' },
              },
            ],
          },
        },
      },
      { target_url: '' },
    ),
    want: [
      {
        path: 'graphql.engine.data_sources[0].config.url',
        type: 'Forbidden',
        message:
          'not a setting of a Kafka data source: it takes broker_addresses, topics, group_id, client_id, kafka_version, start_consuming_latest, balance_strategy, isolation_level, sasl',
      },
      {
        path: 'graphql.engine.data_sources[0].config.broker_addresses[1]',
        type: 'Invalid',
        message: '"http://k:9092": write a broker as host:port, such as kafka.default.svc:9092',
      },
      {
        path: 'graphql.engine.data_sources[0].config.topics[0]',
        type: 'Invalid',
        message:
          '"{{ .object.id }}": a Kafka source fills the subscription field\'s arguments only, such as {{ .arguments.name }}',
      },
      {
        path: 'graphql.engine.data_sources[0].config.topics[1]',
        type: 'Invalid',
        message: 'a topic cannot be empty',
      },
      {
        path: 'graphql.engine.data_sources[0].config.kafka_version',
        type: 'Invalid',
        message:
          '"2.8.0": write the protocol version as the reference does, such as V2_8_0_0, or leave it empty',
      },
      {
        path: 'graphql.engine.data_sources[0].config.balance_strategy',
        type: 'NotSupported',
        message:
          '"BalanceStrategySticky": the gateway\'s Kafka consumer assigns partitions by range only: use BalanceStrategyRange, or leave it empty',
      },
      {
        path: 'graphql.engine.data_sources[0].config.isolation_level',
        type: 'NotSupported',
        message:
          '"ReadCommitted": the gateway\'s Kafka consumer reads uncommitted only: use ReadUncommitted, or leave it empty',
      },
      {
        path: 'graphql.engine.data_sources[0].config.sasl.enable',
        type: 'NotSupported',
        message:
          'SASL is not supported yet by the Kafka data source: reach the brokers without SASL, or set enable to false',
      },
      {
        path: 'graphql.engine.data_sources[1].config.default_type_name',
        type: 'Invalid',
        message: '"Nope" is not an object type of graphql.schema: name the type the source answers',
      },
    ],
  },
  {
    name: 'GraphQL version 2, Kafka sources: the reference sample form is admitted',
    api: api(
      {
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String } type P { n: String } type Subscription { s(n: String): P }',
          engine: {
            data_sources: [
              {
                kind: 'Kafka',
                root_fields: [{ type: 'Subscription', fields: ['s'] }],
                config: {
                  broker_addresses: ['kafka:9092'],
                  topics: ['t.{{.arguments.n}}'],
                  group_id: 'g',
                  client_id: 'c',
                  kafka_version: 'V2_8_0_0',
                  start_consuming_latest: true,
                  balance_strategy: 'BalanceStrategyRange',
                  isolation_level: 'ReadUncommitted',
                  sasl: { enable: false, user: '', password: '' },
                },
              },
            ],
          },
        },
      },
      { target_url: '' },
    ),
    want: [],
  },
  {
    name: 'an internal API (reached through svc:// only) needs no listen path, absent or empty',
    api: { name: 'a', use_keyless: true, internal: true, proxy: { target_url: 'http://u:1' } },
  },
  {
    name: 'an internal API with an empty listen path',
    api: api({ internal: true }, { listen_path: '' }),
  },
  {
    name: 'an API served to clients still needs one, and the message says when none is needed',
    api: { name: 'a', use_keyless: true, internal: false, proxy: { target_url: 'http://u:1' } },
    want: [
      {
        path: 'proxy.listen_path',
        type: 'Required',
        message:
          'set the base path on the gateway, such as /orders/ (an API with internal: true, reached through svc:// targets only, needs none)',
      },
    ],
  },
  {
    name: "an internal API's listen path, when given, is checked as any other",
    api: api({ internal: true }, { listen_path: 'a/' }),
    want: [
      { path: 'proxy.listen_path', type: 'Invalid', message: '"a/" must start with "/", such as "/a/"' },
    ],
  },
];

describe('checkClassicApi', () => {
  for (const c of cases) {
    test(c.name, () => {
      const got = checkClassicApi(c.api);
      if (c.each !== undefined) {
        assert.equal(got.length, c.each.length, JSON.stringify(got, null, 2));
        c.each.forEach((ok, i) => {
          const p = got[i];
          assert.ok(p !== undefined && ok(p), JSON.stringify(p));
        });
      } else {
        assert.deepEqual(got, c.want ?? []);
      }
    });
  }
});

describe('listen paths and claims', () => {
  const claims: { a: string; b: string; same: boolean }[] = [
    { a: '/P/', b: '/p/', same: true },
    { a: '/p', b: '/p/', same: true },
    { a: '/p//', b: '/p', same: true },
    { a: '/', b: '/', same: true },
    { a: '/Orders/V1', b: '/orders/v1/', same: true },
    { a: '/p/q', b: '/p', same: false },
    { a: '/p', b: '/pq', same: false },
  ];
  for (const c of claims) {
    test(`${c.a} and ${c.b} ${c.same ? 'claim one route' : 'are different routes'}`, () => {
      assert.equal(routeKey(c.a) === routeKey(c.b), c.same);
    });
  }

  test('the fuzz findings are refused, so they can no longer sit beside /p/', () => {
    for (const lp of ['/p/./', '//p/', '/p%2F']) assert.notEqual(listenPathProblem(lp), undefined, lp);
    assert.equal(listenPathProblem('/P/'), undefined);
    assert.equal(routeKey('/P/'), routeKey('/p/'));
  });

  test('reserved paths compare like claims', () => {
    assert.notEqual(reservedPathProblem('/SVC/apis/'), undefined);
    assert.equal(reservedPathProblem('/svcs/'), undefined);
    assert.equal(reservedPathProblem('/'), undefined);
  });

  test('domainKey', () => {
    assert.equal(domainKey('API.Example.com:8080'), 'api.example.com');
    assert.equal(domainKey('example.com.'), 'example.com');
    assert.equal(domainKey(' '), '');
    assert.equal(domainKey(undefined), '');
  });
});

describe('unsupportedFeatures', () => {
  test('names each field the schema flags not supported, as `<path>: not supported by svc yet`', () => {
    const def = api({ expire_analytics_after: 60, use_openid: true, do_not_track: false });
    assert.deepEqual(unsupportedFeatures(def).map(formatProblem), [
      'expire_analytics_after: not supported by svc yet',
      'use_openid: not supported by svc yet',
    ]);
  });

  test('is part of checkClassicApi', () => {
    const def = api({ expire_analytics_after: 60, use_openid: true });
    assert.deepEqual(unsupportedFeatures(def), checkClassicApi(def));
  });
});

describe('classicApiWarnings', () => {
  const warnings: { name: string; api: ClassicApiInput; want: string[] }[] = [
    { name: 'none', api: api(), want: [] },
    {
      name: 'an enabled allow list that is empty',
      api: api({ enable_ip_whitelisting: true }),
      want: ['allowed_ips: enable_ip_whitelisting is true but allowed_ips is empty: every client is refused'],
    },
    {
      name: 'a block list that is not enabled',
      api: api({ blacklisted_ips: ['203.0.113.7'] }),
      want: [
        'enable_ip_blacklisting: blacklisted_ips is set but enable_ip_blacklisting is not true: the list is ignored',
      ],
    },
    {
      name: 'data sources outside executionEngine',
      api: api({ graphql: { type_field_configurations: [{ type_name: 'Q', field_name: 'a' }] } }),
      want: [
        'graphql.type_field_configurations: data sources are used only when execution_mode is executionEngine',
      ],
    },
    {
      name: 'version 2 data sources outside executionEngine',
      api: api({ graphql: { version: '2', engine: { data_sources: [{ kind: 'REST' }] } } }),
      want: [
        'graphql.engine.data_sources: data sources are used only when execution_mode is executionEngine',
      ],
    },
  ];
  for (const w of warnings) {
    test(w.name, () => {
      assert.deepEqual(
        classicApiWarnings(w.api).map((x) => `${x.path}: ${x.message}`),
        w.want,
      );
    });
  }
});

test('formatProblem prints like the API server', () => {
  assert.equal(
    formatProblem({ path: 'proxy.target_url', type: 'Required', message: 'add it' }),
    'proxy.target_url: Required value: add it',
  );
});

test('the example ApiDefinitions pass', async () => {
  const text = await readFile(
    join(import.meta.dirname, '..', '..', 'examples', 'api-definition.yaml'),
    'utf8',
  );
  for (const doc of parseAllDocuments(text)) {
    const spec = (doc.toJS() as { spec: ClassicApiInput }).spec;
    assert.deepEqual(checkClassicApi(spec), []);
  }
});
