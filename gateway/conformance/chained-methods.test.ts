/**
 * Chained authentication over every pair of methods (auth token, basic, JWT, HMAC signing,
 * dynamic mutual TLS, custom) and a few longer chains, through a real HTTPS listener and real
 * clients presenting (or not) a certificate: in a chain, each method's missing or wrong
 * credential is answered as that method alone answers it (GATEWAY-BEHAVIOUR §2), never as a
 * wrong credential because another method's credential sits where it looks (every method but
 * custom reads `Authorization` by default). Each method alone is asked too, so the table shows
 * the answers it compares with. Fast path on and off.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { pluginDirWith } from '../testing/plugin-dir.ts';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { freePort } from '../../lib/testing/wait.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyed, startTlsGateway, type InProcessGateway } from '../testing/harness.ts';
import { tlsGet } from '../testing/tls-client.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const ORG = 'org1';
const JWT_SECRET = 'the chained JWT secret';
const HMAC_SECRET = 'the chained HMAC secret';

const METHODS = ['token', 'basic', 'jwt', 'hmac', 'mtls', 'custom'] as const;
type Method = (typeof METHODS)[number];

/** What each method adds to an API definition. */
const ENABLE: Record<Method, Record<string, unknown>> = {
  token: { use_standard_auth: true },
  basic: { use_basic_auth: true },
  jwt: {
    enable_jwt: true,
    jwt_signing_method: 'hmac',
    jwt_source: Buffer.from(JWT_SECRET).toString('base64'),
    jwt_default_policies: ['all'],
  },
  hmac: { enable_signature_checking: true },
  // Dynamic mutual TLS: the auth-token method, a certificate bound to a key replacing the token.
  mtls: { use_standard_auth: true, auth: { use_certificate: true } },
  custom: { custom_middleware: { driver: 'svc', auth_check: { name: 'check', path: 'custom.mjs' } } },
};

/** The name `base_identity_provided_by` gives each method. */
const IDENTITY: Record<Method, string> = {
  token: 'auth_token',
  basic: 'basic_auth_user',
  jwt: 'jwt_claim',
  hmac: 'hmac_key',
  mtls: 'auth_token',
  custom: 'custom_auth',
};

/** A custom authentication plugin: `X-Custom: good` passes. */
const PLUGIN = `
export function check(req) {
  const v = req.headers['x-custom'];
  if (v === undefined || v === '') return { refuse: { status: 401, message: 'Custom credential missing' } };
  if (v !== 'good') return { refuse: { status: 403, message: 'Custom credential wrong' } };
  return { keyId: 'custom-user', session: { apply_policies: ['all'] } };
}
`;

interface Answer {
  status: number;
  error?: string;
  /** `WWW-Authenticate` of the answer (undefined: not checked). */
  challenge?: string;
}

/** What each method alone answers for a missing and for a wrong credential. */
const ALONE: Record<Method, { missing: Answer; wrong: Answer }> = {
  token: {
    missing: { status: 401, error: 'Authorization field missing' },
    wrong: { status: 403, error: 'Access to this API has been disallowed' },
  },
  basic: {
    missing: { status: 401, error: 'Authorization field missing' },
    wrong: { status: 401, error: 'User not authorised' },
  },
  jwt: {
    missing: { status: 400, error: 'Authorization field missing' },
    wrong: { status: 403, error: 'Key not authorized' },
  },
  hmac: {
    missing: { status: 400, error: 'Authorization field missing, malformed or invalid' },
    wrong: { status: 400, error: 'Authorization field missing, malformed or invalid' },
  },
  // No certificate (or one bound to no key) and no token: the token is looked for, as alone.
  mtls: {
    missing: { status: 401, error: 'Authorization field missing' },
    wrong: { status: 401, error: 'Authorization field missing' },
  },
  custom: {
    missing: { status: 401, error: 'Custom credential missing' },
    wrong: { status: 403, error: 'Custom credential wrong' },
  },
};

/** The chains tested: every pair (dynamic mTLS is the token method, so not with it) and longer ones. */
const CHAINS: Method[][] = [
  ...METHODS.flatMap((a, i) =>
    METHODS.slice(i + 1)
      .filter((b) => !(a === 'token' && b === 'mtls'))
      .map((b) => [a, b]),
  ),
  ['basic', 'mtls', 'jwt'],
  ['jwt', 'basic', 'hmac', 'custom'],
];

