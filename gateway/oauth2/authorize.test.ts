/**
 * The OAuth 2.0 authorization flow (gateway/oauth2/authorize.ts) against real listeners and an
 * echo upstream, on the four setups (files and Redis stores, fast path on and off): the authorize
 * endpoint checks the response type, the client and its registered redirect URI and sends the
 * user on to the login page (307), refusing anything else without redirecting; the login page's
 * `POST /svc/oauth/authorize-client` gets a code (then exchanged once, by that client, for that
 * redirect URI, within its lifetime, for a token the API takes) or a token (the implicit grant);
 * an API that allows the response type `code` without the authorization_code grant issues codes
 * the token endpoint does not exchange, as the reference's.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { basicAuth, type Res } from '../testing/client.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { keyed, type GatewayClient } from '../testing/harness.ts';
import { describeEachSetup } from '../testing/tables.ts';
import { CODE_LIFETIME_S } from './authorize.ts';

const echo = useEcho();

/** The clock of the setups' gateways (code lifetime). */
let clock = Date.UTC(2026, 0, 1);

const LOGIN = 'https://login.example.com/signin?app=az';
const CALLBACK = 'https://app.example.com/cb';
const SECRET = 'web-client-secret-0123';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
/** `az`: both response types and both grants; `code-only`: as the reference's 06-oauth2 sample. */
const apis = (target: string): Record<string, unknown>[] => [
  keyed('az', '/az/', target, {
    use_oauth2: true,
    oauth_meta: {
      allowed_access_types: ['authorization_code', 'client_credentials'],
      allowed_authorize_types: ['code', 'token'],
      auth_login_redirect: LOGIN,
    },
  }),
  keyed('code-only', '/code-only/', target, {
    use_oauth2: true,
    oauth_meta: {
      allowed_access_types: ['client_credentials'],
      allowed_authorize_types: ['code'],
      auth_login_redirect: 'http://localhost',
    },
  }),
];

