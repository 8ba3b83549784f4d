/**
 * The organisation's quota with real listeners: every key of the organisation counts together
 * against `/svc/org/keys/{org_id}`, 403 with the reference's message beyond it, a reset starts a
 * new period, no organisation session means no limit. On an injected clock.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyed } from '../../testing/harness.ts';
import { addKey, call, right, useClockedGateway, statuses } from '../../testing/limits.ts';

const echo = useEcho();

describe('organisation quota on an injected clock', () => {
  const now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [keyed('orgq', '/orgq/', echo().url, { org_id: 'acme', enforce_org_quotas: true })],
  );

  test('organisation quota: every key of the organisation counts together', async () => {
    const gw = gateway();
    const org = await gw.admin('POST', '/svc/org/keys/acme', { quota_max: 3, quota_renewal_rate: 3600 });
    assert.equal(org.status, 200, org.text);
    await addKey(gw, 'acme-1', { org_id: 'acme', access_rights: right('orgq') });
    await addKey(gw, 'acme-2', {
      org_id: 'acme',
      quota_max: 100,
      quota_renewal_rate: 3600,
      access_rights: right('orgq'),
    });
    assert.deepEqual(await statuses(gw, '/orgq/x', 'acme-1', 2), [200, 200]);
    const third = await call(gw, '/orgq/x', 'acme-2');
    assert.equal(third.status, 200);
    const refused = await call(gw, '/orgq/x', 'acme-2');
    assert.deepEqual(
      [refused.status, refused.error],
      [403, 'This organisation quota has been exceeded, please contact your account manager'],
    );
    const state = (await gw.admin('GET', '/svc/org/keys/acme')).json as { quota_remaining: number };
    assert.equal(state.quota_remaining, 0);
    assert.equal(
      (await gw.admin('PUT', '/svc/org/keys/acme?reset_quota=1', { quota_max: 3, quota_renewal_rate: 3600 }))
        .status,
      200,
    );
    assert.equal((await call(gw, '/orgq/x', 'acme-1')).status, 200, 'a new period after the reset');
    assert.equal((await gw.admin('DELETE', '/svc/org/keys/acme')).status, 200);
    assert.deepEqual(
      await statuses(gw, '/orgq/x', 'acme-1', 4),
      [200, 200, 200, 200],
      'no organisation session: no limit',
    );
    assert.equal((await gw.admin('GET', '/svc/org/keys/acme')).status, 404);
  });
});
