import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import type { ClassicApiInput } from './read.ts';
import { authMethodsOf, authProblems, authWarnings, jwtSourceOf, type AuthMethod } from './auth.ts';
import type { FieldProblem } from './field-problem.ts';

/** A keyed API at /a/ with `extra` merged over it. */
const api = (extra: Record<string, unknown> = {}): ClassicApiInput => ({
  name: 'a',
  use_keyless: false,
  proxy: { listen_path: '/a/', target_url: 'http://u:1' },
  ...extra,
});

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const ecPem = ec.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const privatePem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const jwks = 'https://idp.example.com/.well-known/jwks.json';

const jwtApi = (method: string, source: string): ClassicApiInput =>
  api({ enable_jwt: true, jwt_signing_method: method, jwt_source: source, jwt_default_policies: ['p'] });

/** Checks one problem: its path, its type, and a part of its message. */
const at =
  (path: string, type: FieldProblem['type'], says: string): ((p: FieldProblem) => boolean) =>
  (p) =>
    p.path === path && p.type === type && p.message.includes(says);

interface Case {
  name: string;
  api: ClassicApiInput;
  /** One check per expected problem, in order; omitted: none. */
  each?: ((p: FieldProblem) => boolean)[];
}

const signed = (signature: Record<string, unknown>): Record<string, unknown> => ({
  auth: { validate_signature: true, signature },
});
const fullSignature = {
  algorithm: 'VendorSHA256',
  header: 'X-Signature',
  secret: 's3cret',
  allowed_clock_skew: 5,
};