describeEachSetup(
  'oauth2 authorize flow',
  () => ({ now: () => clock }),
  ({ gw }) => {
    before(async () => {
      const g = gw();
      for (const api of apis(echo().url)) await g.addApi(api);
      for (const apiId of ['az', 'code-only']) {
        const pol = {
          id: `${apiId}-pol`,
          name: apiId,
          state: 'active',
          rate: 1000,
          per: 60,
          quota_max: -1,
          access_rights: { [apiId]: { api_id: apiId, versions: ['Default'] } },
        };
        assert.equal((await g.admin('POST', '/svc/policies', pol)).status, 200);
      }
      await g.reload();
      const clients: [string, string, string][] = [
        ['az', 'web', CALLBACK],
        ['az', 'other', 'https://other.example.com/cb'],
        ['az', 'no-redirect', ''],
        ['code-only', 'web', CALLBACK],
      ];
      for (const [apiId, clientId, redirect] of clients) {
        const res = await g.admin('POST', '/svc/oauth/clients/create', {
          api_id: apiId,
          policy_id: `${apiId}-pol`,
          client_id: clientId,
          secret: SECRET,
          redirect_uri: redirect,
        });
        assert.equal(res.status, 200, res.text);
      }
    });

    const authorizeClient = (g: GatewayClient, fields: Record<string, string>): Promise<Res> =>
      // A form, as the reference's login pages send it.
      g.admin(
        'POST',
        '/svc/oauth/authorize-client',
        new URLSearchParams({ api_id: 'az', ...fields }).toString(),
      );
    /** A code for `web` at CALLBACK. */
    const codeOf = async (g: GatewayClient, apiId = 'az'): Promise<string> => {
      const res = await authorizeClient(g, {
        api_id: apiId,
        response_type: 'code',
        client_id: 'web',
        redirect_uri: CALLBACK,
      });
      assert.equal(res.status, 200, res.text);
      return (res.json as { code: string }).code;
    };
    const exchange = (
      g: GatewayClient,
      code: string,
      opts: { client?: string; redirect?: string; path?: string } = {},
    ): Promise<Res> =>
      g.request({
        fresh: true,
        method: 'POST',
        path: opts.path ?? '/az/oauth/token',
        headers: { ...FORM, authorization: basicAuth(opts.client ?? 'web', SECRET) },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: opts.redirect ?? CALLBACK,
        }).toString(),
      });

    test('authorize (GET): a checked request goes on to the login page with its query (307)', async () => {
      const query = `response_type=code&client_id=web&redirect_uri=${encodeURIComponent(CALLBACK)}&state=s1`;
      const res = await gw().request({ fresh: true, path: `/az/oauth/authorize?${query}` });
      assert.equal(res.status, 307, res.text);
      assert.equal(res.headers.location, `${LOGIN}&${query}`);
      assert.equal(res.headers['cache-control'], 'no-store');
      // Without redirect_uri: the registered one is meant.
      const bare = await gw().request({
        fresh: true,
        path: '/az/oauth/authorize?response_type=token&client_id=web',
      });
      assert.equal(bare.status, 307, bare.text);
    });

    test('authorize (POST form): on to the login page, which gets the form again (307)', async () => {
      const res = await gw().request({
        fresh: true,
        method: 'POST',
        path: '/az/oauth/authorize',
        headers: FORM,
        body: new URLSearchParams({
          response_type: 'token',
          client_id: 'web',
          redirect_uri: CALLBACK,
        }).toString(),
      });
      assert.equal(res.status, 307, res.text);
      assert.equal(res.headers.location, LOGIN);
    });

    test('authorize: what fails a check is 400 with the error, never a redirect', async () => {
      const rows: [string, string][] = [
        [`response_type=id_token&client_id=web`, 'unsupported_response_type'],
        [`response_type=code&client_id=nobody`, 'unauthorized_client'],
        [
          `response_type=code&client_id=web&redirect_uri=${encodeURIComponent('https://evil.example.com/cb')}`,
          'invalid_request',
        ],
        [
          `response_type=code&client_id=web&redirect_uri=${encodeURIComponent(`${CALLBACK}/more`)}`,
          'invalid_request',
        ],
        ['response_type=code&client_id=no-redirect', 'invalid_request'],
        ['response_type=code', 'invalid_request'],
      ];
      for (const [query, error] of rows) {
        const res = await gw().request({ fresh: true, path: `/az/oauth/authorize?${query}` });
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.equal(res.headers.location, undefined, query);
        assert.equal((res.json as { error: string }).error, error, query);
      }
      // A response type the API does not allow (code-only has no token).
      const res = await gw().request({
        fresh: true,
        path: '/code-only/oauth/authorize?response_type=token&client_id=web',
      });
      assert.equal((res.json as { error: string }).error, 'unsupported_response_type');
    });

    test('code: issued to the login page, exchanged once for a token the API takes', async () => {
      const res = await authorizeClient(gw(), {
        response_type: 'code',
        client_id: 'web',
        redirect_uri: CALLBACK,
        state: 'xyz',
      });
      assert.equal(res.status, 200, res.text);
      const { code, redirect_to } = res.json as { code: string; redirect_to: string };
      const back = new URL(redirect_to);
      assert.equal(`${back.origin}${back.pathname}`, CALLBACK);
      assert.equal(back.searchParams.get('code'), code);
      assert.equal(back.searchParams.get('state'), 'xyz');
      const token = await exchange(gw(), code);
      assert.equal(token.status, 200, token.text);
      const body = token.json as { access_token: string; token_type: string; expires_in: number };
      assert.equal(body.token_type, 'bearer');
      assert.equal(body.expires_in, 3600);
      const api = await gw().request({
        fresh: true,
        path: '/az/get',
        headers: { authorization: `Bearer ${body.access_token}` },
      });
      assert.equal(api.status, 200, api.text);
      assert.equal((api.json as Echoed).path, '/az/get');
      // Once only.
      const again = await exchange(gw(), code);
      assert.equal(again.status, 400, again.text);
      assert.equal((again.json as { error: string }).error, 'invalid_grant');
    });

    test('code: another redirect URI, another client, an unknown code: invalid_grant, and the code is spent', async () => {
      const code = await codeOf(gw());
      const wrongUri = await exchange(gw(), code, { redirect: 'https://other.example.com/cb' });
      assert.equal((wrongUri.json as { error: string }).error, 'invalid_grant');
      assert.equal((await exchange(gw(), code)).status, 400);
      const stolen = await exchange(gw(), await codeOf(gw()), { client: 'other' });
      assert.equal((stolen.json as { error: string }).error, 'invalid_grant');
      assert.equal((await exchange(gw(), 'no-such-code')).status, 400);
      // A wrong client secret is refused before the code is looked at.
      const res = await gw().request({
        fresh: true,
        method: 'POST',
        path: '/az/oauth/token',
        headers: { ...FORM, authorization: basicAuth('web', 'wrong-secret-0123456') },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'x',
          redirect_uri: CALLBACK,
        }).toString(),
      });
      assert.equal(res.status, 401, res.text);
    });

    test('code: past its lifetime it is not exchanged', async () => {
      const code = await codeOf(gw());
      clock += (CODE_LIFETIME_S + 1) * 1000;
      const res = await exchange(gw(), code);
      assert.equal(res.status, 400, res.text);
      assert.equal((res.json as { error: string }).error, 'invalid_grant');
    });

    test('token (implicit): the token in the redirect URI fragment, taken by the API', async () => {
      const res = await authorizeClient(gw(), { response_type: 'token', client_id: 'web', state: 'st' });
      assert.equal(res.status, 200, res.text);
      const body = res.json as { access_token: string; redirect_to: string; token_type: string };
      assert.equal(body.token_type, 'bearer');
      const back = new URL(body.redirect_to);
      const fragment = new URLSearchParams(back.hash.slice(1));
      assert.equal(fragment.get('access_token'), body.access_token);
      assert.equal(fragment.get('state'), 'st');
      assert.equal(back.search, '');
      const api = await gw().request({
        fresh: true,
        path: '/az/get',
        headers: { authorization: `Bearer ${body.access_token}` },
      });
      assert.equal(api.status, 200, api.text);
    });

    test('authorize-client refuses what it cannot do, naming it', async () => {
      const rules = await authorizeClient(gw(), {
        response_type: 'token',
        client_id: 'web',
        key_rules: '{"rate": 5}',
      });
      assert.equal(rules.status, 400, rules.text);
      assert.match(rules.text, /key_rules/);
      const noApi = await authorizeClient(gw(), { api_id: 'nope', response_type: 'code', client_id: 'web' });
      assert.equal(noApi.status, 400, noApi.text);
      assert.match(noApi.text, /api_id/);
      const badUri = await authorizeClient(gw(), {
        response_type: 'code',
        client_id: 'web',
        redirect_uri: 'https://evil.example.com/cb',
      });
      assert.equal(badUri.status, 400, badUri.text);
      assert.equal((badUri.json as { error: string }).error, 'invalid_request');
    });

    test("code without the authorization_code grant (the reference's 06-oauth2 sample): codes issued, not exchanged", async () => {
      const code = await codeOf(gw(), 'code-only');
      const res = await exchange(gw(), code, { path: '/code-only/oauth/token' });
      assert.equal(res.status, 400, res.text);
      assert.equal((res.json as { error: string }).error, 'unsupported_grant_type');
    });
  },
);