const apiId = (chain: readonly Method[]): string => `c-${chain.join('-')}`;

/** The state of each credential in a request. */
type Cred = 'right' | 'wrong';

interface Client {
  cert: string;
  key: string;
}

/** The credentials that go in `Authorization` (HMAC's goes in `Signature` when one of them is there). */
const inAuthorization = (creds: Partial<Record<Method, Cred>>): Method[] =>
  (['token', 'basic', 'jwt'] as const).filter((m) => creds[m] !== undefined);

/** Whether one request can carry these credentials: at most one of them in `Authorization`. */
const carriable = (creds: Partial<Record<Method, Cred>>): boolean => inAuthorization(creds).length <= 1;

/** The credentials made once. */
interface Made {
  jwtRight: string;
  jwtWrong: string;
  bound: MadeCert;
  unbound: MadeCert;
}

/** One request's headers and client certificate. */
function compose(
  creds: Partial<Record<Method, Cred>>,
  made: Made,
): { headers: Record<string, string>; client?: Client } {
  const headers: Record<string, string> = {};
  let client: Client | undefined;
  const shared = inAuthorization(creds).length > 0;
  for (const m of METHODS) {
    const c = creds[m];
    if (c === undefined) continue;
    switch (m) {
      case 'token':
        headers.authorization = c === 'right' ? 'tok-key' : 'no-such-key';
        break;
      case 'basic':
        headers.authorization = `Basic ${Buffer.from(`alice:${c === 'right' ? 'pw-a' : 'nope'}`).toString('base64')}`;
        break;
      case 'jwt':
        headers.authorization = `Bearer ${c === 'right' ? made.jwtRight : made.jwtWrong}`;
        break;
      case 'hmac': {
        const date = new Date().toUTCString();
        const secret = c === 'right' ? HMAC_SECRET : 'another secret';
        const sig = createHmac('sha256', secret).update(`date: ${date}`).digest('base64');
        headers.date = date;
        // In Authorization unless another method's credential is there.
        headers[shared ? 'signature' : 'authorization'] =
          `Signature keyId="hmac-key",algorithm="hmac-sha256",headers="date",signature="${sig}"`;
        break;
      }
      case 'mtls': {
        const cert = c === 'right' ? made.bound : made.unbound;
        client = { cert: cert.cert, key: cert.key };
        break;
      }
      case 'custom':
        headers['x-custom'] = c === 'right' ? 'good' : 'bad';
        break;
    }
  }
  return { headers, ...(client === undefined ? {} : { client }) };
}

interface Row {
  name: string;
  path: string;
  creds: Partial<Record<Method, Cred>>;
  want: Answer;
}

const realm = (id: string): string => `Basic realm="${id} API"`;

/** The rows of one API running `chain` (one method: the method alone). */
function rowsOf(chain: readonly Method[]): Row[] {
  const id = apiId(chain);
  const path = `/${id}/x`;
  const rows: Row[] = [];
  const credsOf = (methods: readonly Method[]): Partial<Record<Method, Cred>> =>
    Object.fromEntries(methods.map((m) => [m, 'right']));
  const allRight = credsOf(chain);
  rows.push({ name: 'every credential right', path, creds: allRight, want: { status: 200 } });
  for (const m of chain) {
    const others = credsOf(chain.filter((o) => o !== m));
    const missing = { ...ALONE[m].missing, ...(m === 'basic' ? { challenge: realm(id) } : {}) };
    rows.push({ name: `${m} missing, the others right`, path, creds: others, want: missing });
    rows.push({
      name: `${m} wrong, the others right`,
      path,
      creds: { ...others, [m]: 'wrong' },
      want: ALONE[m].wrong,
    });
    // Only this method's credential, right: each other method answers its own missing one (the
    // first in chain order answers). With two methods, a row above already says it.
    if (chain.length > 2) {
      rows.push({
        name: `only ${m}, right`,
        path,
        creds: { [m]: 'right' },
        want: { status: -1 },
      });
    }
  }
  return rows;
}

/** The chain order of the gateway (routes/chain.ts): token (and dynamic mTLS), basic, JWT, HMAC, custom. */
const ORDER: readonly Method[] = ['token', 'mtls', 'basic', 'jwt', 'hmac', 'custom'];