const cases: Case[] = [
  // JWT sources, per family.
  {
    name: 'jwt: a signing method and a source are required',
    api: api({ enable_jwt: true }),
    each: [
      at('jwt_signing_method', 'Required', 'enable_jwt needs the signing method: set hmac, rsa or ecdsa'),
      at('jwt_source', 'Required', 'set a base64 secret, a PEM public key or a JWKS URL'),
    ],
  },
  { name: 'jwt: hmac with a base64 secret', api: jwtApi('hmac', b64('a shared secret')) },
  {
    name: 'jwt: hmac with a secret that is not base64',
    api: jwtApi('hmac', 'not base64!'),
    each: [at('jwt_source', 'Invalid', 'write the base64 of the HMAC secret')],
  },
  {
    name: 'jwt: hmac with a public key is refused (algorithm confusion)',
    api: jwtApi('hmac', b64(rsaPem)),
    each: [at('jwt_source', 'Invalid', 'a public key is never an HMAC secret')],
  },
  {
    name: 'jwt: hmac with a JWKS',
    api: jwtApi('hmac', jwks),
    each: [at('jwt_source', 'Invalid', 'never HMAC secrets')],
  },
  { name: 'jwt: rsa with a JWKS URL', api: jwtApi('rsa', jwks) },
  { name: 'jwt: rsa with a base64 JWKS URL', api: jwtApi('rsa', b64(jwks)) },
  {
    name: 'jwt: a JWKS URL with credentials',
    api: jwtApi('ecdsa', 'https://u:p@idp.example.com/jwks'),
    each: [at('jwt_source', 'Invalid', 'carries credentials')],
  },
  {
    name: 'jwt: a JWKS URL of another scheme',
    api: jwtApi('rsa', 'ftp://idp.example.com/jwks'),
    each: [at('jwt_source', 'Invalid', 'a JWKS is fetched over http or https, not ftp')],
  },
  { name: 'jwt: rsa with a base64 PEM public key', api: jwtApi('rsa', b64(rsaPem)) },
  { name: 'jwt: rsa with the PEM itself', api: jwtApi('rsa', rsaPem) },
  { name: 'jwt: ecdsa with an EC key', api: jwtApi('ecdsa', b64(ecPem)) },
  {
    name: 'jwt: rsa with an EC key',
    api: jwtApi('rsa', b64(ecPem)),
    each: [at('jwt_source', 'Invalid', 'this is a ec key, but jwt_signing_method is rsa')],
  },
  {
    name: 'jwt: ecdsa with an RSA key',
    api: jwtApi('ecdsa', b64(rsaPem)),
    each: [at('jwt_source', 'Invalid', 'set jwt_signing_method to rsa')],
  },
  {
    name: 'jwt: a private key is never stored',
    api: jwtApi('rsa', b64(privatePem)),
    each: [at('jwt_source', 'Invalid', 'this is a private key')],
  },
  {
    name: 'jwt: a PEM that does not parse',
    api: jwtApi('rsa', b64('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')),
    each: [at('jwt_source', 'Invalid', 'does not parse')],
  },
  {
    name: 'jwt: rsa with a secret',
    api: jwtApi('rsa', b64('secret')),
    each: [at('jwt_source', 'Invalid', 'jwt_signing_method rsa needs a public key')],
  },
  {
    name: 'jwt: the settings of JWT turned off are not checked',
    api: api({ enable_jwt: false, jwt_source: 'x' }),
  },
  // Chained authentication.
  {
    name: 'chained: the base identity is one of the methods',
    api: api({
      use_standard_auth: true,
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: jwks,
      base_identity_provided_by: 'jwt_claim',
    }),
  },
  {
    name: 'chained: the base identity names a method the API does not run',
    api: api({ use_basic_auth: true, base_identity_provided_by: 'auth_token' }),
    each: [
      at(
        'base_identity_provided_by',
        'Invalid',
        '"auth_token" names a method this API does not run (it runs basic_auth_user): turn use_standard_auth on, or name one of those',
      ),
    ],
  },
  {
    name: 'chained: hmac_key needs enable_signature_checking',
    api: api({ base_identity_provided_by: 'hmac_key' }),
    each: [at('base_identity_provided_by', 'Invalid', 'turn enable_signature_checking on')],
  },
  {
    name: 'chained: oauth_key needs use_oauth2',
    api: api({ base_identity_provided_by: 'oauth_key' }),
    each: [at('base_identity_provided_by', 'Invalid', 'turn use_oauth2 on')],
  },
  {
    name: 'OAuth 2.0: the password and refresh_token grants are refused by name',
    api: api({
      use_oauth2: true,
      oauth_meta: { allowed_access_types: ['client_credentials', 'password', 'refresh_token'] },
    }),
    each: [
      at('oauth_meta.allowed_access_types[1]', 'NotSupported', 'no refresh tokens'),
      at('oauth_meta.allowed_access_types[2]', 'NotSupported', 'no refresh tokens'),
    ],
  },
  {
    name: 'OAuth 2.0: the authorize flow (code and token) with its login page and the authorization_code grant',
    api: api({
      use_oauth2: true,
      oauth_meta: {
        allowed_access_types: ['authorization_code', 'client_credentials'],
        allowed_authorize_types: ['code', 'token'],
        auth_login_redirect: 'https://login.example.com/oauth',
      },
    }),
    each: [],
  },
  {
    name: 'OAuth 2.0: response types need the login page, as an http(s) URL',
    api: api({
      use_oauth2: true,
      oauth_meta: { allowed_access_types: ['client_credentials'], allowed_authorize_types: ['token'] },
    }),
    each: [at('oauth_meta.auth_login_redirect', 'Required', 'set it to an http(s) URL')],
  },
  {
    name: 'OAuth 2.0: a login page that is no http(s) URL',
    api: api({
      use_oauth2: true,
      oauth_meta: {
        allowed_access_types: ['client_credentials'],
        allowed_authorize_types: ['code'],
        auth_login_redirect: 'javascript:alert(1)',
      },
    }),
    each: [at('oauth_meta.auth_login_redirect', 'Invalid', 'set it to an http(s) URL')],
  },
  {
    name: 'OAuth 2.0: an unknown response type; authorization_code without the response type code',
    api: api({
      use_oauth2: true,
      oauth_meta: {
        allowed_access_types: ['authorization_code'],
        allowed_authorize_types: ['id_token'],
        auth_login_redirect: 'http://localhost',
      },
    }),
    each: [
      at('oauth_meta.allowed_authorize_types[0]', 'NotSupported', 'write code or token'),
      at('oauth_meta.allowed_access_types', 'Invalid', 'add code to oauth_meta.allowed_authorize_types'),
    ],
  },
  {
    name: 'OAuth 2.0: use_oauth2 needs a way to get tokens',
    api: api({ use_oauth2: true }),
    each: [at('oauth_meta.allowed_access_types', 'Required', 'set oauth_meta.allowed_access_types')],
  },
  // Keyless excludes every method.
  {
    name: 'keyless: with HMAC signing and a custom authentication plugin',
    api: api({
      use_keyless: true,
      enable_signature_checking: true,
      custom_middleware: { driver: 'svc', auth_check: { name: 'check', path: 'auth.ts' } },
    }),
    each: [
      at('use_keyless', 'Forbidden', 'but enable_signature_checking is true'),
      at('custom_middleware.auth_check', 'Forbidden', 'remove auth_check'),
    ],
  },
  // Signature validation on tokens.
  { name: 'signature: complete', api: api(signed(fullSignature)) },
  {
    name: 'signature: in a query parameter',
    api: api(signed({ ...fullSignature, header: '', use_param: true, param_name: 'sig' })),
  },
  {
    name: 'signature: in auth_configs.authToken',
    api: api({ auth_configs: { authToken: { validate_signature: true, signature: fullSignature } } }),
  },
  {
    name: 'signature: algorithm, secret and where the signature is are required',
    api: api(signed({ algorithm: '', secret: '' })),
    each: [
      at('auth.signature.algorithm', 'Required', 'VendorSHA256 or VendorMD5'),
      at('auth.signature.secret', 'Required', 'set the secret'),
      at('auth.signature.header', 'Required', 'set the header that carries the signature'),
    ],
  },
  {
    name: 'signature: another algorithm',
    api: api(signed({ ...fullSignature, algorithm: 'VendorSHA1' })),
    each: [at('auth.signature.algorithm', 'NotSupported', '"VendorSHA1": use VendorSHA256 or VendorMD5')],
  },
  {
    name: 'signature: secret references are refused',
    api: api(signed({ ...fullSignature, secret: '$secret_env.SIG' })),
    each: [at('auth.signature.secret', 'NotSupported', 'write the secret itself')],
  },
  {
    name: 'signature: too wide a clock skew',
    api: api(signed({ ...fullSignature, allowed_clock_skew: 3600 })),
    each: [at('auth.signature.allowed_clock_skew', 'Invalid', 'set at most 300')],
  },
  {
    name: 'signature: on auth while tokens are read with auth_configs.authToken',
    api: api({ ...signed(fullSignature), auth_configs: { authToken: { auth_header_name: 'X-Key' } } }),
    each: [at('auth.validate_signature', 'Invalid', 'read with auth_configs.authToken: move')],
  },
  {
    name: 'signature: on another method',
    api: api({
      use_basic_auth: true,
      auth_configs: { basic: { validate_signature: true, signature: fullSignature } },
    }),
    each: [at('auth_configs.basic.validate_signature', 'Invalid', 'which are read with auth: move')],
  },
  {
    name: 'signature: on an API without tokens',
    api: api({ use_basic_auth: true, ...signed(fullSignature) }),
    each: [at('auth.validate_signature', 'Invalid', 'turn use_standard_auth on')],
  },
];

