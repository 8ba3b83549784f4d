/**
 * OAuth 2.0 client credentials against real listeners and an echo upstream, on the four setups
 * (files and Redis stores, fast path on and off): a client registered through the management API,
 * `POST {listen_path}oauth/token` issuing tokens bound to its policy, the API's requests with the
 * token (Bearer), its expiry on an injected clock, its revocation (the gateway's endpoint and the
 * management API), the policy's rate limit and access rights applied to it, the reference's
 * error bodies; then two gateway processes sharing one Redis, and the write-time refusals.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { RedisStore } from '../store/redis.ts';
import { basicAuth, type Res } from '../testing/client.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import {
  keyed,
  startGateway,
  useGateway,
  type GatewayClient,
  type InProcessGateway,
} from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import { describeEachSetup, fastPathOn } from '../testing/tables.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { keyIdOf } from '../sessions/credentials.ts';
import { OAUTH_CLIENTS } from './clients.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const echo = useEcho();

/** The clock of the four setups' gateways (token expiry). */
let clock = Date.UTC(2026, 0, 1);

/** The OAuth API `oa` at `/oa/`. */
const oauthApi = (target: string): Record<string, unknown> =>
  keyed('oa', '/oa/', target, {
    use_oauth2: true,
    oauth_meta: { allowed_access_types: ['client_credentials'] },
  });

const policy = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id,
  name: id,
  state: 'active',
  active: true,
  rate: 1000,
  per: 60,
  quota_max: -1,
  access_rights: { oa: { api_id: 'oa', versions: ['Default'] } },
  ...extra,
});

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A token request: the client by HTTP Basic, or in the form when `inForm`. */
function tokenRequest(
  gw: GatewayClient,
  id: string,
  secret: string,
  opts: { inForm?: boolean; grant?: string; path?: string } = {},
): Promise<Res> {
  const form = new URLSearchParams({ grant_type: opts.grant ?? 'client_credentials' });
  if (opts.inForm === true) {
    form.set('client_id', id);
    form.set('client_secret', secret);
  }
  return gw.request({
    fresh: true,
    method: 'POST',
    path: opts.path ?? '/oa/oauth/token',
    headers: { ...FORM, ...(opts.inForm === true ? {} : { authorization: basicAuth(id, secret) }) },
    body: form.toString(),
  });
}

/** A token of client `id`, failing the test unless it was issued. */
async function tokenOf(gw: GatewayClient, id: string, secret: string): Promise<string> {
  const res = await tokenRequest(gw, id, secret);
  assert.equal(res.status, 200, res.text);
  return (res.json as { access_token: string }).access_token;
}

/** A client of `oa` with two tokens, and a token of another client (`c1`). */
async function clientWithTokens(
  g: GatewayClient,
  clientId: string,
  secret: string,
): Promise<{ tokens: string[]; other: string }> {
  await addClient(g, 'oa-pol', clientId, secret);
  const tokens = [await tokenOf(g, clientId, secret), await tokenOf(g, clientId, secret)];
  return { tokens, other: await tokenOf(g, 'c1', 's3cret-c1-long-enough') };
}

async function createClient(gw: GatewayClient, body: Record<string, unknown>): Promise<Res> {
  return gw.admin('POST', '/svc/oauth/clients/create', body);
}

/** Registers client `clientId` of API `apiId` with policy `policyId`, failing the test unless it was. */
async function addClient(
  gw: GatewayClient,
  policyId: string,
  clientId: string,
  secret: string,
  apiId = 'oa',
): Promise<void> {
  const made = await createClient(gw, { api_id: apiId, policy_id: policyId, client_id: clientId, secret });
  assert.equal(made.status, 200, made.text);
}

const bearer = (gw: GatewayClient, path: string, token: string): Promise<Res> =>
  gw.request({ fresh: true, path, headers: { authorization: `Bearer ${token}` } });

