import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { merge } from '../../lib/testing/merge.ts';
import type { GatewayApiDefinition } from '../generated/models.ts';
import type { FieldProblem } from '../rules/field-problem.ts';
import { ID_RULE } from '../rules/ids.ts';
import { oasDocument, requiring } from '../testing.ts';
import { checkOasDocument, oasToClassic } from './index.ts';

type Json = Record<string, unknown>;

const X = 'x-svc-api-gateway';
const AUTH = `${X}.server.authentication`;

/** A keyless OAS API at /pets/, with `ext` merged into its extension and `rest` into the document. */
const oas = (ext: Json = {}, rest: Json = {}): Json => oasDocument({}, ext, rest);

/** An OAS API requiring the scheme `name` (declared as `decl`, configured as `settings`). */
const secured = (name: string, decl: Json, settings: Json = {}, auth: Json = {}): Json =>
  oas(...requiring(name, decl, settings, auth));

const apiKey = (where: string, name: string): Json => ({ type: 'apiKey', in: where, name });

/** The classic form of the keyless API at /pets/, with `extra`. */
const classic = (extra: Json = {}, proxy: Json = {}): Json => ({
  is_oas: true,
  name: 'pets',
  active: true,
  proxy: { target_url: 'http://pets.default.svc:8080', listen_path: '/pets/', ...proxy },
  use_keyless: true,
  ...extra,
});
const keyed = (extra: Json): Json => classic({ use_keyless: false, ...extra });

const notYet = (path: string): FieldProblem => ({
  path,
  type: 'NotSupported',
  message: 'not supported yet by this gateway: remove it (the gateway keeps no setting it does not enforce)',
});

interface Case {
  name: string;
  doc: unknown;
  /** The classic form; omitted: not compared. */
  api?: Json;
  /** The conversion's problems; omitted: none. */
  problems?: FieldProblem[];
}

