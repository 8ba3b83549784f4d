/**
 * The management API of keys and policies (GATEWAY-BEHAVIOUR §1), and what it promises beyond
 * codes: keys and passwords are never stored in the clear, a write takes effect at once on every
 * process and node sharing the store (no reload), a restart keeps everything, and settings the
 * gateway can't enforce yet are refused by name.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { silentLogger } from '../../lib/log.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { RedisStore } from '../store/redis.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyed, spawnWorkers, startGateway, useGateway, type GatewayClient } from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import { stopAll } from '../../lib/testing/teardown.ts';
import { basicAuth } from '../testing/client.ts';
import { rights } from '../testing/limits.ts';

let echo: Echo;
let redis: TestRedis;
before(async () => {
  echo = await startEcho('echo');
  redis = await startRedis();
});
after(async () => {
  await stopAll(echo, redis);
});

async function withApis(gw: GatewayClient): Promise<void> {
  await gw.addApi(keyed('k', '/k/', echo.url));
  await gw.addApi(keyed('b', '/b/', echo.url, { use_basic_auth: true }));
  await gw.addApi(keyed('other', '/other/', echo.url));
  await gw.reload();
}

const status = async (gw: GatewayClient, path: string, authorization?: string): Promise<number> =>
  (
    await gw.request({
      path,
      fresh: true,
      ...(authorization === undefined ? {} : { headers: { authorization } }),
    })
  ).status;

describe('keys and policies: management API', () => {
  const gw = useGateway({}, withApis);

  test('POST /svc/keys generates a key, returned once; it authenticates at once', async () => {
    const res = await gw().admin('POST', '/svc/keys', { access_rights: rights('k') });
    assert.equal(res.status, 200, res.text);
    const body = res.json as { key: string; key_hash: string; status: string; action: string };
    assert.equal(body.status, 'ok');
    assert.equal(body.action, 'added');
    assert.match(body.key, /^[0-9a-f]{32}$/);
    assert.match(body.key_hash, /^[0-9a-f]{64}$/);
    assert.equal(await status(gw(), '/k/x', body.key), 200);
    const got = await gw().admin('GET', `/svc/keys/${body.key}`);
    assert.equal(got.status, 200);
    assert.equal((got.json as { key_hash: string }).key_hash, body.key_hash);
    assert.ok(!got.text.includes(body.key), 'the key itself is not returned again');
    const byHash = await gw().admin('GET', `/svc/keys/${body.key_hash}?hashed=true`);
    assert.deepEqual(byHash.json, got.json);
  });

  test('custom key: import, read, list with an API filter, update, delete', async () => {
    const add = await gw().admin('POST', '/svc/keys/my-custom-key', {
      alias: 'mine',
      access_rights: rights('k'),
    });
    assert.equal(add.status, 200, add.text);
    assert.equal((add.json as { key: string }).key, 'my-custom-key');
    const hash = (add.json as { key_hash: string }).key_hash;
    assert.equal((await gw().admin('POST', '/svc/keys/my-custom-key', {})).status, 409);
    const list = (await gw().admin('GET', '/svc/keys')).json as { keys: string[] };
    assert.ok(list.keys.includes(hash));
    const filtered = (await gw().admin('GET', '/svc/keys?api_id=other')).json as { keys: string[] };
    assert.ok(!filtered.keys.includes(hash));
    assert.equal(await status(gw(), '/other/x', 'my-custom-key'), 403);
    const put = await gw().admin('PUT', '/svc/keys/my-custom-key', {
      alias: 'mine',
      access_rights: rights('k', 'other'),
    });
    assert.deepEqual(put.json, { key: 'my-custom-key', key_hash: hash, status: 'ok', action: 'modified' });
    assert.equal(await status(gw(), '/other/x', 'my-custom-key'), 200, 'an update takes effect at once');
    const del = await gw().admin('DELETE', '/svc/keys/my-custom-key');
    assert.equal((del.json as { action: string }).action, 'deleted');
    assert.equal(await status(gw(), '/k/x', 'my-custom-key'), 403, 'a deleted key is refused at once');
    for (const [method, path] of [
      ['GET', '/svc/keys/my-custom-key'],
      ['PUT', '/svc/keys/my-custom-key'],
      ['DELETE', '/svc/keys/my-custom-key'],
    ] as const) {
      const res = await gw().admin(method, path, method === 'PUT' ? {} : undefined);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.deepEqual(res.json, { status: 'error', message: 'Key not found' });
    }
  });

  test('a basic-auth user: registered by name, password hashed, changes honoured at once', async () => {
    const add = await gw().admin('POST', '/svc/keys/carol', {
      basic_auth_data: { password: 'first' },
      access_rights: rights('b'),
    });
    assert.equal(add.status, 200, add.text);
    const got = await gw().admin('GET', '/svc/keys/carol');
    assert.ok(!got.text.includes('first'), 'no password in the answer');
    assert.deepEqual((got.json as { basic_auth_data: unknown }).basic_auth_data, { hash_type: 'scrypt' });
    assert.equal(await status(gw(), '/b/x', basicAuth('carol', 'first')), 200);
    assert.equal(await status(gw(), '/b/x', basicAuth('carol', 'first')), 200, 'from the cache');
    const put = await gw().admin('PUT', '/svc/keys/carol', {
      basic_auth_data: { password: 'second' },
      access_rights: rights('b'),
    });
    assert.equal(put.status, 200, put.text);
    assert.equal(
      await status(gw(), '/b/x', basicAuth('carol', 'first')),
      401,
      'the old password is refused at once',
    );
    assert.equal(await status(gw(), '/b/x', basicAuth('carol', 'second')), 200);
    const keep = await gw().admin('PUT', '/svc/keys/carol', {
      basic_auth_data: {},
      access_rights: rights('b'),
    });
    assert.equal(keep.status, 200, keep.text);
    assert.equal(
      await status(gw(), '/b/x', basicAuth('carol', 'second')),
      200,
      'an update without a password keeps it',
    );
    await gw().admin('DELETE', '/svc/keys/carol');
    assert.equal(
      await status(gw(), '/b/x', basicAuth('carol', 'second')),
      401,
      'a deleted user is refused at once',
    );
  });

  test('policies: create, read, list, update, delete; IDs and bodies checked', async () => {
    const created = await gw().admin('POST', '/svc/policies', { name: 'gen', access_rights: rights('k') });
    assert.equal(created.status, 200, created.text);
    const id = (created.json as { key: string }).key;
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.equal((await gw().admin('GET', `/svc/policies/${id}`)).status, 200);
    const list = (await gw().admin('GET', '/svc/policies')).json as { id: string }[];
    assert.ok(list.some((p) => p.id === id));
    assert.deepEqual((await gw().admin('PUT', `/svc/policies/${id}`, { name: 'renamed' })).json, {
      key: id,
      status: 'ok',
      action: 'modified',
    });
    assert.equal((await gw().admin('PUT', `/svc/policies/${id}`, { id: 'other', name: 'x' })).status, 400);
    assert.deepEqual((await gw().admin('DELETE', `/svc/policies/${id}`)).json, {
      key: id,
      status: 'ok',
      action: 'deleted',
    });
    const missing = await gw().admin('GET', `/svc/policies/${id}`);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, { status: 'error', message: 'Policy not found' });
    assert.equal((await gw().admin('GET', '/svc/policies/a%20b')).status, 400);
    assert.equal((await gw().admin('POST', '/svc/policies', { id: 'a b', name: 'x' })).status, 400);
    assert.equal((await gw().admin('POST', '/svc/policies', 'not json')).status, 400);
    const bad = await gw().admin('POST', '/svc/policies', { name: 'x', state: 'paused' });
    assert.equal(bad.status, 400);
    assert.match((bad.json as { message: string }).message, /^Validation of Policy failed\. Reason: state: /);
  });

  test('a key whose policy is missing, draft or deny cannot be created', async () => {
    for (const [id, state] of [
      ['p-draft', 'draft'],
      ['p-deny', 'deny'],
    ] as const) {
      assert.equal((await gw().admin('POST', '/svc/policies', { id, name: id, state })).status, 200);
    }
    for (const [pid, reason] of [
      ['p-missing', /apply_policies\[0\]: policy "p-missing" not found/],
      ['p-draft', /apply_policies\[0\]: policy "p-draft" is draft/],
      ['p-deny', /apply_policies\[0\]: policy "p-deny" is deny/],
    ] as const) {
      const res = await gw().admin('POST', '/svc/keys', { apply_policies: [pid] });
      assert.equal(res.status, 400, pid);
      assert.match((res.json as { message: string }).message, reason);
    }
  });

  test('settings not enforced yet, and invalid ones, are refused by name, nothing stored', async () => {
    const rows: [string, string, Record<string, unknown>, RegExp][] = [
      ['POST', '/svc/keys/hmac', { hmac_enabled: true }, /hmac_string: Required value/],
      ['POST', '/svc/keys/jwt', { jwt_data: { secret: 'x' } }, /jwt_data: Unsupported value/],
      [
        'POST',
        '/svc/keys/cert',
        { certificate: 'abc' },
        /certificate: a key bound to a certificate is created with POST \/svc\/keys\/create/,
      ],
      ['POST', '/svc/keys', { certificate: 'abc' }, /certificate: certificate "abc" not found/],
      ['POST', '/svc/keys/limited', { rate: 10 }, /per: Required value/],
      [
        'POST',
        '/svc/keys/badurl',
        { access_rights: { k: { api_id: 'k', allowed_urls: [{ url: '/a(', methods: ['GET'] }] } } },
        /allowed_urls\[0\]\.url: Invalid value/,
      ],
      [
        'POST',
        '/svc/keys/mismatch',
        { access_rights: { k: { api_id: 'other' } } },
        /access_rights\["k"\]\.api_id: Invalid value/,
      ],
      ['POST', '/svc/keys/unknown', { nonsense: 1 }, /nonsense: unknown field/],
    ];

    for (const [method, path, body, reason] of rows) {
      const res = await gw().admin(method, path, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}: ${res.text}`);
      assert.match((res.json as { message: string }).message, reason);
    }
    assert.equal((await gw().admin('GET', '/svc/keys/limited')).status, 404, 'nothing was stored');
    assert.equal((await gw().admin('GET', '/svc/keys/hmac')).status, 404);
    const disabled = await gw().admin('POST', '/svc/keys/unlimited', {
      rate: -1,
      per: -1,
      quota_max: -1,
      throttle_interval: -1,
      throttle_retry_limit: -1,
    });
    assert.equal(disabled.status, 200, 'disabled limits are accepted');
  });

  test('a policy key_expires_in gives a new key its expiry', async () => {
    assert.equal(
      (
        await gw().admin('POST', '/svc/policies', {
          id: 'short-lived',
          name: 's',
          key_expires_in: 3600,
          access_rights: rights('k'),
        })
      ).status,
      200,
    );
    const before = Math.floor(Date.now() / 1000);
    assert.equal(
      (await gw().admin('POST', '/svc/keys/short', { apply_policies: ['short-lived'] })).status,
      200,
    );
    const key = (await gw().admin('GET', '/svc/keys/short')).json as { expires: number };
    assert.ok(key.expires >= before + 3600 && key.expires <= before + 3602, `expires ${key.expires}`);
    assert.equal(
      (await gw().admin('POST', '/svc/keys/own', { expires: before + 10, apply_policies: ['short-lived'] }))
        .status,
      200,
    );
    assert.equal(
      ((await gw().admin('GET', '/svc/keys/own')).json as { expires: number }).expires,
      before + 10,
      'its own expiry wins',
    );
  });

  test('classic key fields sent by migration scripts are accepted', async () => {
    const res = await gw().admin('POST', '/svc/keys/classic-key', {
      org_id: '',
      alias: 'from a script',
      rate: -1,
      per: -1,
      quota_max: -1,
      quota_renewal_rate: 3600,
      throttle_interval: -1,
      throttle_retry_limit: -1,
      expires: 0,
      is_inactive: false,
      apply_policies: [],
      tags: ['migrated'],
      meta_data: { team: 'a' },
      allowance: 1000,
      last_check: 0,
      access_rights: { k: { api_id: 'k', api_name: 'k', versions: ['Default'], allowed_urls: [] } },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(await status(gw(), '/k/x', 'classic-key'), 200);
    const policy = await gw().admin('POST', '/svc/policies', {
      _id: '5f1c0a0b0c0d0e0f10111213',
      id: 'classic-policy',
      name: 'exported',
      org_id: '',
      rate: -1,
      per: -1,
      quota_max: -1,
      quota_renewal_rate: 3600,
      throttle_interval: -1,
      throttle_retry_limit: -1,
      max_query_depth: -1,
      hmac_enabled: false,
      active: true,
      is_inactive: false,
      state: 'active',
      tags: [],
      key_expires_in: 0,
      partitions: { quota: false, rate_limit: false, acl: false, complexity: false },
      last_updated: '1700000000',
      meta_data: {},
      access_rights: {
        k: { api_id: 'k', api_name: 'k', versions: ['Default'], allowed_urls: [], limit: null },
      },
    });
    assert.equal(policy.status, 200, policy.text);
    const stored = (await gw().admin('GET', '/svc/policies/classic-policy')).json as Record<string, unknown>;
    assert.equal(stored._id, '5f1c0a0b0c0d0e0f10111213');
  });
});

describe('keys at rest', () => {
  test('neither the files store nor Redis holds a token or a password', async () => {
    const prefix = 'rest:';
    const files = await startGateway();
    const onRedis = await startGateway({ store: new RedisStore(redis.url, { prefix, log: silentLogger() }) });
    const token = 'token-TOPSECRET-1234567890';
    const password = 'password-TOPSECRET-0987654321';
    try {
      for (const gw of [files, onRedis]) {
        assert.equal((await gw.admin('POST', `/svc/keys/${token}`, {})).status, 200);
        assert.equal(
          (await gw.admin('POST', '/svc/keys/dave', { basic_auth_data: { password } })).status,
          200,
        );
      }
      const texts: string[] = [];
      const dir = join(files.dataDir, 'keys');
      for (const f of readdirSync(dir)) texts.push(f, readFileSync(join(dir, f), 'utf8'));
      const client = new Redis(redis.url);
      try {
        for (const k of await client.keys(`${prefix}*`)) {
          texts.push(k);
          if ((await client.type(k)) === 'hash') texts.push(JSON.stringify(await client.hgetall(k)));
        }
      } finally {
        client.disconnect();
      }
      const all = texts.join('\n');
      assert.ok(all.includes('scrypt$'), 'the password is stored as a hash');
      assert.ok(!all.includes('TOPSECRET'), 'no token or password in the clear');
    } finally {
      await files.stop();
      await onRedis.stop();
    }
  });
});

describe('keys across processes and nodes', () => {
  test('a restart keeps keys and policies', async () => {
    const first = await startGateway();
    await withApis(first);
    await first.admin('POST', '/svc/policies', { id: 'keep', name: 'keep', access_rights: rights('k') });
    await first.admin('POST', '/svc/keys/kept', { apply_policies: ['keep'] });
    await first.stop();
    const second = await startGateway({ dataDir: first.dataDir });
    try {
      assert.equal(await status(second, '/k/x', 'kept'), 200);
    } finally {
      await second.stop();
    }
  });

  test('two nodes on one Redis: a key or policy written on one works on the other within a second, no reload', async () => {
    const open = (): RedisStore => new RedisStore(redis.url, { prefix: 'nodes:', log: silentLogger() });
    const a = await startGateway({ store: open() });
    const b = await startGateway({ store: open() });
    try {
      await withApis(a);
      assert.equal((await a.admin('GET', '/svc/reload/group')).status, 200);
      // The group reload reaches B through Redis pub/sub: wait for it to serve the API.
      await waitFor('the API on B', async () =>
        (await status(b, '/k/x', 'shared')) === 403 ? true : undefined,
      );
      assert.equal(await status(b, '/k/x', 'shared'), 403, 'unknown (and remembered as unknown) on B');
      await a.admin('POST', '/svc/policies', { id: 'sp', name: 'sp', access_rights: rights('k') });
      await a.admin('POST', '/svc/keys/shared', { apply_policies: ['sp'] });
      await waitFor(
        'the key to work on B',
        async () => ((await status(b, '/k/x', 'shared')) === 200 ? true : undefined),
        1000,
      );
      await a.admin('PUT', '/svc/policies/sp', { name: 'sp', state: 'draft', access_rights: rights('k') });
      await waitFor(
        'the draft policy to disable the key on B',
        async () => ((await status(b, '/k/x', 'shared')) === 403 ? true : undefined),
        1000,
      );
      const res = await b.request({ path: '/k/x', headers: { authorization: 'shared' } });
      assert.deepEqual(res.json, { error: 'Key is inactive, please renew' });
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('--workers 2 on the files store: a password change is honoured at once by every worker', async () => {
    const gw = await spawnWorkers('svc-gw-workers-');
    try {
      await withApis(gw);
      await gw.admin('POST', '/svc/keys/erin', {
        basic_auth_data: { password: 'one' },
        access_rights: rights('b'),
      });
      // Fresh connections reach both workers; each caches the verified password.
      for (let i = 0; i < 6; i++) assert.equal(await status(gw, '/b/x', basicAuth('erin', 'one')), 200);
      await gw.admin('PUT', '/svc/keys/erin', {
        basic_auth_data: { password: 'two' },
        access_rights: rights('b'),
      });
      for (let i = 0; i < 6; i++) {
        assert.equal(await status(gw, '/b/x', basicAuth('erin', 'one')), 401, `old password, request ${i}`);
        assert.equal(await status(gw, '/b/x', basicAuth('erin', 'two')), 200, `new password, request ${i}`);
      }
    } finally {
      await gw.stop();
    }
  });
});