describeEachSetup(
  'oauth2 client credentials',
  () => ({ now: () => clock }),
  ({ gw, index }) => {
    before(async () => {
      const g = gw();
      await g.addApi(oauthApi(echo().url));
      await g.addApi(keyed('other', '/other/', echo().url));
      for (const p of [policy('oa-pol'), policy('oa-limited', { rate: 2, per: 60 })]) {
        const res = await g.admin('POST', '/svc/policies', p);
        assert.equal(res.status, 200, res.text);
      }
      await g.reload();
      const made = await createClient(g, {
        client_id: 'c1',
        secret: 's3cret-c1-long-enough',
        api_id: 'oa',
        policy_id: 'oa-pol',
        redirect_uri: 'https://client.example/cb',
        meta_data: { team: 'warehouse' },
        description: 'the warehouse robot',
      });
      assert.equal(made.status, 200, made.text);
    });

    test('a client is registered through the management API; its secret is answered once and stored hashed', async () => {
      const g = gw();
      const made = await createClient(g, { api_id: 'oa', policy_id: 'oa-pol' });
      assert.equal(made.status, 200, made.text);
      const body = made.json as Record<string, unknown>;
      assert.match(String(body.client_id), /^[0-9a-f]{32}$/);
      assert.match(String(body.secret), /^[0-9a-f]{32}$/);
      assert.equal(body.api_id, 'oa');
      assert.equal(body.policy_id, 'oa-pol');
      const one = await g.admin('GET', `/svc/oauth/clients/oa/${String(body.client_id)}`);
      assert.equal(one.status, 200);
      assert.equal((one.json as Record<string, unknown>).secret, undefined);
      assert.equal((one.json as Record<string, unknown>).secret_hash, undefined);
      const list = await g.admin('GET', '/svc/oauth/clients/oa');
      assert.deepEqual(
        (list.json as { client_id: string }[]).map((c) => c.client_id).sort(),
        ['c1', String(body.client_id)].sort(),
      );
      // The store keeps no secret in clear.
      for (const e of await g.store.list(OAUTH_CLIENTS)) {
        assert.ok('text' in e || 'value' in e);
        const text = JSON.stringify('value' in e ? e.value : '');
        assert.doesNotMatch(text, /s3cret-c1/);
        assert.doesNotMatch(text, new RegExp(String(body.secret)));
      }
      assert.equal((await g.admin('GET', '/svc/oauth/clients/oa/nope')).status, 404);
    });

    test('POST {listen_path}oauth/token issues a bearer token (client by HTTP Basic or in the form); the API answers it', async () => {
      const g = gw();
      const res = await tokenRequest(g, 'c1', 's3cret-c1-long-enough');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['cache-control'], 'no-store');
      const t = res.json as { access_token: string; expires_in: number; token_type: string };
      assert.deepEqual(Object.keys(t).sort(), ['access_token', 'expires_in', 'token_type']);
      assert.equal(t.expires_in, 3600);
      assert.equal(t.token_type, 'bearer');
      const before = fastPathStats.requests;
      const ok = await bearer(g, '/oa/get', t.access_token);
      assert.equal(ok.status, 200, ok.text);
      assert.equal((ok.json as Echoed).path, '/oa/get');
      // Bearer requests read heads only: the fast path serves them when it is on.
      assert.equal(
        fastPathStats.requests - before,
        fastPathOn(index) ? 1 : 0,
        `setup ${String(index)} (fast path ${String(fastPathOn(index))})`,
      );
      // The token endpoint reads the body: node:http serves it, with or without the fast path.
      const beforeToken = fastPathStats.requests;
      const inForm = await tokenRequest(g, 'c1', 's3cret-c1-long-enough', { inForm: true });
      assert.equal(inForm.status, 200, inForm.text);
      assert.equal(fastPathStats.requests - beforeToken, 0, 'token requests are not on the fast path');
      const t2 = (inForm.json as { access_token: string }).access_token;
      assert.notEqual(t2, t.access_token);
      assert.equal((await bearer(g, '/oa/get', t2)).status, 200);
    });

    test('a wrong secret or an unknown client: 401 unauthorized_client, as the reference answers', async () => {
      const g = gw();
      const want = {
        error: 'unauthorized_client',
        error_description: 'The client is not authorized to request a token using this method.',
      };
      for (const [id, secret] of [
        ['c1', 'wrong'],
        ['nobody', 's3cret-c1-long-enough'],
        ['c1', ''],
      ] as const) {
        const res = await tokenRequest(g, id, secret);
        assert.equal(res.status, 401, `${id}:${secret} ${res.text}`);
        assert.deepEqual(res.json, want);
      }
      const inForm = await tokenRequest(g, 'c1', 'wrong', { inForm: true });
      assert.equal(inForm.status, 401);
      assert.deepEqual(inForm.json, want);
    });

    test('another grant type: 400 unsupported_grant_type; a GET: 400 invalid_request', async () => {
      const g = gw();
      for (const grant of ['password', 'authorization_code', 'refresh_token', 'nonsense', '']) {
        const res = await tokenRequest(g, 'c1', 's3cret-c1-long-enough', { grant });
        assert.equal(res.status, 400, `${grant}: ${res.text}`);
        assert.deepEqual(res.json, {
          error: 'unsupported_grant_type',
          error_description: 'The authorization grant type is not supported by the authorization server.',
        });
      }
      const get = await g.request({ fresh: true, path: '/oa/oauth/token' });
      assert.equal(get.status, 400);
      assert.equal((get.json as { error: string }).error, 'invalid_request');
    });

    test('requests without a bearer token: 400 Authorization field missing, 400 Bearer token malformed, 403 Key not authorised', async () => {
      const g = gw();
      const token = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      const rows: [Record<string, string>, number, string][] = [
        [{}, 400, 'Authorization field missing'],
        [{ authorization: token }, 400, 'Bearer token malformed'],
        [{ authorization: `Bearer ${token}x` }, 403, 'Key not authorised'],
      ];
      for (const [headers, status, error] of rows) {
        const res = await g.request({ fresh: true, path: '/oa/get', headers });
        assert.equal(res.status, status, JSON.stringify(headers));
        assert.deepEqual(res.json, { error });
      }
    });

    test('a token expires after its lifetime: 401 Key has expired, please renew', async () => {
      const g = gw();
      const token = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      clock += 3_599_000;
      assert.equal((await bearer(g, '/oa/get', token)).status, 200);
      clock += 1_000;
      const res = await bearer(g, '/oa/get', token);
      assert.equal(res.status, 401);
      assert.deepEqual(res.json, { error: 'Key has expired, please renew' });
    });

    test('a revoked token is refused: POST {listen_path}oauth/revoke by its client, or the management API', async () => {
      const g = gw();
      const token = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      assert.equal((await bearer(g, '/oa/get', token)).status, 200);
      // Another client's revocation leaves it alone.
      const other = await createClient(g, {
        api_id: 'oa',
        policy_id: 'oa-pol',
        client_id: 'c-other',
        secret: 'x-secret-of-16-chars',
      });
      assert.equal(other.status, 200, other.text);
      const revoke = (id: string, secret: string): Promise<Res> =>
        g.request({
          fresh: true,
          method: 'POST',
          path: '/oa/oauth/revoke',
          headers: { ...FORM, authorization: basicAuth(id, secret) },
          body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        });
      assert.equal((await revoke('c-other', 'x-secret-of-16-chars')).status, 200);
      assert.equal((await bearer(g, '/oa/get', token)).status, 200);
      assert.equal((await revoke('c1', 'wrong')).status, 401);
      assert.equal((await revoke('c1', 's3cret-c1-long-enough')).status, 200);
      const refused = await bearer(g, '/oa/get', token);
      assert.equal(refused.status, 403);
      assert.deepEqual(refused.json, { error: 'Key not authorised' });

      const second = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      assert.equal((await bearer(g, '/oa/get', second)).status, 200);
      const byAdmin = await g.admin(
        'POST',
        '/svc/oauth/revoke',
        new URLSearchParams({ token: second, client_id: 'c1' }).toString(),
      );
      assert.equal(byAdmin.status, 200, byAdmin.text);
      assert.deepEqual(byAdmin.json, { status: 'ok', message: 'token revoked successfully' });
      assert.equal((await bearer(g, '/oa/get', second)).status, 403);
    });

    test('POST {listen_path}oauth/revoke_all by its client: every token of the client; a wrong secret revokes nothing', async () => {
      const g = gw();
      const { tokens, other } = await clientWithTokens(g, 'c-pub', 'p-secret-of-16-chars');
      const revokeAll = (headers: Record<string, string>, body = ''): Promise<Res> =>
        g.request({
          fresh: true,
          method: 'POST',
          path: '/oa/oauth/revoke_all',
          headers: { ...FORM, ...headers },
          body,
        });
      const wrong = await revokeAll({ authorization: basicAuth('c-pub', 'not-the-secret-at-all') });
      assert.equal(wrong.status, 401, wrong.text);
      assert.equal((wrong.json as { error: string }).error, 'unauthorized_client');
      assert.equal((await revokeAll({})).status, 401, 'no client');
      for (const t of tokens)
        assert.equal((await bearer(g, '/oa/get', t)).status, 200, 'nothing was revoked');
      // The client as form fields, as the reference takes them.
      const all = await revokeAll(
        {},
        new URLSearchParams({ client_id: 'c-pub', client_secret: 'p-secret-of-16-chars' }).toString(),
      );
      assert.equal(all.status, 200, all.text);
      assert.equal(all.headers['cache-control'], 'no-store');
      for (const t of tokens) assert.equal((await bearer(g, '/oa/get', t)).status, 403);
      assert.equal((await bearer(g, '/oa/get', other)).status, 200, "another client's token stays");
      const fresh = await tokenOf(g, 'c-pub', 'p-secret-of-16-chars');
      assert.equal((await bearer(g, '/oa/get', fresh)).status, 200);
    });

    test("the token's session is the policy's: its rate limit and its access rights", async () => {
      const g = gw();
      await addClient(g, 'oa-limited', 'c-lim', 'l-secret-of-16-chars');
      const token = await tokenOf(g, 'c-lim', 'l-secret-of-16-chars');
      const seen: number[] = [];
      for (let i = 0; i < 3; i++) seen.push((await bearer(g, '/oa/get', token)).status);
      assert.deepEqual(seen, [200, 200, 429]);
      // The policy grants `oa` only: the token is a key without access to `other`.
      const elsewhere = await g.request({
        fresh: true,
        path: '/other/get',
        headers: { authorization: token },
      });
      assert.equal(elsewhere.status, 403);
      assert.deepEqual(elsewhere.json, { error: 'Access to this API has been disallowed' });
    });

    test("deleting a client revokes its tokens; its tokens can't be issued any more", async () => {
      const g = gw();
      await addClient(g, 'oa-pol', 'c-del', 'd-secret-of-16-chars');
      const token = await tokenOf(g, 'c-del', 'd-secret-of-16-chars');
      assert.equal((await bearer(g, '/oa/get', token)).status, 200);
      const del = await g.admin('DELETE', '/svc/oauth/clients/oa/c-del');
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(del.json, { key: 'c-del', status: 'ok', action: 'deleted' });
      assert.equal((await g.admin('GET', '/svc/oauth/clients/oa/c-del')).status, 404);
      assert.equal((await bearer(g, '/oa/get', token)).status, 403);
      assert.equal((await tokenRequest(g, 'c-del', 'd-secret-of-16-chars')).status, 401);
      assert.equal((await g.admin('DELETE', '/svc/oauth/clients/oa/c-del')).status, 404);
    });

    test('POST /svc/oauth/revoke_all: every token of the client, with its secret; a wrong or missing secret revokes nothing', async () => {
      const g = gw();
      const { tokens, other } = await clientWithTokens(g, 'c-all', 'a-secret-of-16-chars');
      const revokeAll = (fields: Record<string, string>): Promise<Res> =>
        g.admin('POST', '/svc/oauth/revoke_all', new URLSearchParams(fields).toString());
      const missing = await revokeAll({ client_id: 'c-all' });
      assert.equal(missing.status, 400, missing.text);
      assert.deepEqual(missing.json, { status: 'error', message: 'client_secret: Required' });
      const wrong = await revokeAll({ client_id: 'c-all', client_secret: 'not-the-secret-at-all' });
      assert.equal(wrong.status, 403, wrong.text);
      assert.match((wrong.json as { message: string }).message, /^client_secret: /);
      assert.equal((await revokeAll({ client_id: 'nobody', client_secret: 'x' })).status, 404);
      for (const t of tokens)
        assert.equal((await bearer(g, '/oa/get', t)).status, 200, 'nothing was revoked');
      const all = await revokeAll({ client_id: 'c-all', client_secret: 'a-secret-of-16-chars' });
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(all.json, { status: 'ok', message: 'tokens revoked successfully' });
      for (const t of tokens) assert.equal((await bearer(g, '/oa/get', t)).status, 403);
      // Another client's token is left alone; the client can still be issued new ones.
      assert.equal((await bearer(g, '/oa/get', other)).status, 200);
      const fresh = await tokenOf(g, 'c-all', 'a-secret-of-16-chars');
      assert.equal((await bearer(g, '/oa/get', fresh)).status, 200);
    });

    test('DELETE /svc/policies/{id} is refused (409, naming them) while OAuth clients use the policy', async () => {
      const g = gw();
      assert.equal((await g.admin('POST', '/svc/policies', policy('oa-used'))).status, 200);
      for (const clientId of ['c-pol-1', 'c-pol-2']) {
        const made = await createClient(g, { api_id: 'oa', policy_id: 'oa-used', client_id: clientId });
        assert.equal(made.status, 200, made.text);
      }
      const refused = await g.admin('DELETE', '/svc/policies/oa-used');
      assert.equal(refused.status, 409, refused.text);
      assert.deepEqual(refused.json, {
        status: 'error',
        message:
          'policy "oa-used" is used by OAuth clients "c-pol-1" of API "oa", "c-pol-2" of API "oa": delete them (or register them with another policy) first',
      });
      assert.equal((await g.admin('GET', '/svc/policies/oa-used')).status, 200);
      assert.equal((await g.admin('DELETE', '/svc/oauth/clients/oa/c-pol-1')).status, 200);
      const still = await g.admin('DELETE', '/svc/policies/oa-used');
      assert.equal(still.status, 409, still.text);
      assert.match((still.json as { message: string }).message, /clients "c-pol-2" of API "oa": /);
      assert.equal((await g.admin('DELETE', '/svc/oauth/clients/oa/c-pol-2')).status, 200);
      const deleted = await g.admin('DELETE', '/svc/policies/oa-used');
      assert.equal(deleted.status, 200, deleted.text);
      assert.equal((await g.admin('GET', '/svc/policies/oa-used')).status, 404);
    });

    test("deleting a client leaves the tokens of another API's client of the same client ID", async () => {
      const g = gw();
      await g.addApi(
        keyed('ob', '/ob/', echo().url, {
          use_oauth2: true,
          oauth_meta: { allowed_access_types: ['client_credentials'] },
        }),
      );
      const both = policy('oab-pol', {
        access_rights: {
          oa: { api_id: 'oa', versions: ['Default'] },
          ob: { api_id: 'ob', versions: ['Default'] },
        },
      });
      assert.equal((await g.admin('POST', '/svc/policies', both)).status, 200);
      await g.reload();
      for (const apiId of ['oa', 'ob'])
        await addClient(g, 'oab-pol', 'shared', 'sh-secret-of-16-chars', apiId);
      const ofA = await tokenOf(g, 'shared', 'sh-secret-of-16-chars');
      const ofB = (
        (await tokenRequest(g, 'shared', 'sh-secret-of-16-chars', { path: '/ob/oauth/token' })).json as {
          access_token: string;
        }
      ).access_token;
      assert.equal((await bearer(g, '/ob/get', ofB)).status, 200);
      const del = await g.admin('DELETE', '/svc/oauth/clients/oa/shared');
      assert.equal(del.status, 200, del.text);
      assert.equal((await bearer(g, '/oa/get', ofA)).status, 403);
      assert.equal((await bearer(g, '/ob/get', ofB)).status, 200);
      assert.equal((await g.admin('GET', `/svc/keys/${ofB}`)).status, 200);
    });
    test('an expired token leaves the store (the next token request sweeps it out); a valid one still works', async () => {
      const g = gw();
      const old = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      assert.equal((await g.admin('GET', `/svc/keys/${old}`)).status, 200);
      clock += 3_600_000;
      const fresh = await tokenOf(g, 'c1', 's3cret-c1-long-enough');
      // Every token issued before (this suite's other tests included) has expired: one is left,
      // in the files or in the Redis hash of keys.
      const tokens = async (): Promise<string[]> =>
        (await g.store.list('keys')).flatMap((e) =>
          'value' in e && (e.value as { oauth_client_id?: string }).oauth_client_id !== undefined
            ? [e.id]
            : [],
        );
      // The sweep runs in the background of the token request, deleting one token after another:
      // waited for until it has deleted them all, not only the first.
      await waitFor(
        'the expired tokens to leave the store',
        async () =>
          (await g.admin('GET', `/svc/keys/${old}`)).status === 404 && (await tokens()).length === 1,
        15_000,
      );
      const listed = (await g.admin('GET', '/svc/keys')).json as { keys: string[] };
      assert.ok(!listed.keys.includes(keyIdOf(old)), JSON.stringify(listed));
      assert.ok(listed.keys.includes(keyIdOf(fresh)), JSON.stringify(listed));
      assert.deepEqual(await tokens(), [keyIdOf(fresh)]);
      assert.equal((await bearer(g, '/oa/get', fresh)).status, 200);
    });
  },
);