const cases: Case[] = [
  { name: 'a keyless API', doc: oas(), api: classic() },
  {
    name: 'upstream.preserveTrailingSlash: the classic proxy.disable_strip_slash',
    doc: oas({ upstream: { url: 'http://pets.default.svc:8080', preserveTrailingSlash: { enabled: true } } }),
    api: classic({}, { disable_strip_slash: true }),
  },
  {
    name: 'upstream.preserveTrailingSlash disabled says nothing',
    doc: oas({
      upstream: { url: 'http://pets.default.svc:8080', preserveTrailingSlash: { enabled: false } },
    }),
    api: classic(),
  },
  {
    name: 'certificates: static mutual TLS, upstream client certificates and pinned public keys',
    doc: oas({
      server: { clientCertificates: { enabled: true, allowlist: ['acme1', 'acme2'] } },
      upstream: {
        mutualTLS: {
          enabled: true,
          domainToCertificateMapping: [
            { domain: 'pets.default.svc', certificate: 'acme3' },
            { domain: '*', certificate: 'acme4' },
          ],
        },
        certificatePinning: {
          enabled: true,
          domainToPublicKeysMapping: [{ domain: 'pets.default.svc', publicKeys: ['sha256/abc=', 'acme5'] }],
        },
      },
    }),
    api: classic({
      use_mutual_tls_auth: true,
      client_certificates: ['acme1', 'acme2'],
      upstream_certificates: { 'pets.default.svc': 'acme3', '*': 'acme4' },
      pinned_public_keys: { 'pets.default.svc': 'sha256/abc=,acme5' },
    }),
  },
  {
    name: 'certificates: disabled settings say nothing',
    doc: oas({
      server: { clientCertificates: { enabled: false, allowlist: ['acme1'] } },
      upstream: {
        mutualTLS: { enabled: false, domainToCertificateMapping: [{ domain: '*', certificate: 'acme3' }] },
        certificatePinning: {
          enabled: false,
          domainToPublicKeysMapping: [{ domain: '*', publicKeys: ['x'] }],
        },
      },
    }),
    api: classic(),
  },
  {
    name: 'certificates: an entry without its domain or value, a domain twice, an empty mapping',
    doc: oas({
      upstream: {
        mutualTLS: {
          enabled: true,
          domainToCertificateMapping: [
            { certificate: 'acme3' },
            { domain: 'a.example', certificate: 'acme3' },
            { domain: 'a.example', certificate: 'acme4' },
            { domain: 'b.example' },
          ],
        },
        certificatePinning: { enabled: true },
      },
    }),
    problems: [
      {
        path: `${X}.upstream.mutualTLS.domainToCertificateMapping[0].domain`,
        type: 'Required',
        message: 'set the upstream host: a name or IP, *.example.com, or *',
      },
      {
        path: `${X}.upstream.mutualTLS.domainToCertificateMapping[2].domain`,
        type: 'Invalid',
        message: '"a.example" is mapped more than once: map it once',
      },
      {
        path: `${X}.upstream.mutualTLS.domainToCertificateMapping[3].certificate`,
        type: 'Required',
        message: 'set certificate for "b.example"',
      },
      {
        path: `${X}.upstream.certificatePinning.domainToPublicKeysMapping`,
        type: 'Required',
        message: 'certificatePinning is enabled: map at least one domain, or set enabled to false',
      },
    ],
  },
  {
    name: 'identity, state, strip and domain',
    doc: oas({
      info: { id: 'pets-1', orgId: 'acme', state: { active: false, internal: true } },
      server: { listenPath: { strip: true }, customDomain: { enabled: true, name: 'pets.example.com' } },
    }),
    api: classic(
      { api_id: 'pets-1', org_id: 'acme', active: false, internal: true, domain: 'pets.example.com' },
      { strip_listen_path: true },
    ),
  },
  { name: 'an empty info.id is no ID', doc: oas({ info: { id: '' } }), api: classic() },
  {
    name: 'a disabled custom domain says nothing',
    doc: oas({ server: { customDomain: { enabled: false, name: 'pets.example.com', certificates: ['c'] } } }),
    api: classic(),
  },
  {
    name: 'an enabled custom domain needs a name',
    doc: oas({ server: { customDomain: { enabled: true } } }),
    problems: [
      {
        path: `${X}.server.customDomain.name`,
        type: 'Required',
        message:
          'the custom domain is enabled: set its name, such as api.example.com, or set enabled to false',
      },
    ],
  },
  {
    name: 'detailed tracing is accepted (kept in the document only)',
    doc: oas({ server: { detailedTracing: { enabled: true } } }),
    api: classic(),
  },
  // Auth tokens.
  {
    name: 'token in a header, stripped',
    doc: secured('token', apiKey('header', 'X-Api-Key'), {}, { stripAuthorizationData: true }),
    api: keyed({
      strip_auth_data: true,
      use_standard_auth: true,
      auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } },
    }),
  },
  {
    name: 'token in a query parameter only',
    doc: secured('token', apiKey('query', 'api_key')),
    api: keyed({
      use_standard_auth: true,
      auth_configs: { authToken: { disable_header: true, param_name: 'api_key', use_param: true } },
    }),
  },
  {
    name: 'token in a header, a query parameter and a cookie',
    doc: secured('token', apiKey('header', 'Authorization'), {
      query: { enabled: true, name: 'key' },
      cookie: { enabled: true, name: 'session' },
    }),
    api: keyed({
      use_standard_auth: true,
      auth_configs: {
        authToken: {
          auth_header_name: 'Authorization',
          param_name: 'key',
          use_param: true,
          cookie_name: 'session',
          use_cookie: true,
        },
      },
    }),
  },
  {
    name: 'token in a cookie, and in a header the extension enables',
    doc: secured('token', apiKey('cookie', 'session'), {
      header: { enabled: true, name: 'X-Key' },
      query: { enabled: false, name: 'ignored' },
    }),
    api: keyed({
      use_standard_auth: true,
      auth_configs: { authToken: { auth_header_name: 'X-Key', cookie_name: 'session', use_cookie: true } },
    }),
  },
  {
    name: 'token: the declared location cannot be disabled, nor renamed',
    doc: secured('token', apiKey('header', 'X-Api-Key'), { header: { enabled: false, name: 'X-Other' } }),
    problems: [
      {
        path: `${AUTH}.securitySchemes.token.header.enabled`,
        type: 'Invalid',
        message: 'the scheme is declared in: header: remove enabled: false, or declare another location',
      },
      {
        path: `${AUTH}.securitySchemes.token.header.name`,
        type: 'Invalid',
        message:
          'the scheme is declared in: header with the name "X-Api-Key": remove this name, or make it the same',
      },
    ],
  },
  {
    name: 'token: a header name repeated in another case is the same',
    doc: secured('token', apiKey('header', 'X-Api-Key'), { header: { enabled: true, name: 'x-api-key' } }),
    api: keyed({ use_standard_auth: true, auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } } }),
  },
  {
    name: 'token: a declaration without in and name',
    doc: secured('token', { type: 'apiKey' }),
    problems: [
      {
        path: 'components.securitySchemes.token.in',
        type: 'Invalid',
        message: 'undefined: set in to header, query or cookie',
      },
      {
        path: 'components.securitySchemes.token.name',
        type: 'Required',
        message: 'set the name of the header that carries the token, such as Authorization',
      },
    ],
  },
  {
    name: 'token: client certificates and signatures map to the classic fields',
    doc: secured('token', apiKey('header', 'Authorization'), {
      enableClientCertificate: true,
      signatureValidation: {
        enabled: true,
        algorithm: 'VendorSHA256',
        header: 'X-Signature',
        query: 'sig',
        secret: 's3cret',
        allowedClockSkew: 30,
        errorCode: 401,
        errorMessage: 'bad signature',
      },
    }),
    api: keyed({
      use_standard_auth: true,
      auth_configs: {
        authToken: {
          auth_header_name: 'Authorization',
          use_certificate: true,
          validate_signature: true,
          signature: {
            algorithm: 'VendorSHA256',
            header: 'X-Signature',
            use_param: true,
            param_name: 'sig',
            secret: 's3cret',
            allowed_clock_skew: 30,
            error_code: 401,
            error_message: 'bad signature',
          },
        },
      },
    }),
  },
  {
    name: 'token: a disabled signature validation says nothing',
    doc: secured('token', apiKey('header', 'Authorization'), {
      signatureValidation: { enabled: false, secret: 'x' },
    }),
    api: keyed({
      use_standard_auth: true,
      auth_configs: { authToken: { auth_header_name: 'Authorization' } },
    }),
  },
  {
    name: "token: another method's setting",
    doc: secured('token', apiKey('header', 'Authorization'), {
      cacheTTL: 30,
      source: 'x',
      disableCaching: false,
    }),
    problems: [
      {
        path: `${AUTH}.securitySchemes.token.cacheTTL`,
        type: 'Invalid',
        message:
          'cacheTTL applies to http basic schemes, and "token" is declared as apiKey (auth token): remove it',
      },
      {
        path: `${AUTH}.securitySchemes.token.source`,
        type: 'Invalid',
        message:
          'source applies to http bearer JWT schemes, and "token" is declared as apiKey (auth token): remove it',
      },
    ],
  },
  // Basic authentication.
  {
    name: 'basic in Authorization',
    doc: secured('basic', { type: 'http', scheme: 'basic' }),
    api: keyed({ use_basic_auth: true }),
  },
  {
    name: 'basic: the scheme name in any case',
    doc: secured('basic', { type: 'http', scheme: 'Basic' }),
    api: keyed({ use_basic_auth: true }),
  },
  {
    name: 'basic: caching, body extraction, a query parameter instead of the header',
    doc: secured(
      'basic',
      { type: 'http', scheme: 'basic' },
      {
        header: { enabled: false },
        query: { enabled: true, name: 'creds' },
        cacheTTL: 30,
        disableCaching: true,
        extractCredentialsFromBody: {
          enabled: true,
          userRegexp: '<u>(.*)</u>',
          passwordRegexp: '<p>(.*)</p>',
        },
      },
    ),
    api: keyed({
      use_basic_auth: true,
      auth_configs: { basic: { disable_header: true, param_name: 'creds', use_param: true } },
      basic_auth: {
        cache_ttl: 30,
        disable_caching: true,
        extract_from_body: true,
        body_user_regexp: '<u>(.*)</u>',
        body_password_regexp: '<p>(.*)</p>',
      },
    }),
  },
  {
    name: 'basic: another header',
    doc: secured('basic', { type: 'http', scheme: 'basic' }, { header: { name: 'X-User' } }),
    api: keyed({ use_basic_auth: true, auth_configs: { basic: { auth_header_name: 'X-User' } } }),
  },
  // JWT: the classic JWT fields.
  {
    name: 'JWT maps to the classic JWT fields',
    doc: secured(
      'jwt',
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      {
        source: 'c2VjcmV0',
        signingMethod: 'hmac',
        identityBaseField: 'sub',
        skipKid: true,
        policyFieldName: 'pol',
        clientBaseField: 'cid',
        defaultPolicies: ['default'],
        issuedAtValidationSkew: 1,
        notBeforeValidationSkew: 2,
        expiresAtValidationSkew: 3,
        cookie: { enabled: true, name: 'jwt' },
      },
    ),
    api: keyed({
      enable_jwt: true,
      auth_configs: { jwt: { cookie_name: 'jwt', use_cookie: true } },
      jwt_source: 'c2VjcmV0',
      jwt_signing_method: 'hmac',
      jwt_identity_base_field: 'sub',
      jwt_skip_kid: true,
      jwt_policy_field_name: 'pol',
      jwt_client_base_field: 'cid',
      jwt_default_policies: ['default'],
      jwt_issued_at_validation_skew: 1,
      jwt_not_before_validation_skew: 2,
      jwt_expires_at_validation_skew: 3,
    }),
  },
  {
    name: 'bearer tokens other than JWTs',
    doc: secured('bearer', { type: 'http', scheme: 'bearer' }),
    problems: [
      {
        path: 'components.securitySchemes.bearer.bearerFormat',
        type: 'NotSupported',
        message:
          'bearer tokens are read as JWTs only (bearerFormat: JWT): declare other tokens as type: apiKey, in: header, name: Authorization',
      },
    ],
  },
  ...['oauth2', 'openIdConnect', 'mutualTLS'].map((type): Case => ({
    name: `${type} schemes`,
    doc: secured('s', { type }),
    problems: [
      {
        path: 'components.securitySchemes.s.type',
        type: 'NotSupported',
        message: `"${type}" security schemes are not supported yet by this gateway: declare auth tokens as type: apiKey, basic authentication as type: http with scheme: basic, JWTs as type: http with scheme: bearer and bearerFormat: JWT`,
      },
    ],
  })),
  {
    name: 'http digest',
    doc: secured('d', { type: 'http', scheme: 'digest' }),
    problems: [
      {
        path: 'components.securitySchemes.d.scheme',
        type: 'NotSupported',
        message:
          'the http scheme "digest" is not supported yet by this gateway: declare auth tokens as type: apiKey, basic authentication as type: http with scheme: basic, JWTs as type: http with scheme: bearer and bearerFormat: JWT',
      },
    ],
  },
  // How security, the declarations and the extension fit together.
  {
    name: 'security without authentication is refused',
    doc: oas(
      {},
      {
        components: { securitySchemes: { token: apiKey('header', 'Authorization') } },
        security: [{ token: [] }],
      },
    ),
    problems: [
      {
        path: `${AUTH}.enabled`,
        type: 'Required',
        message:
          'the document\'s security requires "token", but authentication is not enabled: set enabled to true (and enable the scheme under securitySchemes), or set it to false to serve the API without authentication',
      },
    ],
  },
  {
    name: 'authentication switched off explicitly: keyless',
    doc: oas(
      { server: { authentication: { enabled: false, securitySchemes: { token: { enabled: true } } } } },
      {
        components: { securitySchemes: { token: apiKey('header', 'Authorization') } },
        security: [{ token: [] }],
      },
    ),
    api: classic(),
  },
  {
    name: 'authentication without a security requirement',
    doc: oas({ server: { authentication: { enabled: true } } }),
    problems: [
      {
        path: 'security',
        type: 'Required',
        message:
          'authentication is enabled (x-svc-api-gateway.server.authentication.enabled), but the document has no top-level security requirement: add one naming the scheme, such as security: [{token: []}]',
      },
    ],
  },
  {
    name: 'an empty security requirement',
    doc: merge(secured('token', apiKey('header', 'Authorization')), { security: [{}] }),
    problems: [
      {
        path: 'security[0]',
        type: 'Required',
        message:
          'the first security requirement names no scheme (an empty requirement would let clients in without credentials): name the scheme, such as {token: []}',
      },
      {
        path: `${AUTH}.securitySchemes.token.enabled`,
        type: 'Invalid',
        message:
          '"token" is enabled, but the document\'s security does not require it: add it to security[0], or set enabled to false',
      },
    ],
  },
  {
    name: 'alternative requirements and scopes',
    doc: merge(secured('token', apiKey('header', 'Authorization')), {
      security: [{ token: ['read'] }, {}],
    }),
    problems: [
      {
        path: 'security[1]',
        type: 'NotSupported',
        message:
          'alternative security requirements are not supported yet by this gateway: list every scheme the API requires in the first requirement, security[0]',
      },
      {
        path: 'security[0].token',
        type: 'NotSupported',
        message:
          'scopes are not supported yet by this gateway: write token: [] (use policies and their allowed URLs to limit what a key reaches)',
      },
    ],
  },
  {
    name: 'a required scheme that is not declared',
    doc: merge(secured('token', apiKey('header', 'Authorization')), { security: [{ token: [], other: [] }] }),
    problems: [
      {
        path: 'security[0].other',
        type: 'Invalid',
        message:
          'no security scheme "other" in components.securitySchemes: declare it (type: apiKey for auth tokens, type: http with scheme: basic for basic authentication)',
      },
    ],
  },
  {
    name: 'a required scheme the extension does not enable',
    doc: secured('token', apiKey('header', 'Authorization'), { enabled: false }),
    problems: [
      {
        path: `${AUTH}.securitySchemes.token.enabled`,
        type: 'Required',
        message:
          'the document\'s security requires "token": set enabled to true, so that the gateway enforces it',
      },
    ],
  },
  {
    name: 'two schemes of one method',
    doc: oas(
      {
        server: {
          authentication: { enabled: true, securitySchemes: { a: { enabled: true }, b: { enabled: true } } },
        },
      },
      {
        components: { securitySchemes: { a: apiKey('header', 'X-A'), b: apiKey('header', 'X-B') } },
        security: [{ a: [], b: [] }],
      },
    ),
    problems: [
      {
        path: `${AUTH}.securitySchemes.b`,
        type: 'NotSupported',
        message:
          '"a" and "b" are both apiKey (auth token) schemes: one scheme per method is supported: require one of them',
      },
    ],
  },
  {
    name: 'a token and basic together (chained: left to the classic rules)',
    doc: oas(
      {
        server: {
          authentication: {
            enabled: true,
            baseIdentityProvider: 'basic_auth_user',
            securitySchemes: { t: { enabled: true }, b: { enabled: true } },
          },
        },
      },
      {
        components: {
          securitySchemes: { t: apiKey('header', 'X-Key'), b: { type: 'http', scheme: 'basic' } },
        },
        security: [{ t: [], b: [] }],
      },
    ),
    api: keyed({
      base_identity_provided_by: 'basic_auth_user',
      use_standard_auth: true,
      auth_configs: { authToken: { auth_header_name: 'X-Key' } },
      use_basic_auth: true,
    }),
  },
  // API-wide middleware.
  {
    name: 'IP allow and block lists',
    doc: oas({
      middleware: {
        global: {
          ipAllowList: { enabled: true, allow: ['10.0.0.0/8'] },
          ipBlockList: { enabled: true, block: ['10.0.0.1'] },
        },
      },
    }),
    api: classic({
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['10.0.0.1'],
    }),
  },
  {
    name: 'disabled IP lists say nothing',
    doc: oas({
      middleware: {
        global: {
          ipAllowList: { enabled: false, allow: ['10.0.0.0/8'] },
          ipBlockList: { block: [] },
        },
      },
    }),
    api: classic(),
  },
  ...(
    [
      ['1s', 1],
      ['30s', 30],
      ['1m', 60],
      ['1m30s', 90],
      ['1h', 3600],
      ['1500ms500ms', 2],
    ] as const
  ).map(([per, seconds]): Case => ({
    name: `rate limit per ${per}`,
    doc: oas({ middleware: { global: { rateLimit: { enabled: true, rate: 10, per } } } }),
    api: classic({ global_rate_limit: { rate: 10, per: seconds } }),
  })),
  ...['500ms', '1.5s', '0s', '10', 'a minute'].map((per): Case => ({
    name: `rate limit per ${JSON.stringify(per)} is refused`,
    doc: oas({ middleware: { global: { rateLimit: { enabled: true, rate: 10, per } } } }),
    problems: [
      {
        path: `${X}.middleware.global.rateLimit.per`,
        type: 'Invalid',
        message: `${JSON.stringify(per)} is not a duration of whole seconds: write one such as 1s, 30s, 1m or 1h30m`,
      },
    ],
  })),
  {
    name: 'an enabled rate limit needs its rate and window',
    doc: oas({ middleware: { global: { rateLimit: { enabled: true } } } }),
    problems: [
      {
        path: `${X}.middleware.global.rateLimit.rate`,
        type: 'Required',
        message: 'set rate to the requests allowed per window, or set enabled to false',
      },
      {
        path: `${X}.middleware.global.rateLimit.per`,
        type: 'Required',
        message: 'set per to the window, such as 1s or 1m, or set enabled to false',
      },
    ],
  },
  {
    name: 'a disabled rate limit says nothing',
    doc: oas({ middleware: { global: { rateLimit: { enabled: false, rate: 10, per: 'soon' } } } }),
    api: classic(),
  },
  // No silent fail-open.
  {
    name: 'settings the gateway does not enforce are refused by name',
    doc: oas({
      info: { dbId: 'x', expiration: '2030-01-01 00:00' },
      upstream: { serviceDiscovery: { enabled: true } },
      server: { gatewayTags: { enabled: true, tags: ['edge'] }, authentication: { enabled: false } },
      middleware: {
        global: { contextVariables: { enabled: true }, trafficLogs: { enabled: false } },
      },
      somethingNew: 1,
    }),
    problems: [
      notYet(`${X}.info.dbId`),
      notYet(`${X}.info.expiration`),
      notYet(`${X}.upstream.serviceDiscovery`),
      notYet(`${X}.server.gatewayTags`),
      notYet(`${X}.middleware.global.contextVariables`),
      notYet(`${X}.somethingNew`),
    ],
  },
  {
    name: "an operation's internal: the classic internal entry of its path and method",
    doc: oas(
      {
        middleware: {
          operations: { s: { internal: { enabled: true } }, o: { internal: { enabled: false } } },
        },
      },
      { paths: { '/s/{id}': { get: { operationId: 's' } }, '/o': { post: { operationId: 'o' } } } },
    ),
    api: classic({
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            use_extended_paths: true,
            extended_paths: { internal: [{ path: '/s/{id}', method: 'GET' }] },
          },
        },
      },
    }),
  },
  {
    name: 'switched-off and empty settings say nothing',
    doc: oas({
      upstream: { serviceDiscovery: { enabled: false, queryEndpoint: 'x' } },
      server: { gatewayTags: { tags: [] } },
      middleware: { operations: {} },
      nothing: false,
    }),
    api: classic(),
  },
  {
    name: 'security per operation',
    doc: merge(secured('token', apiKey('header', 'Authorization')), {
      paths: {
        '/pets': { get: { security: [] }, post: { security: [{ token: [] }] }, summary: 'x' },
        '/pets/{id}': { get: { responses: {} } },
      },
    }),
    problems: [
      {
        path: 'paths["/pets"].get.security',
        type: 'NotSupported',
        message:
          'security per operation is not supported yet by this gateway: the top-level security applies to every operation: remove this one, or make it the same as the top-level security',
      },
    ],
  },
  {
    name: 'no extension',
    doc: { openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: {} },
    api: { is_oas: true },
    problems: [
      {
        path: X,
        type: 'Required',
        message:
          'the document has no x-svc-api-gateway extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value',
      },
    ],
  },
];

