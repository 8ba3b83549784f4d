import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Breaker } from './index.ts';

test('the share is computed over the last `samples` calls', () => {
  const b = new Breaker({ threshold_percent: '0.5', samples: 4, return_to_service_after: 10 });
  // fail, ok, ok, ok: 1/4, under the threshold; one more ok and the failure leaves the window.
  for (const failed of [true, false, false, false, false]) assert.equal(b.record(failed, 0, true), false);
  assert.equal(b.record(true, 0, true), false); // ok, ok, ok, fail: 1/4
  assert.equal(b.record(true, 0, true), true); // ok, ok, fail, fail: 2/4 opens it
  assert.equal(b.admit(9_999), false);
});

test('half-open: one trial at a time; its failure opens the breaker again', () => {
  const b = new Breaker({ threshold_percent: '1', samples: 1, return_to_service_after: 1 });
  assert.equal(b.record(true, 0, true), true);
  assert.equal(b.admit(500), false);
  assert.equal(b.admit(1000), 'trial');
  assert.equal(b.admit(1000), false, 'a second request waits for the trial');
  assert.equal(b.record(true, 1000, 'trial'), true);
  assert.equal(b.admit(1500), false);
  assert.equal(b.admit(2000), 'trial');
  assert.equal(b.record(false, 2000, 'trial'), false);
  assert.equal(b.admit(2000), true);
});

test('disable_half_open_state: closed at once when the time is up', () => {
  const b = new Breaker({
    threshold_percent: '0.5',
    samples: 2,
    return_to_service_after: 1,
    disable_half_open_state: true,
  });
  b.record(true, 0, true);
  assert.equal(b.record(true, 0, true), true);
  assert.equal(b.admit(999), false);
  assert.equal(b.admit(1000), true);
  assert.equal(b.admit(1000), true);
});
