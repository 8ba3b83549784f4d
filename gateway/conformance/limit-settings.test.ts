/**
 * Limit settings across the limits (rate limit, quota, organisation quota, throttling, per-API
 * and per-endpoint limits, the API-wide rate limit): the OAS `middleware.global` switches that
 * skip them, a 0 refused when written and taken at its word when stored anyway, and the limits
 * that miss their other half refused by name. On an injected clock.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { merge } from '../../lib/testing/merge.ts';
import { keyIdOf } from '../sessions/credentials.ts';
import { useEcho } from '../testing/echo.ts';
import { keyed, keyless } from '../testing/harness.ts';
import { addKey, call, right, useClockedGateway, statuses } from '../testing/limits.ts';
import { oasDocument, requiring } from '../../schemas/testing.ts';

/** An OAS API protected by an auth token in `Authorization`, with `middleware.global` set to `global`. */
function oasKeyed(id: string, listenPath: string, target: string, global: Record<string, unknown>): unknown {
  const [ext, rest] = requiring('token', { type: 'apiKey', in: 'header', name: 'Authorization' });
  return oasDocument({ id, listenPath, target, strip: true }, merge(ext, { middleware: { global } }), rest);
}

/** Access to an OAS API (its one version is ""). */
const oasRight = (id: string): Record<string, unknown> => ({ [id]: { api_id: id, versions: [''] } });

const echo = useEcho();

describe('limit settings on an injected clock', () => {
  const now = Date.UTC(2026, 0, 1);
  const gateway = useClockedGateway(
    () => now,
    () => [keyed('rl', '/rl/', echo().url), keyed('q', '/q/', echo().url)],
  );
  before(async () => {
    const gw = gateway();
    for (const [id, global] of [
      ['oq', {}],
      ['oskip', { skipQuota: true, skipRateLimit: true }],
      ['okeep', { skipQuotaReset: true }],
    ] as const) {
      const res = await gw.admin('POST', '/svc/apis/oas', oasKeyed(id, `/${id}/`, echo().url, global));
      assert.equal(res.status, 200, res.text);
    }
    await gw.reload();
  });

  test('OAS middleware.global: skipQuota and skipRateLimit skip the limits, skipQuotaReset keeps the count', async () => {
    const gw = gateway();
    const limited = (api: string): Record<string, unknown> => ({
      rate: 1,
      per: 60,
      quota_max: 1,
      quota_renewal_rate: 3600,
      access_rights: oasRight(api),
    });
    await addKey(gw, 'oas-q', limited('oq'));
    assert.deepEqual(await statuses(gw, '/oq/x', 'oas-q', 2), [200, 429], 'without a switch: limited');
    await addKey(gw, 'oas-skip', limited('oskip'));
    assert.deepEqual(await statuses(gw, '/oskip/x', 'oas-skip', 3), [200, 200, 200], 'skipped');
    const body = { quota_max: 1, quota_renewal_rate: 3600, access_rights: oasRight('okeep') };
    await addKey(gw, 'oas-keep', body);
    assert.deepEqual(await statuses(gw, '/okeep/x', 'oas-keep', 2), [200, 403]);
    assert.equal((await gw.admin('PUT', '/svc/keys/oas-keep', body)).status, 200);
    assert.equal((await call(gw, '/okeep/x', 'oas-keep')).status, 403, 'skipQuotaReset: the count stays');
    const classic = (await gw.admin('GET', '/svc/apis/okeep')).json as Record<string, unknown>;
    assert.equal(classic.dont_set_quota_on_create, true, 'shown in the classic form');
  });

  test('0 is refused when written (400 naming the field); one stored anyway allows no requests', async () => {
    const gw = gateway();
    const rows: [string, Record<string, unknown>, RegExp][] = [
      [
        '/svc/keys/r-zero',
        { rate: 0, per: 0, access_rights: right('rl') },
        /rate: Invalid value: rate 0 allows no requests.*-1 to disable/,
      ],
      [
        '/svc/keys/q-zero',
        { quota_max: 0, quota_renewal_rate: 60, access_rights: right('q') },
        /quota_max: Invalid value: quota_max 0 allows no requests/,
      ],
      [
        '/svc/policies',
        { id: 'p-zero', name: 'zero', rate: 0, per: 60, access_rights: right('rl') },
        /rate: Invalid value: rate 0 allows no requests/,
      ],
      [
        '/svc/org/keys/zero-org',
        { quota_max: 0, quota_renewal_rate: 60 },
        /quota_max: Invalid value: quota_max 0 allows no requests/,
      ],
    ];
    for (const [path, body, reason] of rows) {
      const res = await gw.admin('POST', path, body);
      assert.equal(res.status, 400, `${path} ${res.text}`);
      assert.match((res.json as { message: string }).message, reason);
    }
    // Written before the rule, or straight into the store: taken at its word, never as "off".
    await gw.store.put('keys', keyIdOf('r-zero-stored'), { rate: 0, per: 0, access_rights: right('rl') });
    await gw.store.put('keys', keyIdOf('q-zero-stored'), {
      quota_max: 0,
      quota_renewal_rate: 60,
      access_rights: right('q'),
    });
    const rate = await call(gw, '/rl/x', 'r-zero-stored');
    assert.deepEqual([rate.status, rate.error], [429, 'Rate Limit Exceeded']);
    const quota = await call(gw, '/q/x', 'q-zero-stored');
    assert.deepEqual([quota.status, quota.error], [403, 'Quota exceeded']);
  });

  test('limits that miss their other half are refused by name', async () => {
    const gw = gateway();
    const rows: [Record<string, unknown>, RegExp][] = [
      [{ rate: 10 }, /per: Required value/],
      [{ per: 60 }, /rate: Required value/],
      [{ rate: -1, per: 60 }, /rate: Invalid value: per is 60 but rate is -1/],
      [{ quota_max: 10 }, /quota_renewal_rate: Required value/],
      [
        { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: -1 },
        /throttle_retry_limit: Invalid value/,
      ],
      [{ rate: 1, per: 1, throttle_retry_limit: 3 }, /throttle_interval: Invalid value/],
      [
        { access_rights: right('q', { limit: { rate: 1 } }) },
        /access_rights\["q"\]\.limit\.per: Required value/,
      ],
      [
        { access_rights: right('q', { endpoints: [{ path: '/a(', methods: [] }] }) },
        /endpoints\[0\]\.path: Invalid value/,
      ],
    ];
    for (const [body, reason] of rows) {
      const res = await gw.admin('POST', '/svc/keys', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match((res.json as { message: string }).message, reason);
    }
    const api = await gw.admin(
      'POST',
      '/svc/apis',
      keyless('grl', '/grl/', echo().url, { global_rate_limit: { rate: 5 } }),
    );
    assert.equal(api.status, 400);
    assert.match((api.json as { message: string }).message, /global_rate_limit\.per: Required value/);
  });
});