describe('oauth2 on two gateways sharing one Redis', () => {
  let redis: TestRedis;
  let a: InProcessGateway;
  let b: InProcessGateway;
  before(async () => {
    redis = await startRedis();
    const store = (): RedisStore =>
      new RedisStore(redis.url, { prefix: 'oauth2-shared:', log: silentLogger() });
    a = await startGateway({ store: store() });
    b = await startGateway({ store: store() });
    await a.addApi(oauthApi(echo().url));
    assert.equal((await a.admin('POST', '/svc/policies', policy('oa-pol'))).status, 200);
    await a.admin('GET', '/svc/reload/group');
    await b.reload();
  });
  after(async () => {
    await stopAll(a, b, redis);
  });

  test('a client registered on one node gets tokens on the other; a token revoked on one is refused there at once and on the other once the change notice arrives', async () => {
    assert.equal(
      (
        await createClient(a, {
          api_id: 'oa',
          policy_id: 'oa-pol',
          client_id: 'c',
          secret: 's-secret-of-16-chars',
        })
      ).status,
      200,
    );
    const token = await tokenOf(b, 'c', 's-secret-of-16-chars');
    assert.equal((await bearer(a, '/oa/get', token)).status, 200);
    assert.equal((await bearer(b, '/oa/get', token)).status, 200);
    const revoked = await a.request({
      fresh: true,
      method: 'POST',
      path: '/oa/oauth/revoke',
      headers: { ...FORM, authorization: basicAuth('c', 's-secret-of-16-chars') },
      body: `token=${token}`,
    });
    assert.equal(revoked.status, 200);
    assert.equal((await bearer(a, '/oa/get', token)).status, 403);
    // The other node hears of it through Redis pub/sub: milliseconds, not the cache's 60 s.
    await waitFor(
      'the revoked token refused on the other node',
      async () => ((await bearer(b, '/oa/get', token)).status === 403 ? true : undefined),
      2_000,
      10,
    );
  });
});