describe('authProblems', () => {
  for (const c of cases) {
    test(c.name, () => {
      const got = authProblems(c.api);
      const each = c.each ?? [];
      assert.equal(got.length, each.length, JSON.stringify(got, null, 2));
      each.forEach((ok, i) => {
        const p = got[i];
        assert.ok(p !== undefined && ok(p), JSON.stringify(p));
      });
    });
  }
});

describe('authMethodsOf', () => {
  const rows: { name: string; api: ClassicApiInput; want: AuthMethod[] }[] = [
    { name: 'keyless', api: api({ use_keyless: true, use_standard_auth: true }), want: [] },
    { name: 'tokens by default', api: api(), want: ['auth_token'] },
    { name: 'OAuth 2.0 alone: no auth token', api: api({ use_oauth2: true }), want: ['oauth_key'] },
    { name: 'basic alone', api: api({ use_basic_auth: true }), want: ['basic_auth_user'] },
    {
      name: 'tokens and basic',
      api: api({ use_standard_auth: true, use_basic_auth: true }),
      want: ['auth_token', 'basic_auth_user'],
    },
    { name: 'JWT alone', api: api({ enable_jwt: true }), want: ['jwt_claim'] },
    { name: 'HMAC alone', api: api({ enable_signature_checking: true }), want: ['hmac_key'] },
    {
      name: 'a custom authentication plugin alone',
      api: api({ custom_middleware: { auth_check: { name: 'f', path: 'f.ts' } } }),
      want: ['custom_auth'],
    },
    {
      name: 'an empty auth_check (exported definitions) is no plugin',
      api: api({ custom_middleware: { auth_check: { name: '', path: '' }, driver: '' } }),
      want: ['auth_token'],
    },
    {
      name: 'static mutual TLS alone still needs the token',
      api: api({ use_mutual_tls_auth: true }),
      want: ['auth_token'],
    },
    {
      name: 'all of them, in chain order',
      api: api({
        custom_middleware: { auth_check: { name: 'f', path: 'f.ts' } },
        enable_signature_checking: true,
        enable_jwt: true,
        use_basic_auth: true,
        use_standard_auth: true,
      }),
      want: ['auth_token', 'basic_auth_user', 'jwt_claim', 'hmac_key', 'custom_auth'],
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      assert.deepEqual(authMethodsOf(r.api), r.want);
    });
  }
});

