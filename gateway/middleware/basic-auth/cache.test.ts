/**
 * The verified-credentials cache of basic authentication through a real listener and real Redis:
 * a password changed in the store without the gateway being told (written straight into Redis,
 * as a second node or a restore could) is honoured once `basic_auth.cache_ttl` has passed, and
 * at once with `disable_caching`; a change made through any node's management API is honoured at
 * once on every node, whatever the TTL (GATEWAY-BEHAVIOUR §3). The gateways' clock is injected,
 * so the TTL passes without waiting.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { silentLogger } from '../../../lib/log.ts';
import { waitFor } from '../../../lib/testing/wait.ts';
import { hashPassword, keyIdOf } from '../../sessions/credentials.ts';
import { RedisStore } from '../../store/redis.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, startGateway, type InProcessGateway } from '../../testing/harness.ts';
import { startRedis, type TestRedis } from '../../testing/redis-server.ts';
import { stopAll } from '../../../lib/testing/teardown.ts';
import { basicAuth } from '../../testing/client.ts';

const basic = (user: string, password: string): Record<string, string> => ({
  authorization: basicAuth(user, password),
});

let redis: TestRedis;
let echo: Echo;
let direct: Redis;
before(async () => {
  redis = await startRedis();
  echo = await startEcho('echo');
  direct = new Redis(redis.url);
});
after(async () => {
  try {
    direct.disconnect();
  } finally {
    await stopAll(echo, redis);
  }
});

let prefixN = 0;

/** Two gateway nodes on one Redis prefix, sharing a clock the test moves. */
async function nodes(
  argv: string[],
  basicAuth: Record<string, unknown>,
): Promise<{ a: InProcessGateway; b: InProcessGateway; prefix: string; clock: { t: number } }> {
  const prefix = `bacache${prefixN++}:`;
  const clock = { t: Date.now() };
  const start = (): Promise<InProcessGateway> =>
    startGateway({
      argv,
      store: new RedisStore(redis.url, { prefix, log: silentLogger() }),
      now: () => clock.t,
    });
  const a = await start();
  const b = await start();
  await a.addApi(
    keyed('ba', '/ba/', echo.url, { use_basic_auth: true, org_id: 'acme', basic_auth: basicAuth }),
  );
  await a.reload();
  await b.reload();
  const res = await a.admin('POST', '/svc/keys/alice', {
    org_id: 'acme',
    basic_auth_data: { password: 'old-pass' },
    access_rights: { ba: { api_id: 'ba', api_name: 'ba', versions: ['Default'] } },
  });
  assert.equal(res.status, 200, res.text);
  return { a, b, prefix, clock };
}

/** Changes alice's password in Redis itself: no management call, no group message. */
async function changeBehindTheGatewaysBack(prefix: string, password: string): Promise<void> {
  const id = keyIdOf('alice');
  const text = await direct.hget(`${prefix}keys`, id);
  assert.ok(text !== null, 'alice is stored in Redis');
  const stored = JSON.parse(text) as { basic_auth_data: { password: string } };
  stored.basic_auth_data.password = await hashPassword(password);
  await direct.hset(`${prefix}keys`, id, JSON.stringify(stored));
}

const status = async (gw: InProcessGateway, password: string): Promise<number> =>
  (await gw.request({ path: '/ba/x', headers: basic('alice', password) })).status;

for (const fastPath of [true, false]) {
  describe(`basic-auth cache (fast path ${fastPath ? 'on' : 'off'})`, () => {
    const argv = [`--fast-path=${String(fastPath)}`];

    test('cache_ttl: a password changed in the store is honoured once the TTL has passed', async () => {
      const { a, b, prefix, clock } = await nodes(argv, { cache_ttl: 30 });
      try {
        assert.equal(await status(a, 'old-pass'), 200);
        await changeBehindTheGatewaysBack(prefix, 'new-pass');
        clock.t += 10_000;
        assert.equal(await status(a, 'old-pass'), 200, 'within the TTL the verified password is cached');
        clock.t += 21_000;
        assert.equal(await status(a, 'old-pass'), 401, 'after the TTL the old password is refused');
        assert.equal(await status(a, 'new-pass'), 200, 'after the TTL the new password works');
        assert.equal(await status(b, 'old-pass'), 401, 'on the other node too');
        assert.equal(await status(b, 'new-pass'), 200);
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    test('disable_caching: a password changed in the store is honoured at once', async () => {
      const { a, b, prefix } = await nodes(argv, { disable_caching: true });
      try {
        assert.equal(await status(a, 'old-pass'), 200);
        assert.equal(await status(b, 'old-pass'), 200);
        await changeBehindTheGatewaysBack(prefix, 'new-pass');
        assert.equal(await status(a, 'old-pass'), 401);
        assert.equal(await status(a, 'new-pass'), 200);
        assert.equal(await status(b, 'old-pass'), 401);
        assert.equal(await status(b, 'new-pass'), 200);
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    test('a password changed through one node’s management API is honoured at once on every node', async () => {
      const { a, b } = await nodes(argv, { cache_ttl: 3600 });
      try {
        assert.equal(await status(a, 'old-pass'), 200);
        assert.equal(await status(b, 'old-pass'), 200);
        const res = await b.admin('PUT', '/svc/keys/alice', {
          org_id: 'acme',
          basic_auth_data: { password: 'api-pass' },
          access_rights: { ba: { api_id: 'ba', api_name: 'ba', versions: ['Default'] } },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(await status(b, 'old-pass'), 401);
        // Node a hears of it through Redis pub/sub: a moment later.
        await waitFor('node a to refuse the old password', async () => (await status(a, 'old-pass')) === 401);
        assert.equal(await status(a, 'api-pass'), 200);
      } finally {
        await a.stop();
        await b.stop();
      }
    });
  });
}