describe('oasToClassic', () => {
  for (const c of cases) {
    test(c.name, () => {
      const got = oasToClassic(c.doc);
      if (c.api !== undefined) assert.deepEqual(got.api, c.api);
      assert.deepEqual(got.problems, c.problems ?? []);
    });
  }

  test('anything at all converts without throwing', () => {
    const odd: unknown[] = [
      null,
      42,
      'x',
      [],
      { [X]: [] },
      { [X]: { info: 'x', server: [], middleware: { global: 3 } }, security: 'x', paths: [] },
      { [X]: { server: { authentication: { enabled: true, securitySchemes: [] } } }, security: [null, 1] },
      { [X]: { server: { authentication: { enabled: true } } }, security: [{ a: 'x' }], components: [] },
    ];
    for (const doc of odd) assert.ok(Array.isArray(oasToClassic(doc).problems));
  });
});

describe('checkOasDocument', () => {
  const mapped: { name: string; doc: Json; want: FieldProblem[] }[] = [
    {
      name: 'certificate IDs, hosts and pins, at the setting and the domain',
      doc: oas({
        server: { clientCertificates: { enabled: true, allowlist: ['bad id'] } },
        upstream: {
          url: 'https://pets.example',
          certificatePinning: {
            enabled: true,
            domainToPublicKeysMapping: [{ domain: 'pets.example', publicKeys: ['nope'] }],
          },
          mutualTLS: {
            enabled: true,
            domainToCertificateMapping: [{ domain: 'https://x', certificate: 'acme' }],
          },
        },
      }),
      want: [
        {
          path: `${X}.server.clientCertificates.allowlist[0]`,
          type: 'Invalid',
          message:
            '"bad id" is not a certificate ID: give the ID POST /svc/certs answered (organisation ID followed by the certificate\'s SHA-256 hex)',
        },
        {
          path: `${X}.upstream.mutualTLS.domainToCertificateMapping["https://x"]`,
          type: 'Invalid',
          message:
            '"https://x" is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)',
        },
        {
          path: `${X}.upstream.mutualTLS.domainToCertificateMapping["https://x"]`,
          type: 'Invalid',
          message:
            '"acme" is not a certificate ID: give the ID POST /svc/certs answered for a certificate uploaded with its private key',
        },
        {
          path: `${X}.upstream.certificatePinning.domainToPublicKeysMapping["pets.example"]`,
          type: 'Invalid',
          message:
            '"nope" is neither a certificate ID (organisation ID followed by the certificate\'s SHA-256 hex) nor a public-key pin (sha256/<base64 SHA-256 of the SubjectPublicKeyInfo>, 44 base64 characters)',
        },
      ],
    },
    {
      name: 'the classic rules, at document paths',
      doc: oas({
        info: { id: 'a b' },
        upstream: { url: 'ftp://files' },
        server: { listenPath: { value: '/svc/pets/' } },
        middleware: { global: { ipAllowList: { enabled: true, allow: ['10.0.0.1', '10.0.*'] } } },
      }),
      want: [
        { path: `${X}.info.id`, type: 'Invalid', message: ID_RULE },
        {
          path: `${X}.server.listenPath.value`,
          type: 'Invalid',
          message:
            '"/svc/pets/": the gateway\'s management API answers /svc and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own',
        },
        {
          path: `${X}.upstream.url`,
          type: 'NotSupported',
          message:
            '"ftp://files": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
        },
        {
          path: `${X}.middleware.global.ipAllowList.allow[1]`,
          type: 'Invalid',
          message:
            '"10.0.*": wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8',
        },
      ],
    },
    {
      name: 'body extraction expressions',
      doc: secured(
        'basic',
        { type: 'http', scheme: 'basic' },
        {
          extractCredentialsFromBody: { enabled: true, userRegexp: '<u>(a)(b)</u>' },
        },
      ),
      want: [
        {
          path: `${AUTH}.securitySchemes.basic.extractCredentialsFromBody.userRegexp`,
          type: 'Invalid',
          message:
            '"<u>(a)(b)</u>" has 2 capturing groups: write exactly one, around the user name, such as <user>(.*)</user> (make other groups non-capturing: (?:...))',
        },
        {
          path: `${AUTH}.securitySchemes.basic.extractCredentialsFromBody.passwordRegexp`,
          type: 'Required',
          message:
            'extract_from_body needs a regular expression with one capturing group around the password, such as <password>(.*)</password>',
        },
      ],
    },
    {
      name: 'a window that is no duration is reported once',
      doc: oas({ middleware: { global: { rateLimit: { enabled: true, rate: 5, per: 'soon' } } } }),
      want: [
        {
          path: `${X}.middleware.global.rateLimit.per`,
          type: 'Invalid',
          message: '"soon" is not a duration of whole seconds: write one such as 1s, 30s, 1m or 1h30m',
        },
      ],
    },
    {
      name: "the conversion's problem, not the classic one, at a path both report",
      doc: oas({ server: { customDomain: { enabled: true, name: '' } } }),
      want: [
        {
          path: `${X}.server.customDomain.name`,
          type: 'Required',
          message:
            'the custom domain is enabled: set its name, such as api.example.com, or set enabled to false',
        },
      ],
    },
  ];
  for (const c of mapped) {
    test(c.name, () => {
      assert.deepEqual(checkOasDocument(c.doc).problems, c.want);
    });
  }

  test('what a gateway adds, at document paths or naming the classic field', () => {
    const more = (api: GatewayApiDefinition): FieldProblem[] => [
      { path: 'proxy.listen_path', type: 'Invalid', message: `taken: ${api.proxy.listen_path}` },
      { path: 'listen_port', type: 'Invalid', message: 'no port' },
    ];
    assert.deepEqual(checkOasDocument(oas(), more).problems, [
      { path: `${X}.server.listenPath.value`, type: 'Invalid', message: 'taken: /pets/' },
      { path: X, type: 'Invalid', message: 'listen_port: no port' },
    ]);
  });

  test('a token-protected API passes, as its classic form', () => {
    const got = checkOasDocument(
      secured('token', apiKey('header', 'Authorization'), { query: { enabled: true, name: 'key' } }),
    );
    assert.deepEqual(got.problems, []);
    assert.equal(got.api.use_standard_auth, true);
  });
});