for (const fast of [true, false])
  describe(`chained authentication, every pair of methods (fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: InProcessGateway;
    let echo: Echo;
    let port = 0;
    let made: Made;

    before(async () => {
      echo = await startEcho('echo');
      port = await freePort();
      const pluginDir = await pluginDirWith('svc-chained-', { 'custom.mjs': PLUGIN });
      gw = await startTlsGateway(['--plugin-dir', pluginDir, ...(fast ? [] : ['--fast-path=false'])]);
      const bound = await makeCert('bound-client');
      const unbound = await makeCert('unbound-client');
      const jwtFor = async (secret: string): Promise<string> =>
        new SignJWT({ sub: 'jwt-user' })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(new TextEncoder().encode(secret));
      made = { jwtRight: await jwtFor(JWT_SECRET), jwtWrong: await jwtFor('another secret'), bound, unbound };
      await gw.addCerts([bound.cert, unbound.cert], ORG);

      const chains = [...METHODS.map((m) => [m]), ...CHAINS];
      for (const chain of chains) {
        const def = keyed(apiId(chain), `/${apiId(chain)}/`, echo.url, {
          protocol: 'https',
          listen_port: port,
          org_id: ORG,
          ...chain.reduce<Record<string, unknown>>((def, m) => ({ ...def, ...ENABLE[m] }), {}),
          ...(chain.length > 1 ? { base_identity_provided_by: IDENTITY[chain[0] ?? 'token'] } : {}),
        });
        await gw.addApi(def);
      }
      const all = Object.fromEntries(
        chains.map((c) => [apiId(c), { api_id: apiId(c), versions: ['Default'] }]),
      );
      const policy = { id: 'all', name: 'all', org_id: ORG, state: 'active', access_rights: all };
      assert.equal((await gw.admin('POST', '/svc/policies', policy)).status, 200);
      const keys: [string, Record<string, unknown>][] = [
        ['tok-key', { org_id: ORG, access_rights: all }],
        ['alice', { org_id: ORG, basic_auth_data: { password: 'pw-a' }, access_rights: all }],
        ['hmac-key', { org_id: ORG, hmac_enabled: true, hmac_string: HMAC_SECRET, access_rights: all }],
      ];
      for (const [k, body] of keys) {
        const res = await gw.admin('POST', `/svc/keys/${k}`, body);
        assert.equal(res.status, 200, `${k}: ${res.text}`);
      }
      const boundKey = await gw.admin('POST', '/svc/keys/create', {
        org_id: ORG,
        certificate: `${ORG}${bound.fingerprint}`,
        access_rights: all,
      });
      assert.equal(boundKey.status, 200, boundKey.text);
      await gw.reload();
    });
    after(async () => {
      await stopAll(gw, echo);
    });

    const check = async (row: Row, chain: readonly Method[]): Promise<void> => {
      const req = compose(row.creds, made);
      let want = row.want;
      if (want.status === -1) {
        // Only one credential: the first other method in chain order answers its missing one.
        const first = ORDER.find((m) => chain.includes(m) && row.creds[m] === undefined);
        assert.ok(first !== undefined);
        want = {
          ...ALONE[first].missing,
          ...(first === 'basic' ? { challenge: realm(apiId(chain)) } : {}),
        };
      }
      const res = await tlsGet(port, row.path, req);
      assert.equal(res.status, want.status, res.text);
      if (want.error !== undefined) assert.equal(res.json?.error, want.error, res.text);
      if (want.challenge !== undefined) assert.equal(res.headers['www-authenticate'], want.challenge);
    };

    for (const m of METHODS) {
      describe(`${m} alone`, () => {
        for (const row of rowsOf([m])) test(row.name, () => check(row, [m]));
      });
    }
    for (const chain of CHAINS) {
      describe(chain.join(' + '), () => {
        for (const row of rowsOf(chain).filter((r) => carriable(r.creds))) {
          test(row.name, () => check(row, chain));
        }
      });
    }

    test('the report: basic and dynamic mTLS, basic the base identity, right password and no certificate', async () => {
      const res = await tlsGet(port, `/${apiId(['basic', 'mtls'])}/x`, {
        headers: { authorization: `Basic ${Buffer.from('alice:pw-a').toString('base64')}` },
      });
      assert.deepEqual([res.status, res.json?.error], [401, 'Authorization field missing']);
    });
  });
