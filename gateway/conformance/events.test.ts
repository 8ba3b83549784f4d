/**
 * Events fired by the limits and by authentication (RateLimitExceeded, QuotaExceeded,
 * TriggerExceeded, AuthFailure, KeyExpired) reach an API's webhook handler with their payload;
 * a key's own trigger limits replace the global one.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { waitFor } from '../../lib/testing/wait.ts';
import { useEcho } from '../testing/echo.ts';
import { keyed, startGateway } from '../testing/harness.ts';
import { addKey, call, right, statuses } from '../testing/limits.ts';
import { listenLocal } from '../testing/servers.ts';

const echo = useEcho();

describe('events fired by limits and authentication', () => {
  test('RateLimitExceeded, QuotaExceeded, TriggerExceeded, AuthFailure and KeyExpired reach a webhook with their payload', async () => {
    const received: Record<string, unknown>[] = [];
    const hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body) as Record<string, unknown>);
        res.end('ok');
      });
    });
    const url = `${await listenLocal(hook)}/events`;
    const handlers = Object.fromEntries(
      ['RatelimitExceeded', 'QuotaExceeded', 'TriggerExceeded', 'AuthFailure', 'KeyExpired'].map((e) => [
        e,
        [{ handler_name: 'eh_web_hook_handler', handler_meta: { target_path: url, method: 'POST' } }],
      ]),
    );
    const gw = await startGateway({
      argv: [
        '--monitor-enable-trigger-monitors',
        '--monitor-user-keys',
        '--monitor-global-trigger-limit',
        '50',
      ],
    });
    try {
      await gw.addApi(keyed('ev', '/ev/', echo().url, { event_handlers: { events: handlers } }));
      await gw.reload();
      await addKey(gw, 'ev-rate', { rate: 1, per: 60, access_rights: right('ev') });
      await addKey(gw, 'ev-quota', { quota_max: 2, quota_renewal_rate: 60, access_rights: right('ev') });
      await addKey(gw, 'ev-old', { expires: 1, access_rights: right('ev') });
      assert.deepEqual(await statuses(gw, '/ev/x', 'ev-rate', 2), [200, 429]);
      assert.deepEqual(await statuses(gw, '/ev/x', 'ev-quota', 3), [200, 200, 403]);
      assert.equal((await call(gw, '/ev/x', 'nobody')).status, 403);
      assert.equal((await call(gw, '/ev/x', 'ev-old')).status, 401);
      await waitFor('five events', () => (received.length >= 5 ? true : undefined));
      const byEvent = new Map(received.map((e) => [e.event, e]));
      assert.deepEqual([...byEvent.keys()].sort(), [
        'AuthFailure',
        'KeyExpired',
        'QuotaExceeded',
        'RateLimitExceeded',
        'TriggerExceeded',
      ]);
      const quota = byEvent.get('QuotaExceeded');
      assert.ok(quota !== undefined);
      assert.equal(quota.api_id, 'ev');
      assert.equal(quota.path, '/ev/x');
      assert.equal(quota.origin, '127.0.0.1');
      assert.match(String(quota.key), /^[0-9a-f]{64}$/, 'the hashed key, never the key');
      assert.ok(!JSON.stringify(received).includes('ev-quota'));
      assert.equal(byEvent.get('AuthFailure')?.key, '');
      // A key's own trigger limits replace the global one.
      received.length = 0;
      await addKey(gw, 'ev-own', {
        quota_max: 10,
        quota_renewal_rate: 60,
        monitor: { trigger_limits: [20] },
        access_rights: right('ev'),
      });
      assert.deepEqual(await statuses(gw, '/ev/x', 'ev-own', 2), [200, 200]);
      await waitFor('the trigger event', () =>
        received.some((e) => e.event === 'TriggerExceeded') ? true : undefined,
      );
      assert.match(String(received.find((e) => e.event === 'TriggerExceeded')?.message), /20% of 10/);
    } finally {
      await gw.stop();
      hook.close();
    }
  });
});
