/**
 * Chained authentication (GATEWAY-BEHAVIOUR §2): with several methods on, every one must pass,
 * and `base_identity_provided_by` names the one whose session decides access rights and limits.
 * Token plus basic authentication with basic as the base identity, in both orders of the
 * credentials' locations (the token in a header of its own and basic in `Authorization`, then
 * the other way round); the token's key grants everything and has no quota, so what the
 * responses show is the basic user's session. Each table runs against the files store and the
 * Redis store, with the fast path on and off.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../testing/echo.ts';
import { keyed, type InProcessGateway } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../testing/tables.ts';
import { basicAuth } from '../testing/client.ts';
import { rights } from '../testing/limits.ts';

const echo = useEcho();

const APIS = ['chain-a', 'chain-b', 'chain-tok'];

async function provision(gw: InProcessGateway): Promise<void> {
  const both = { use_standard_auth: true, use_basic_auth: true, org_id: 'acme' };
  await gw.addApi(
    keyed('chain-a', '/chain-a/', echo().url, {
      ...both,
      base_identity_provided_by: 'basic_auth_user',
      auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } },
    }),
  );
  await gw.addApi(
    keyed('chain-b', '/chain-b/', echo().url, {
      ...both,
      base_identity_provided_by: 'basic_auth_user',
      auth_configs: { basic: { auth_header_name: 'X-Basic' } },
    }),
  );
  await gw.addApi(
    keyed('chain-tok', '/chain-tok/', echo().url, {
      ...both,
      base_identity_provided_by: 'auth_token',
      auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } },
    }),
  );
  const keys: [string, Record<string, unknown>][] = [
    ['tok-all', { org_id: 'acme', access_rights: rights(...APIS) }],
    ['tok-none', { org_id: 'acme' }],
    ['alice', { org_id: 'acme', basic_auth_data: { password: 'pw-a' }, access_rights: rights(...APIS) }],
    ['nobody', { org_id: 'acme', basic_auth_data: { password: 'pw-n' } }],
    // One user with a quota of 1 per API, so each API's test starts afresh.
    ...['chain-a', 'chain-b'].map((api): [string, Record<string, unknown>] => [
      `limited-${api}`,
      {
        org_id: 'acme',
        basic_auth_data: { password: 'pw-l' },
        quota_max: 1,
        quota_renewal_rate: 3600,
        access_rights: rights(...APIS),
      },
    ]),
  ];
  for (const [k, body] of keys) {
    const res = await gw.admin('POST', `/svc/keys/${k}`, body);
    assert.equal(res.status, 200, `${k}: ${res.text}`);
  }
  await gw.reload();
}

/** Where each API takes the token and the basic credentials. */
const creds = {
  'chain-a': (token?: string, user?: string): Record<string, string> => ({
    ...(token === undefined ? {} : { 'x-api-key': token }),
    ...(user === undefined ? {} : { authorization: user }),
  }),
  'chain-b': (token?: string, user?: string): Record<string, string> => ({
    ...(token === undefined ? {} : { authorization: token }),
    ...(user === undefined ? {} : { 'x-basic': user }),
  }),
};

interface Case extends Expected {
  name: string;
  token?: string;
  user?: string;
}

const cases: Case[] = [
  {
    name: 'both pass, the user may call the API',
    token: 'tok-all',
    user: basicAuth('alice', 'pw-a'),
    status: 200,
  },
  {
    name: 'the base identity decides access: a user without rights, whatever the token grants',
    token: 'tok-all',
    user: basicAuth('nobody', 'pw-n'),
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: "the token only has to exist: its key's rights do not count",
    token: 'tok-none',
    user: basicAuth('alice', 'pw-a'),
    status: 200,
  },
  { name: 'no token', user: basicAuth('alice', 'pw-a'), status: 401, error: 'Authorization field missing' },
  {
    name: 'an unknown token',
    token: 'nope',
    user: basicAuth('alice', 'pw-a'),
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  { name: 'no basic credentials', token: 'tok-all', status: 401, error: 'Authorization field missing' },
  {
    name: 'a wrong password',
    token: 'tok-all',
    user: basicAuth('alice', 'no'),
    status: 401,
    error: 'User not authorised',
  },
];

describeEachSetup(
  'chained',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });

    for (const api of ['chain-a', 'chain-b'] as const) {
      for (const c of cases) {
        test(`${api === 'chain-a' ? 'token in X-Api-Key, basic in Authorization' : 'token in Authorization, basic in X-Basic'}: ${c.name}`, async () => {
          assertAnswer(await gw().request({ path: `/${api}/x`, headers: creds[api](c.token, c.user) }), c);
        });
      }

      test(`${api}: the quota is the base identity's`, async () => {
        const headers = creds[api]('tok-all', basicAuth(`limited-${api}`, 'pw-l'));
        const first = await gw().request({ path: `/${api}/x`, headers });
        const second = await gw().request({ path: `/${api}/x`, headers });
        assert.equal(first.status, 200, first.text);
        assert.deepEqual([second.status, second.json], [403, { error: 'Quota exceeded' }]);
      });
    }

    test('with the token as the base identity, the token decides', async () => {
      const call = async (token: string, user: string): Promise<number> =>
        (await gw().request({ path: '/chain-tok/x', headers: { 'x-api-key': token, authorization: user } }))
          .status;
      assert.equal(await call('tok-all', basicAuth('nobody', 'pw-n')), 200);
      assert.equal(await call('tok-none', basicAuth('alice', 'pw-a')), 403);
    });
  },
);