describe('oauth2 settings at write time', () => {
  const g = useGateway();

  test('grants svc does not serve and response types without a login page are refused with 400 naming the field', async () => {
    const rows: [Record<string, unknown>, string][] = [
      [
        { allowed_access_types: ['client_credentials', 'password'] },
        'oauth_meta.allowed_access_types[1]: Unsupported value: grant "password" is not served',
      ],
      [
        { allowed_access_types: ['client_credentials'], allowed_authorize_types: ['token'] },
        'oauth_meta.auth_login_redirect: Required value',
      ],
      [{ allowed_access_types: [] }, 'oauth_meta.allowed_access_types: Required value'],
    ];
    for (const [meta, want] of rows) {
      const res = await g().admin('POST', '/svc/apis', { ...oauthApi(echo().url), oauth_meta: meta });
      assert.equal(res.status, 400, res.text);
      assert.ok((res.json as { message: string }).message.includes(want), res.text);
    }
    const ok = await g().admin('POST', '/svc/apis', oauthApi(echo().url));
    assert.equal(ok.status, 200, ok.text);
  });

  test('a client needs an OAuth API and a policy granting it', async () => {
    await g().admin('POST', '/svc/apis', keyed('plain', '/plain/', echo().url));
    const rows: [Record<string, unknown>, number, string][] = [
      [{ policy_id: 'p' }, 400, 'api_id: Required'],
      [{ api_id: 'missing', policy_id: 'p' }, 400, 'api_id: Invalid: API doesn\'t exist: no API "missing"'],
      [
        { api_id: 'oa', policy_id: 'oa-pol', secret: 'fifteen-chars-x' },
        400,
        'secret: Invalid value: a client secret needs at least 16 characters',
      ],
      [{ api_id: 'plain', policy_id: 'p' }, 400, 'does not use OAuth 2.0'],
      [{ api_id: 'oa', policy_id: 'none' }, 400, 'policy "none" not found'],
    ];
    for (const [body, status, want] of rows) {
      const res = await createClient(g(), body);
      assert.equal(res.status, status, res.text);
      assert.ok((res.json as { message: string }).message.includes(want), res.text);
    }
  });
});
