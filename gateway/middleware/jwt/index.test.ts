/**
 * JWT authentication as tables (GATEWAY-BEHAVIOUR §2, §3): keys of each family (HMAC, RSA with
 * PKCS#1 v1.5 and PSS, ECDSA, a certificate), a JWKS served by a node:http server of the test and
 * rotated during it, `alg: none` and algorithm confusion, `exp`/`nbf`/`iat` with skews, the policy
 * claim, default policies and scopes, and the session of an identity surviving across its
 * tokens. The gateway runs on an injected clock; each table runs against the files store and the
 * Redis store, with the fast path on and off.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { selfSignedCert } from '../../testing/certs.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, type InProcessGateway } from '../../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../../testing/tables.ts';
import { listenLocal } from '../../testing/servers.ts';
import { rights } from '../../testing/limits.ts';

const T0 = Math.floor(Date.now() / 1000);
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const b64url = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

const HS_SECRET = 'a shared secret of the HMAC APIs';
const hs = new TextEncoder().encode(HS_SECRET);
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwksRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rotA = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rotB = generateKeyPairSync('rsa', { modulusLength: 2048 });
const cert = selfSignedCert();
const certKey = createPrivateKey(cert.key);
const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const ecPem = ec.publicKey.export({ type: 'spki', format: 'pem' }).toString();

/** A signed token: `claims` (with `sub: alice` unless given) under `alg`. */
function sign(
  alg: string,
  key: KeyObject | Uint8Array,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ sub: 'alice', ...claims }).setProtectedHeader({ ...header, alg }).sign(key);
}

const tokens = {
  hs256: await sign('HS256', hs),
  hs384: await sign('HS384', hs),
  hs512: await sign('HS512', hs),
  wrongSecret: await sign('HS256', new TextEncoder().encode('another secret')),
  none: `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: 'alice' })}.`,
  rs256: await sign('RS256', rsa.privateKey),
  rs384: await sign('RS384', rsa.privateKey),
  rs512: await sign('RS512', rsa.privateKey),
  ps256: await sign('PS256', rsa.privateKey),
  ps384: await sign('PS384', rsa.privateKey),
  ps512: await sign('PS512', rsa.privateKey),
  // Algorithm confusion: HMAC keyed with the public key the API verifies RSA tokens with.
  hsWithPublicKey: await sign('HS256', new TextEncoder().encode(rsaPem)),
  es256: await sign('ES256', ec.privateKey),
  es256Cert: await sign('ES256', certKey),
  jwksRs: await sign('RS256', jwksRsa.privateKey, {}, { kid: 'rsa-1' }),
  jwksPs: await sign('PS512', jwksRsa.privateKey, {}, { kid: 'rsa-1' }),
  jwksNoKid: await sign('RS256', jwksRsa.privateKey),
  jwksUnknownKid: await sign('RS256', jwksRsa.privateKey, {}, { kid: 'nope' }),
  expired: await sign('HS256', hs, { exp: T0 - 10 }),
  notYet: await sign('HS256', hs, { nbf: T0 + 20 }),
  issuedAhead: await sign('HS256', hs, { iat: T0 + 20 }),
  inTheFuture: await sign('HS256', hs, { nbf: T0 + 60 }),
  noSub: await sign('HS256', hs, { sub: undefined }),
  email: await sign('HS256', hs, { sub: undefined, email: 'alice@example.com' }),
  polRsOnly: await sign('RS256', rsa.privateKey, { pol: 'jwt-rs-only' }),
  polUnknown: await sign('RS256', rsa.privateKey, { pol: 'no-such-policy' }),
  polOtherOrg: await sign('RS256', rsa.privateKey, { pol: 'jwt-other-org' }),
  polDraft: await sign('RS256', rsa.privateKey, { pol: 'jwt-draft' }),
  polScopeOnly: await sign('RS256', rsa.privateKey, { pol: 'scope-read' }),
  scopeRead: await sign('HS256', hs, { scope: 'profile read' }),
  scopeUnmapped: await sign('HS256', hs, { scope: 'admin' }),
};
type TokenName = keyof typeof tokens;

/** The JWKS server: the keys of each path, and how often each path was fetched. */
const jwksKeys = new Map<string, JWK[]>();
const jwksFetches = new Map<string, number>();
let jwksServer: Server;
let jwksBase: string;
let echo: Echo;

