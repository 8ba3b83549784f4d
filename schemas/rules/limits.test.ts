import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { limitModes, limitVerdict, type LimitModes, type LimitValues } from './limits.ts';

/** One row: the values, the fields refused (path: type), the fields warned about, the modes when counting. */
const rows: [string, Partial<Record<keyof LimitValues, unknown>>, string[], string[], LimitModes][] = [
  ['nothing set: all off', {}, [], [], { rate: 'off', throttle: false, quota: 'off' }],
  [
    '-1 everywhere: all off',
    {
      rate: -1,
      per: -1,
      throttle_interval: -1,
      throttle_retry_limit: -1,
      quota_max: -1,
      quota_renewal_rate: -1,
    },
    [],
    [],
    { rate: 'off', throttle: false, quota: 'off' },
  ],
  ['a rate and its window', { rate: 10, per: 60 }, [], [], { rate: 'on', throttle: false, quota: 'off' }],
  [
    'rate 0: refused, allows no requests',
    { rate: 0, per: 60 },
    ['rate: Invalid'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  [
    'rate 0 and per 0',
    { rate: 0, per: 0 },
    ['rate: Invalid'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  ['per 0', { rate: 10, per: 0 }, ['per: Invalid'], [], { rate: 'closed', throttle: false, quota: 'off' }],
  [
    'a rate without its window',
    { rate: 10 },
    ['per: Required'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  [
    'a rate with its window off',
    { rate: 10, per: -1 },
    ['per: Invalid'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  [
    'a window without its rate',
    { per: 60 },
    ['rate: Required'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  [
    'a window with its rate off',
    { rate: -1, per: 60 },
    ['rate: Invalid'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
  [
    'throttling on',
    { rate: 1, per: 1, throttle_interval: 2, throttle_retry_limit: 3 },
    [],
    [],
    { rate: 'on', throttle: true, quota: 'off' },
  ],
  [
    'throttle interval without retries',
    { rate: 1, per: 1, throttle_interval: 2, throttle_retry_limit: -1 },
    ['throttle_retry_limit: Invalid'],
    [],
    { rate: 'on', throttle: false, quota: 'off' },
  ],
  [
    'throttle retries without interval',
    { rate: 1, per: 1, throttle_retry_limit: 3 },
    ['throttle_interval: Invalid'],
    [],
    { rate: 'on', throttle: false, quota: 'off' },
  ],
  [
    'retries without waiting (interval 0): a warning, throttling off',
    { rate: 1, per: 1, throttle_interval: 0, throttle_retry_limit: 3 },
    [],
    ['throttle_interval'],
    { rate: 'on', throttle: false, quota: 'off' },
  ],
  [
    'throttle values of 0: off, with warnings',
    { rate: 1, per: 1, throttle_interval: 0, throttle_retry_limit: 0 },
    [],
    ['throttle_interval', 'throttle_retry_limit'],
    { rate: 'on', throttle: false, quota: 'off' },
  ],
  [
    'throttling without a rate: off, with a warning',
    { throttle_interval: 1, throttle_retry_limit: 3 },
    [],
    [''],
    { rate: 'off', throttle: false, quota: 'off' },
  ],
  [
    'a quota and its period',
    { quota_max: 100, quota_renewal_rate: 3600 },
    [],
    [],
    { rate: 'off', throttle: false, quota: 'on' },
  ],
  [
    'quota_max 0: refused, allows no requests',
    { quota_max: 0, quota_renewal_rate: 3600 },
    ['quota_max: Invalid'],
    [],
    { rate: 'off', throttle: false, quota: 'closed' },
  ],
  [
    'a quota without its period',
    { quota_max: 100 },
    ['quota_renewal_rate: Required'],
    [],
    { rate: 'off', throttle: false, quota: 'closed' },
  ],
  [
    'a quota with period 0',
    { quota_max: 100, quota_renewal_rate: 0 },
    ['quota_renewal_rate: Required'],
    [],
    { rate: 'off', throttle: false, quota: 'closed' },
  ],
  [
    'no quota, any period',
    { quota_max: -1, quota_renewal_rate: 0 },
    [],
    [],
    { rate: 'off', throttle: false, quota: 'off' },
  ],
  [
    'a value of the wrong type reads as off',
    { rate: '10', per: 60 },
    ['rate: Invalid'],
    [],
    { rate: 'closed', throttle: false, quota: 'off' },
  ],
];

describe('the limits rule: what is refused when written, and how stored values count', () => {
  for (const [name, values, refused, warned, modes] of rows) {
    test(name, () => {
      const v = limitVerdict(values);
      assert.deepEqual(
        v.problems.map((p) => `${p.path}: ${p.type}`),
        refused,
      );
      for (const p of v.problems) assert.match(p.message, /-1|seconds/, 'says how to fix it');
      assert.deepEqual(
        v.warnings.map((w) => w.path),
        warned,
      );
      assert.deepEqual(limitModes(values), modes);
    });
  }

  test('paths carry the prefix of the caller', () => {
    assert.deepEqual(
      limitVerdict({ rate: 0, quota_max: 0 }, 'spec.access_rights_array[0].limit.').problems.map(
        (p) => p.path,
      ),
      ['spec.access_rights_array[0].limit.rate', 'spec.access_rights_array[0].limit.quota_max'],
    );
  });

  test('0 says it allows no requests and names -1', () => {
    const [rate] = limitVerdict({ rate: 0, per: 60 }).problems;
    assert.equal(
      rate?.message,
      'rate 0 allows no requests: set the requests allowed per `per` seconds, or -1 to disable rate limiting',
    );
  });
});
