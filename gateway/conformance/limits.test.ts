/**
 * Rate limits, throttling and quotas, as the seed's tables say (Throttled request, Quota counter,
 * Limits, Quota rules), with real listeners. Long windows and periods run on an injected clock;
 * throttling runs on real timers (1 s intervals) and is timed with a tolerance.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../../lib/log.ts';
import { merge } from '../../lib/testing/merge.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { MemoryCounters } from '../limits/memory.ts';
import { keyIdOf } from '../sessions/credentials.ts';
import { RedisCounters } from '../limits/redis.ts';
import { useEcho } from '../testing/echo.ts';
import {
  keyed,
  keyless,
  spawnGateway,
  startGateway,
  type GatewayClient,
  type InProcessGateway,
} from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';
import { oasDocument, requiring } from '../../schemas/testing.ts';

const right = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  [id]: { api_id: id, versions: ['Default'], ...extra },
});

/** An OAS API protected by an auth token in `Authorization`, with `middleware.global` set to `global`. */
function oasKeyed(id: string, listenPath: string, target: string, global: Record<string, unknown>): unknown {
  const [ext, rest] = requiring('token', { type: 'apiKey', in: 'header', name: 'Authorization' });
  return oasDocument({ id, listenPath, target, strip: true }, merge(ext, { middleware: { global } }), rest);
}

/** Access to an OAS API (its one version is ""). */
const oasRight = (id: string): Record<string, unknown> => ({ [id]: { api_id: id, versions: [''] } });

const echo = useEcho();

async function call(
  gw: GatewayClient,
  path: string,
  key: string,
  method = 'GET',
): Promise<{ status: number; error?: string; headers: Record<string, unknown> }> {
  const res = await gw.request({ path, method, headers: { authorization: key } });
  const error = (res.json as { error?: string } | undefined)?.error;
  return { status: res.status, headers: res.headers, ...(error === undefined ? {} : { error }) };
}

async function statuses(gw: GatewayClient, path: string, key: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(gw, path, key)).status);
  return out;
}

async function addKey(
  gw: GatewayClient,
  key: string,
  body: Record<string, unknown>,
  query = '',
): Promise<void> {
  const res = await gw.admin('POST', `/svc/keys/${key}${query}`, body);
  assert.equal(res.status, 200, res.text);
}