async function publicJwk(key: KeyObject, kid: string): Promise<JWK> {
  return { ...(await exportJWK(key)), kid, use: 'sig' };
}

before(async () => {
  echo = await startEcho('echo');
  jwksKeys.set('/jwks/static', [
    await publicJwk(jwksRsa.publicKey, 'rsa-1'),
    await publicJwk(ec.publicKey, 'ec-1'),
  ]);
  jwksServer = createServer((req, res) => {
    const path = req.url ?? '';
    jwksFetches.set(path, (jwksFetches.get(path) ?? 0) + 1);
    const keys = jwksKeys.get(path);
    if (keys === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  jwksBase = await listenLocal(jwksServer);
});
after(async () => {
  await echo.close();
  await new Promise((resolve) => jwksServer.close(resolve));
});

const JWT_APIS = [
  'jwt-hs',
  'jwt-rs',
  'jwt-es',
  'jwt-cert',
  'jwt-jwks',
  'jwt-skew',
  'jwt-id',
  'jwt-hdr',
  'jwt-rot',
];

/** The APIs, policies of one setup (`index` names its rotating JWKS). */
async function provision(gw: InProcessGateway, index: number): Promise<void> {
  const policies: Record<string, unknown>[] = [
    { id: 'jwt-all', name: 'all', state: 'active', access_rights: rights(...JWT_APIS, 'jwt-scope') },
    { id: 'jwt-rs-only', name: 'rs', state: 'active', access_rights: rights('jwt-rs') },
    { id: 'jwt-other-org', name: 'other', org_id: 'other', state: 'active', access_rights: rights('jwt-rs') },
    { id: 'jwt-draft', name: 'draft', state: 'active', access_rights: rights('jwt-rs') },
    { id: 'jwt-chg', name: 'changes', state: 'active', access_rights: rights('jwt-rs') },
    {
      id: 'scope-read',
      name: 'read',
      state: 'active',
      access_rights: {
        'jwt-scope': {
          api_id: 'jwt-scope',
          versions: ['Default'],
          allowed_urls: [{ url: '/jwt-scope/', methods: ['GET'] }],
        },
      },
    },
    {
      id: 'jwt-quota',
      name: 'quota',
      state: 'active',
      quota_max: 2,
      quota_renewal_rate: 3600,
      access_rights: rights('jwt-quota'),
    },
  ];
  for (const p of policies) {
    const res = await gw.admin('POST', '/svc/policies', p);
    assert.equal(res.status, 200, res.text);
  }
  const draft = await gw.admin('PUT', '/svc/policies/jwt-draft', { ...policies[3], state: 'draft' });
  assert.equal(draft.status, 200, draft.text);
  const hmac = { enable_jwt: true, jwt_signing_method: 'hmac', jwt_source: b64(HS_SECRET) };
  const defaults = { jwt_default_policies: ['jwt-all'] };
  const apis = [
    keyed('jwt-hs', '/jwt-hs/', echo.url, { ...hmac, ...defaults, strip_auth_data: true }),
    keyed('jwt-rs', '/jwt-rs/', echo.url, {
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: b64(rsaPem),
      jwt_policy_field_name: 'pol',
      org_id: 'acme',
      ...defaults,
    }),
    keyed('jwt-es', '/jwt-es/', echo.url, {
      enable_jwt: true,
      jwt_signing_method: 'ecdsa',
      jwt_source: ecPem,
      ...defaults,
    }),
    keyed('jwt-cert', '/jwt-cert/', echo.url, {
      enable_jwt: true,
      jwt_signing_method: 'ecdsa',
      jwt_source: b64(cert.cert),
      ...defaults,
    }),
    keyed('jwt-jwks', '/jwt-jwks/', echo.url, {
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: `${jwksBase}/jwks/static`,
      ...defaults,
    }),
    keyed('jwt-rot', '/jwt-rot/', echo.url, {
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: `${jwksBase}/jwks/rot-${String(index)}`,
      ...defaults,
    }),
    keyed('jwt-skew', '/jwt-skew/', echo.url, {
      ...hmac,
      ...defaults,
      jwt_expires_at_validation_skew: 30,
      jwt_not_before_validation_skew: 30,
      jwt_issued_at_validation_skew: 30,
    }),
    keyed('jwt-id', '/jwt-id/', echo.url, { ...hmac, ...defaults, jwt_identity_base_field: 'email' }),
    keyed('jwt-hdr', '/jwt-hdr/', echo.url, {
      ...hmac,
      ...defaults,
      auth_configs: { jwt: { auth_header_name: 'X-Jwt', use_cookie: true, cookie_name: 'jwt' } },
    }),
    keyed('jwt-scope', '/jwt-scope/', echo.url, {
      ...hmac,
      ...defaults,
      jwt_scope_to_policy_mapping: { read: 'scope-read' },
    }),
    keyed('jwt-quota', '/jwt-quota/', echo.url, { ...hmac, jwt_default_policies: ['jwt-quota'] }),
  ];
  for (const a of apis) await gw.addApi(a);
  await gw.reload();
}

interface Case extends Expected {
  name: string;
  method?: string;
  path: string;
  token?: TokenName;
  /** Where the token goes (default `Authorization: Bearer <token>`). */
  headers?: (token: string) => Record<string, string>;
}

const refused = (name: string, path: string, token: TokenName, status: number, error: string): Case => ({
  name,
  path,
  token,
  status,
  error,
});

const cases: Case[] = [
  { name: 'no token', path: '/jwt-hs/x', status: 400, error: 'Authorization field missing' },
  {
    name: 'HS256',
    path: '/jwt-hs/x',
    token: 'hs256',
    status: 200,
    upstreamHeaders: { authorization: undefined },
  },
  { name: 'HS384', path: '/jwt-hs/x', token: 'hs384', status: 200 },
  { name: 'HS512', path: '/jwt-hs/x', token: 'hs512', status: 200 },
  {
    name: 'without Bearer',
    path: '/jwt-hs/x',
    token: 'hs256',
    headers: (t) => ({ authorization: t }),
    status: 200,
  },
  refused('another secret', '/jwt-hs/x', 'wrongSecret', 403, 'Key not authorized'),
  refused('alg none', '/jwt-hs/x', 'none', 403, 'Key not authorized'),
  refused('an RSA token on an HMAC API', '/jwt-hs/x', 'rs256', 403, 'Key not authorized'),
  ...(['rs256', 'rs384', 'rs512', 'ps256', 'ps384', 'ps512'] as const).map((t): Case => ({
    name: t.toUpperCase(),
    path: '/jwt-rs/x',
    token: t,
    status: 200,
  })),
  refused(
    'HMAC keyed with the public key (confusion)',
    '/jwt-rs/x',
    'hsWithPublicKey',
    403,
    'Key not authorized',
  ),
  refused('alg none on an RSA API', '/jwt-rs/x', 'none', 403, 'Key not authorized'),
  refused('an ECDSA token on an RSA API', '/jwt-rs/x', 'es256', 403, 'Key not authorized'),
  { name: 'ES256', path: '/jwt-es/x', token: 'es256', status: 200 },
  refused('an RSA token on an ECDSA API', '/jwt-es/x', 'rs256', 403, 'Key not authorized'),
  { name: 'ES256 with a certificate as the key', path: '/jwt-cert/x', token: 'es256Cert', status: 200 },
  { name: 'JWKS: RS256 with its kid', path: '/jwt-jwks/x', token: 'jwksRs', status: 200 },
  { name: 'JWKS: PS512 with its kid', path: '/jwt-jwks/x', token: 'jwksPs', status: 200 },
  { name: 'JWKS: no kid, one RSA key', path: '/jwt-jwks/x', token: 'jwksNoKid', status: 200 },
  refused('JWKS: an unknown kid', '/jwt-jwks/x', 'jwksUnknownKid', 403, 'Key not authorized'),
  refused('JWKS: an EC key of the set on an RSA API', '/jwt-jwks/x', 'es256', 403, 'Key not authorized'),
  refused('JWKS: alg none', '/jwt-jwks/x', 'none', 403, 'Key not authorized'),
  refused('expired', '/jwt-hs/x', 'expired', 401, 'Key not authorized: token has expired'),
  { name: 'expired within the skew', path: '/jwt-skew/x', token: 'expired', status: 200 },
  refused('not valid yet', '/jwt-hs/x', 'notYet', 401, 'Key not authorized: token is not valid yet'),
  { name: 'not valid yet, within the skew', path: '/jwt-skew/x', token: 'notYet', status: 200 },
  refused(
    'not valid yet, beyond the skew',
    '/jwt-skew/x',
    'inTheFuture',
    401,
    'Key not authorized: token is not valid yet',
  ),
  refused('issued ahead', '/jwt-hs/x', 'issuedAhead', 401, 'Key not authorized: token used before issued'),
  { name: 'issued ahead, within the skew', path: '/jwt-skew/x', token: 'issuedAhead', status: 200 },
  refused(
    'no identity',
    '/jwt-hs/x',
    'noSub',
    403,
    'Key not authorized: no suitable claims for user ID were found',
  ),
  { name: 'identity from another claim', path: '/jwt-id/x', token: 'email', status: 200 },
  { name: 'the policy claim', path: '/jwt-rs/x', token: 'polRsOnly', status: 200 },
  refused(
    'a policy claim naming no policy',
    '/jwt-rs/x',
    'polUnknown',
    403,
    'key not authorized: no matching policy',
  ),
  refused(
    "a policy of another organisation than the API's",
    '/jwt-rs/x',
    'polOtherOrg',
    403,
    'key not authorized: no matching policy',
  ),
  refused('a draft policy', '/jwt-rs/x', 'polDraft', 403, 'Key is inactive, please renew'),
  refused(
    'a policy that does not grant the API',
    '/jwt-rs/x',
    'polScopeOnly',
    403,
    'Access to this API has been disallowed',
  ),
  { name: 'default policies without a policy claim', path: '/jwt-rs/x', token: 'rs256', status: 200 },
  { name: 'scopes: a mapped scope', path: '/jwt-scope/', token: 'scopeRead', status: 200 },
  {
    name: "scopes: the scope's policy decides the methods",
    method: 'POST',
    path: '/jwt-scope/',
    token: 'scopeRead',
    status: 403,
    error: 'Access to this resource has been disallowed',
  },
  refused(
    'scopes: no mapped scope',
    '/jwt-scope/',
    'scopeUnmapped',
    403,
    'key not authorized: no matching policy',
  ),
  { name: 'scopes: no scope, the default policies', path: '/jwt-scope/', token: 'hs256', status: 200 },
  {
    name: 'another header',
    path: '/jwt-hdr/x',
    token: 'hs256',
    headers: (t) => ({ 'x-jwt': t }),
    status: 200,
  },
  {
    name: 'a cookie',
    path: '/jwt-hdr/x',
    token: 'hs256',
    headers: (t) => ({ cookie: `a=b; jwt=${t}` }),
    status: 200,
  },
  {
    name: 'not in Authorization when another header is set',
    path: '/jwt-hdr/x',
    token: 'hs256',
    status: 400,
    error: 'Authorization field missing',
  },
];

/** One request with `token` (as `Authorization: Bearer`), its status and error. */
async function call(
  gw: InProcessGateway,
  path: string,
  token: string,
): Promise<{ status: number; error?: string }> {
  const res = await gw.request({ path, headers: { authorization: `Bearer ${token}` } });
  const error = (res.json as { error?: string } | undefined)?.error;
  return { status: res.status, ...(error === undefined ? {} : { error }) };
}

const clocks = [0, 1, 2, 3].map(() => ({ ms: T0 * 1000 }));

describeEachSetup(
  'jwt',
  (index) => ({ now: () => clocks[index]?.ms ?? Date.now() }),
  ({ gw, index }) => {
    const clock = clocks[index] ?? { ms: 0 };
    before(async () => {
      await provision(gw(), index);
    });

    for (const c of cases) {
      test(c.name, async () => {
        const token = c.token === undefined ? undefined : tokens[c.token];
        const headers =
          token === undefined ? {} : (c.headers?.(token) ?? { authorization: `Bearer ${token}` });
        assertAnswer(await gw().request({ method: c.method ?? 'GET', path: c.path, headers }), c);
      });
    }

    test('the session belongs to the identity: a quota of 2 counts three tokens of one subject', async () => {
      const token = (sub: string): Promise<string> => sign('HS256', hs, { sub, jti: randomUUID() });
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await call(gw(), '/jwt-quota/x', await token('q-alice'))).status);
      assert.deepEqual(statuses, [200, 200, 403]);
      assert.deepEqual(await call(gw(), '/jwt-quota/x', await token('q-alice')), {
        status: 403,
        error: 'Quota exceeded',
      });
      assert.equal((await call(gw(), '/jwt-quota/x', await token('q-bob'))).status, 200, 'another subject');
    });

    test('a policy change takes effect on the next token', async () => {
      const token = await sign('RS256', rsa.privateKey, { sub: 'chg', pol: 'jwt-chg' });
      assert.equal((await call(gw(), '/jwt-rs/x', token)).status, 200);
      const res = await gw().admin('PUT', '/svc/policies/jwt-chg', {
        id: 'jwt-chg',
        name: 'changes',
        state: 'active',
        access_rights: rights('jwt-hs'),
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(await call(gw(), '/jwt-rs/x', token), {
        status: 403,
        error: 'Access to this API has been disallowed',
      });
    });

    test('a token seen before is still refused once it expires, and a forged twin is refused', async () => {
      const exp = Math.floor(clock.ms / 1000) + 60;
      const token = await sign('RS256', rsa.privateKey, { sub: 'remembered', exp });
      assert.equal((await call(gw(), '/jwt-rs/x', token)).status, 200);
      assert.equal((await call(gw(), '/jwt-rs/x', token)).status, 200, 'again: remembered');
      // The same header and claims with another signature: not the remembered token.
      const [h, p] = token.split('.');
      const forged = `${h ?? ''}.${p ?? ''}.${Buffer.from('not a signature').toString('base64url')}`;
      assert.equal((await call(gw(), '/jwt-rs/x', forged)).status, 403);
      clock.ms += 61_000 + 30_000; // past exp and any skew the table's APIs allow
      const late = await call(gw(), '/jwt-rs/x', token);
      assert.equal(late.status, 401, JSON.stringify(late));
    });

    test('a JWKS is cached, refetched for a new kid at most every 10 s, and when it is old', async () => {
      const path = `/jwks/rot-${String(index)}`;
      const fetches = (): number => jwksFetches.get(path) ?? 0;
      jwksKeys.set(path, [await publicJwk(rotA.publicKey, 'a')]);
      const a = await sign('RS256', rotA.privateKey, {}, { kid: 'a' });
      const b = await sign('RS256', rotB.privateKey, {}, { kid: 'b' });
      const unknown = await sign('RS256', rotB.privateKey, {}, { kid: 'c' });

      assert.equal((await call(gw(), '/jwt-rot/x', a)).status, 200);
      assert.equal((await call(gw(), '/jwt-rot/x', a)).status, 200);
      assert.equal(fetches(), 1, 'fetched once, then cached');

      // Rotation: the new kid works with the next token, through one refetch.
      jwksKeys.set(path, [await publicJwk(rotA.publicKey, 'a'), await publicJwk(rotB.publicKey, 'b')]);
      clock.ms += 10_000;
      assert.equal((await call(gw(), '/jwt-rot/x', b)).status, 200);
      assert.equal(fetches(), 2);

      // Unknown kids don't make it fetch again within 10 s.
      for (let i = 0; i < 3; i++) assert.equal((await call(gw(), '/jwt-rot/x', unknown)).status, 403);
      assert.equal(fetches(), 2, 'rate-limited');
      clock.ms += 10_000;
      assert.equal((await call(gw(), '/jwt-rot/x', unknown)).status, 403);
      assert.equal((await call(gw(), '/jwt-rot/x', unknown)).status, 403);
      assert.equal(fetches(), 3, 'one refetch per 10 s');

      // A set older than jwks_cache_ttl_s (240 s) is fetched again; a removed key stops working.
      jwksKeys.set(path, [await publicJwk(rotB.publicKey, 'b')]);
      assert.equal((await call(gw(), '/jwt-rot/x', a)).status, 200, 'still cached');
      clock.ms += 240_000;
      assert.equal((await call(gw(), '/jwt-rot/x', a)).status, 403);
      assert.equal((await call(gw(), '/jwt-rot/x', b)).status, 200);
      assert.equal(fetches(), 4);
    });
  },
);
