/**
 * The limits rule (schemas/rules/limits.ts) on the dashboard's writes, against a real listener:
 * policies and keys with 0 (which would allow no requests), a rate without its window or
 * throttling without its other half are refused with 400 naming the field; -1 and both halves
 * set are stored. The same verdict as the gateway's management API and the webhooks.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOrgDashboard, type TestDashboard } from '../testing/dashboard.ts';

const ORG = 'limits-org';

/** Limit values, and the field and message of the refusal (undefined: stored). */
const rows: [name: string, limits: Record<string, unknown>, says: RegExp | undefined][] = [
  [
    'all -1',
    { rate: -1, per: -1, throttle_interval: -1, throttle_retry_limit: -1, quota_max: -1 },
    undefined,
  ],
  [
    'a rate, throttling and a quota',
    {
      rate: 10,
      per: 60,
      throttle_interval: 1,
      throttle_retry_limit: 3,
      quota_max: 100,
      quota_renewal_rate: 3600,
    },
    undefined,
  ],
  ['rate 0', { rate: 0, per: 60 }, /rate: Invalid value: rate 0 allows no requests/],
  ['per 0', { rate: 10, per: 0 }, /per: Invalid value: per 0 is an empty window/],
  ['a window with the rate off', { rate: -1, per: 60 }, /rate: Invalid value: per is 60 but rate is -1/],
  [
    'quota_max 0',
    { quota_max: 0, quota_renewal_rate: 60 },
    /quota_max: Invalid value: quota_max 0 allows no requests/,
  ],
  [
    'throttle interval without retries',
    { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: -1 },
    /throttle_retry_limit: Invalid value/,
  ],
  [
    'retrying without waiting (a warning only)',
    { rate: 1, per: 1, throttle_interval: 0, throttle_retry_limit: 3 },
    undefined,
  ],
];

let d: TestDashboard;
let admin: string;
let close: () => Promise<void>;
let seq = 0;

before(async () => {
  ({ d, admin, close } = await startOrgDashboard(ORG));
});
after(() => close());

describe('the dashboard applies the limits rule to policies and keys', () => {
  for (const [name, limits, says] of rows) {
    test(`policy: ${name}`, async () => {
      const body = { id: `p-${++seq}`, name: 'p', ...limits };
      const r = await d.call('POST', '/api/portal/policies', { auth: admin, body });
      if (says === undefined) {
        assert.equal(r.status, 200, r.text);
        return;
      }
      assert.equal(r.status, 400, r.text);
      assert.match(String(r.body.Message), says);
    });
    test(`key: ${name}`, async () => {
      const r = await d.call('POST', '/api/keys', { auth: admin, body: limits });
      if (says === undefined) {
        assert.equal(r.status, 200, r.text);
        return;
      }
      assert.equal(r.status, 400, r.text);
      assert.match(String(r.body.Message), says);
    });
  }
});