describe('authWarnings', () => {
  const rows: { name: string; api: ClassicApiInput; want: string[] }[] = [
    { name: 'one method', api: api(), want: [] },
    {
      name: 'two methods without a base identity',
      api: api({ use_standard_auth: true, use_basic_auth: true }),
      want: [
        'base_identity_provided_by: auth_token, basic_auth_user all run and must all pass; without base_identity_provided_by the session of the last one (basic_auth_user) is used: name the method whose key decides access and limits',
      ],
    },
    {
      name: 'JWT without a policy source',
      api: api({ enable_jwt: true, jwt_signing_method: 'rsa', jwt_source: jwks }),
      want: [
        'jwt_default_policies: no policy source: every token is refused (403 key not authorized: no matching policy); set jwt_policy_field_name, jwt_default_policies or jwt_scope_to_policy_mapping',
      ],
    },
    {
      name: 'HMAC without a clock skew',
      api: api({ enable_signature_checking: true }),
      want: [
        'hmac_allowed_clock_skew: any Date is accepted, so a signed request can be replayed at any time: set the milliseconds a Date may differ from the gateway clock, such as 300000',
      ],
    },
    {
      name: 'HMAC with a clock skew',
      api: api({ enable_signature_checking: true, hmac_allowed_clock_skew: 1000 }),
      want: [],
    },
    {
      name: 'a signature that is not validated',
      api: api({ auth: { signature: { secret: 's' } } }),
      want: [
        'auth.validate_signature: signature is set but validate_signature is not true: signatures are not checked',
      ],
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      assert.deepEqual(
        authWarnings(r.api).map((w) => `${w.path}: ${w.message}`),
        r.want,
      );
    });
  }
});

test('jwtSourceOf returns what the gateway verifies with', () => {
  assert.deepEqual(jwtSourceOf(jwks, 'rsa'), { kind: 'jwks', url: jwks });
  const secret = jwtSourceOf(b64('k'), 'hmac');
  assert.ok(typeof secret !== 'string' && secret.kind === 'secret');
  assert.deepEqual(Buffer.from(secret.secret).toString(), 'k');
  const key = jwtSourceOf(b64(ecPem), 'ecdsa');
  assert.ok(typeof key !== 'string' && key.kind === 'public-key' && key.key.asymmetricKeyType === 'ec');
});
