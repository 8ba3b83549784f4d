/**
 * The key's per-endpoint rate limits with real listeners: per method and path, a trailing slash
 * the same endpoint, apart from other methods and paths. On an injected clock.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyed } from '../../testing/harness.ts';
import { addKey, call, right, useClockedGateway, statuses } from '../../testing/limits.ts';

const echo = useEcho();

describe('per-endpoint limits on an injected clock', () => {
  const now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [keyed('ep', '/ep/', echo().url)],
  );

  test('per-endpoint limits: per method and path, apart from the rest', async () => {
    const gw = gateway();
    await addKey(gw, 'r-ep', {
      access_rights: right('ep', {
        endpoints: [{ path: '/users', methods: [{ name: 'GET', limit: { rate: 1, per: 60 } }] }],
      }),
    });
    assert.deepEqual(await statuses(gw, '/ep/users', 'r-ep', 2), [200, 429]);
    assert.equal((await call(gw, '/ep/users/', 'r-ep')).status, 429, 'a trailing slash is the same endpoint');
    assert.equal((await call(gw, '/ep/users', 'r-ep', 'POST')).status, 200, 'another method');
    assert.deepEqual(await statuses(gw, '/ep/orders', 'r-ep', 3), [200, 200, 200], 'another path');
  });
});