describe('limits on an injected clock', () => {
  let now = Date.UTC(2026, 0, 1);
  const clock = (): number => now;
  let gw: InProcessGateway;
  before(async () => {
    gw = await startGateway({ now: clock, counters: new MemoryCounters({ now: clock }) });
    for (const api of [
      keyed('rl', '/rl/', echo().url),
      keyed('rl2', '/rl2/', echo().url),
      keyed('norl', '/norl/', echo().url, { disable_rate_limit: true, disable_quota: true }),
      keyed('q', '/q/', echo().url),
      keyed('qkeep', '/qkeep/', echo().url, { dont_set_quota_on_create: true }),
      keyed('ep', '/ep/', echo().url),
      keyless('open', '/open/', echo().url, { global_rate_limit: { rate: 2, per: 60 } }),
      keyless('open-off', '/open-off/', echo().url, {
        global_rate_limit: { rate: 2, per: 60, disabled: true },
      }),
      keyed('orgq', '/orgq/', echo().url, { org_id: 'acme', enforce_org_quotas: true }),
    ]) {
      await gw.addApi(api);
    }
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
  after(async () => {
    await gw.stop();
  });

  test('OAS middleware.global: skipQuota and skipRateLimit skip the limits, skipQuotaReset keeps the count', async () => {
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

  test('rate limit: `rate` per `per`, then 429; sliding, not fixed', async () => {
    await addKey(gw, 'r1', { rate: 2, per: 10, access_rights: right('rl') });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 1), [200]);
    now += 5_000;
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 2), [200, 429]);
    const refused = await call(gw, '/rl/x', 'r1');
    assert.deepEqual([refused.status, refused.error], [429, 'Rate Limit Exceeded']);
    now += 5_001; // the first request has left the window; the second has not
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 2), [200, 429]);
    now += 5_000;
    assert.deepEqual(await statuses(gw, '/rl/x', 'r1', 1), [200]);
  });

  test('rate limit: -1 disables it; disable_rate_limit on the API skips it', async () => {
    await addKey(gw, 'r-off', { rate: -1, per: -1, access_rights: right('rl') });
    await addKey(gw, 'r-api-off', { rate: 1, per: 60, access_rights: right('norl') });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r-off', 5), [200, 200, 200, 200, 200]);
    assert.deepEqual(await statuses(gw, '/norl/x', 'r-api-off', 3), [200, 200, 200]);
  });

  test('0 is refused when written (400 naming the field); one stored anyway allows no requests', async () => {
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

  test("rate limit: a per-API limit counts apart from the key's own", async () => {
    await addKey(gw, 'r-per-api', {
      rate: 2,
      per: 60,
      access_rights: { ...right('rl', { limit: { rate: 1, per: 60 } }), ...right('rl2') },
    });
    assert.deepEqual(await statuses(gw, '/rl/x', 'r-per-api', 2), [200, 429]);
    assert.deepEqual(await statuses(gw, '/rl2/x', 'r-per-api', 3), [200, 200, 429]);
  });

  test('rate limit from a policy', async () => {
    const p = await gw.admin('POST', '/svc/policies', {
      id: 'pol-rl',
      name: 'rl',
      rate: 1,
      per: 60,
      access_rights: right('rl2'),
    });
    assert.equal(p.status, 200, p.text);
    await addKey(gw, 'r-pol', { apply_policies: ['pol-rl'] });
    assert.deepEqual(await statuses(gw, '/rl2/x', 'r-pol', 2), [200, 429]);
  });

  test('API-wide rate limit, keyless API: 429 API Rate Limit Exceeded; disabled is off', async () => {
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

  test('per-endpoint limits: per method and path, apart from the rest', async () => {
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

  test('quota: quota_max per period, then 403 Quota exceeded; headers; the period renews at the next request after it', async () => {
    await addKey(gw, 'q1', { quota_max: 3, quota_renewal_rate: 3600, access_rights: right('q') });
    const start = now;
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await call(gw, '/q/x', 'q1'));
    assert.deepEqual(
      seen.map((r) => [r.status, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]),
      [
        [200, '3', '2'],
        [200, '3', '1'],
        [200, '3', '0'],
        [403, '3', '0'],
      ],
    );
    assert.equal(seen[3]?.error, 'Quota exceeded');
    assert.equal(seen[0]?.headers['x-ratelimit-reset'], String(Math.ceil((start + 3_600_000) / 1000)));
    const key = (await gw.admin('GET', '/svc/keys/q1')).json as {
      quota_remaining: number;
      quota_renews: number;
    };
    assert.equal(key.quota_remaining, 0);
    assert.equal(key.quota_renews, Math.ceil((start + 3_600_000) / 1000));
    now += 3_599_999;
    assert.equal((await call(gw, '/q/x', 'q1')).status, 403);
    now += 1;
    // No scheduled reset: nothing changes until the next request, which starts a new period.
    const renewed = await call(gw, '/q/x', 'q1');
    assert.equal(renewed.status, 200);
    assert.equal(renewed.headers['x-ratelimit-remaining'], '2');
  });

  test('quota: manual reset, reset on update, ?suppress_reset=1 and dont_set_quota_on_create keep the count', async () => {
    await addKey(gw, 'q2', { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('q') });
    assert.deepEqual(await statuses(gw, '/q/x', 'q2', 2), [200, 403]);
    const reset = await gw.admin('POST', '/svc/keys/q2/reset');
    assert.equal((reset.json as { action: string }).action, 'reset');
    assert.deepEqual(await statuses(gw, '/q/x', 'q2', 2), [200, 403]);
    const body = { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('q') };
    assert.equal((await gw.admin('PUT', '/svc/keys/q2?suppress_reset=1', body)).status, 200);
    assert.equal((await call(gw, '/q/x', 'q2')).status, 403, 'suppressed: the count stays');
    assert.equal((await gw.admin('PUT', '/svc/keys/q2', body)).status, 200);
    assert.equal((await call(gw, '/q/x', 'q2')).status, 200, 'an update starts a new period');
    await addKey(gw, 'q3', { quota_max: 1, quota_renewal_rate: 3600, access_rights: right('qkeep') });
    assert.deepEqual(await statuses(gw, '/qkeep/x', 'q3', 2), [200, 403]);
    assert.equal(
      (
        await gw.admin('PUT', '/svc/keys/q3', {
          quota_max: 1,
          quota_renewal_rate: 3600,
          access_rights: right('qkeep'),
        })
      ).status,
      200,
    );
    assert.equal((await call(gw, '/qkeep/x', 'q3')).status, 403, 'dont_set_quota_on_create: the count stays');
    assert.equal((await gw.admin('POST', '/svc/keys/nope/reset')).status, 404);
  });

  test('quota: raising quota_max keeps the count; lowering it below the count refuses; a new period length waits for the next period', async () => {
    const body = (max: number, renewal = 3600): Record<string, unknown> => ({
      quota_max: max,
      quota_renewal_rate: renewal,
      access_rights: right('q'),
    });
    await addKey(gw, 'q4', body(2));
    assert.deepEqual(await statuses(gw, '/q/x', 'q4', 3), [200, 200, 403]);
    await gw.admin('PUT', '/svc/keys/q4?suppress_reset=1', body(4));
    assert.deepEqual(await statuses(gw, '/q/x', 'q4', 2), [200, 403], '2 used (+1 refused) of 4: one more');
    await gw.admin('PUT', '/svc/keys/q4?suppress_reset=1', body(1, 60));
    assert.equal((await call(gw, '/q/x', 'q4')).status, 403);
    now += 60_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 403, 'the running period keeps its length');
    now += 3_600_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 200, 'a new period');
    now += 60_000;
    assert.equal((await call(gw, '/q/x', 'q4')).status, 200, 'of the new length');
  });

  test('quota: -1 is unlimited; disable_quota skips it; a per-API quota counts apart', async () => {
    await addKey(gw, 'q5', { quota_max: -1, quota_renewal_rate: 60, access_rights: right('q') });
    assert.deepEqual(await statuses(gw, '/q/x', 'q5', 3), [200, 200, 200]);
    await addKey(gw, 'q6', { quota_max: 1, quota_renewal_rate: 60, access_rights: right('norl') });
    assert.deepEqual(await statuses(gw, '/norl/x', 'q6', 3), [200, 200, 200]);
    await addKey(gw, 'q7', {
      quota_max: 1,
      quota_renewal_rate: 3600,
      access_rights: {
        ...right('q', { limit: { quota_max: 2, quota_renewal_rate: 3600 } }),
        ...right('qkeep'),
      },
    });
    assert.deepEqual(await statuses(gw, '/q/x', 'q7', 3), [200, 200, 403]);
    assert.deepEqual(await statuses(gw, '/qkeep/x', 'q7', 2), [200, 403]);
    const key = (await gw.admin('GET', '/svc/keys/q7')).json as {
      quota_remaining: number;
      access_rights: { q: { limit: { quota_remaining: number } } };
    };
    assert.equal(key.quota_remaining, 0);
    assert.equal(key.access_rights.q.limit.quota_remaining, 0);
  });

  test('quota: never throttled', async () => {
    await addKey(gw, 'q8', {
      quota_max: 1,
      quota_renewal_rate: 60,
      throttle_interval: 5,
      throttle_retry_limit: 5,
      access_rights: right('q'),
    });
    assert.deepEqual(await statuses(gw, '/q/x', 'q8', 2), [200, 403]);
  });

  test('organisation quota: every key of the organisation counts together', async () => {
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

  test('limits that miss their other half are refused by name', async () => {
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

describe('rate limit headers', () => {
  test('--rate-limit-headers rate: the rate limit, on 200 and on 429', async () => {
    const gw = await startGateway({ argv: ['--rate-limit-headers', 'rate'] });
    try {
      await gw.addApi(keyed('h', '/h/', echo().url));
      await gw.reload();
      await addKey(gw, 'h1', {
        rate: 2,
        per: 60,
        quota_max: 100,
        quota_renewal_rate: 60,
        access_rights: right('h'),
      });
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push(await call(gw, '/h/x', 'h1'));
      assert.deepEqual(
        seen.map((r) => [r.status, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]),
        [
          [200, '2', '1'],
          [200, '2', '0'],
          [429, '2', '0'],
        ],
      );
      const reset = Number(seen[2]?.headers['x-ratelimit-reset']);
      assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61, `reset ${reset}`);
    } finally {
      await gw.stop();
    }
  });
});

describe('throttling (real timers)', () => {
  let gw: InProcessGateway;
  before(async () => {
    gw = await startGateway();
    await gw.addApi(keyed('t', '/t/', echo().url));
    await gw.reload();
  });
  after(async () => {
    await gw.stop();
  });

  const timed = async (key: string): Promise<{ status: number; ms: number }> => {
    const t0 = performance.now();
    const { status } = await call(gw, '/t/x', key);
    return { status, ms: performance.now() - t0 };
  };

  test('over the limit with throttling: waits throttle_interval, then passes once there is room', async () => {
    await addKey(gw, 't1', {
      rate: 1,
      per: 2,
      throttle_interval: 1,
      throttle_retry_limit: 3,
      access_rights: right('t'),
    });
    assert.equal((await timed('t1')).status, 200);
    const second = await timed('t1');
    assert.equal(second.status, 200);
    assert.ok(second.ms >= 950 && second.ms < 3_500, `waited ${second.ms} ms`);
  });

  test('retries used up: 429 after about throttle_interval x throttle_retry_limit', async () => {
    await addKey(gw, 't2', {
      rate: 1,
      per: 60,
      throttle_interval: 1,
      throttle_retry_limit: 2,
      access_rights: right('t'),
    });
    assert.equal((await timed('t2')).status, 200);
    const refused = await timed('t2');
    assert.equal(refused.status, 429);
    assert.ok(refused.ms >= 1_900 && refused.ms < 4_000, `waited ${refused.ms} ms`);
  });

  test('throttling off (either value below 0): 429 at once', async () => {
    // Refused when written (the limits rule); stored anyway, throttling is off.
    await gw.store.put('keys', keyIdOf('t3'), {
      rate: 1,
      per: 60,
      throttle_interval: 1,
      throttle_retry_limit: -1,
      access_rights: right('t'),
    });
    assert.equal((await timed('t3')).status, 200);
    const refused = await timed('t3');
    assert.equal(refused.status, 429);
    assert.ok(refused.ms < 900, `answered in ${refused.ms} ms`);
  });
});

describe('limits across nodes and workers', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.stop();
  });

  test('two gateway processes on one Redis: 200 concurrent requests against rate 50 admit exactly 50; the same for a quota', async () => {
    const args = ['--store', redis.url, '--redis-key-prefix', 'two:', '--workers', '1'];
    const a = await spawnGateway(args);
    const b = await spawnGateway(args);
    try {
      await a.addApi(keyed('x', '/x/', echo().url));
      assert.equal((await a.admin('GET', '/svc/reload/group')).status, 200);
      await waitFor('the API on the second process', async () =>
        (await b.request({ path: '/x/y' })).status === 401 ? true : undefined,
      );
      await addKey(a, 'exact-rate', { rate: 50, per: 60, access_rights: right('x') });
      await addKey(a, 'exact-quota', { quota_max: 50, quota_renewal_rate: 60, access_rights: right('x') });
      for (const key of ['exact-rate', 'exact-quota']) {
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            (i % 2 === 0 ? a : b).request({ path: '/x/y', headers: { authorization: key } }),
          ),
        );
        assert.equal(results.filter((r) => r.status === 200).length, 50, key);
      }
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('a gateway restart keeps the counters held in Redis', async () => {
    const args = ['--store', redis.url, '--redis-key-prefix', 'restart:', '--workers', '1'];
    const first = await spawnGateway(args);
    await first.addApi(keyed('rs', '/rs/', echo().url));
    await first.reload();
    await addKey(first, 'kept-count', { quota_max: 2, quota_renewal_rate: 3600, access_rights: right('rs') });
    assert.deepEqual(await statuses(first, '/rs/x', 'kept-count', 2), [200, 200]);
    await first.stop();
    const second = await spawnGateway(args);
    try {
      assert.equal((await call(second, '/rs/x', 'kept-count')).status, 403);
    } finally {
      await second.stop();
    }
  });

  test('--workers 2 on the files store: the workers share one counter', async () => {
    const gw = await spawnGateway([
      '--workers',
      '2',
      '--data-dir',
      mkdtempSync(join(tmpdir(), 'svc-gw-limits-')),
    ]);
    try {
      await gw.addApi(keyed('w', '/w/', echo().url));
      await gw.reload();
      await addKey(gw, 'shared', { rate: 5, per: 60, access_rights: right('w') });
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          gw.request({ path: '/w/x', fresh: true, headers: { authorization: 'shared' } }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 5);
    } finally {
      await gw.stop();
    }
  });

  test('Redis away: limited requests get 503 (or pass with --limits-fail-open); unlimited ones are served', async () => {
    const r = await startRedis();
    const closed = await startGateway({
      counters: new RedisCounters(r.url, { prefix: 'away:', log: silentLogger() }),
    });
    const open = await startGateway({
      argv: ['--limits-fail-open'],
      counters: new RedisCounters(r.url, { prefix: 'away2:', log: silentLogger() }),
    });
    try {
      for (const gw of [closed, open]) {
        await gw.addApi(keyed('z', '/z/', echo().url));
        await gw.reload();
        await addKey(gw, 'limited', { rate: 100, per: 60, access_rights: right('z') });
        await addKey(gw, 'free', { access_rights: right('z') });
        assert.equal((await call(gw, '/z/x', 'limited')).status, 200);
      }
      await r.stop();
      const refused = await call(closed, '/z/x', 'limited');
      assert.deepEqual([refused.status, refused.error], [503, 'Limits are unavailable, try again later']);
      assert.equal((await call(closed, '/z/x', 'free')).status, 200);
      assert.equal((await call(open, '/z/x', 'limited')).status, 200);
    } finally {
      await closed.stop();
      await open.stop();
    }
  });
});

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
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/events`;
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
