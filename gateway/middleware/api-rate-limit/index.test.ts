/**
 * The API-wide rate limit (`global_rate_limit`) with real listeners: all clients of a keyless API
 * together, 429 `API Rate Limit Exceeded` beyond it, `disabled` turns it off, the window passes.
 * On an injected clock.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyless } from '../../testing/harness.ts';
import { useClockedGateway } from '../../testing/limits.ts';

const echo = useEcho();

describe('API-wide rate limit on an injected clock', () => {
  let now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [
      keyless('open', '/open/', echo().url, { global_rate_limit: { rate: 2, per: 60 } }),
      keyless('open-off', '/open-off/', echo().url, {
        global_rate_limit: { rate: 2, per: 60, disabled: true },
      }),
    ],
  );

  test('API-wide rate limit, keyless API: 429 API Rate Limit Exceeded; disabled is off', async () => {
    const gw = gateway();
    const got = [];
    for (let i = 0; i < 3; i++) got.push(await gw.request({ path: '/open/x' }));
    assert.deepEqual(
      got.map((r) => r.status),
      [200, 200, 429],
    );
    assert.deepEqual(got[2]?.json, { error: 'API Rate Limit Exceeded' });
    for (let i = 0; i < 3; i++) assert.equal((await gw.request({ path: '/open-off/x' })).status, 200);
    now += 60_000;
    assert.equal((await gw.request({ path: '/open/x' })).status, 200);
  });
});
