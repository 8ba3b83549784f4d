/**
 * Circuit breakers: the breaker's window and threshold, and as a table through a real gateway
 * (request in; status out) on an injected clock: two failures of two samples open the breaker
 * (503 while open, other endpoints served), a failed trial after `return_to_service_after` opens
 * it again, a good one closes it. Runs against the files and Redis stores with the fast path on
 * and off; on the fast path every row must be served by it.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import {
  describeEachSetup,
  fastPathOn,
  provision,
  SETUPS,
  testRows,
  type Row,
} from '../../testing/tables.ts';
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

interface BreakerRow extends Row {
  /** Moves the injected clock forward by this many seconds before the request. */
  advance?: number;
}

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless(
    'breaker',
    '/breaker/',
    echo().url,
    oneVersion({
      extended_paths: {
        circuit_breakers: [
          {
            path: '/status',
            method: 'GET',
            threshold_percent: '0.5',
            samples: 2,
            return_to_service_after: 10,
          },
        ],
      },
    }),
  ),
];

const rows: BreakerRow[] = [
  // Circuit breakers: two failures of two samples open the breaker for 10 s.
  { name: 'circuit_breakers: a failure', path: '/breaker/status/500', status: 500 },
  { name: 'circuit_breakers: another opens it', path: '/breaker/status/502', status: 502 },
  {
    name: 'circuit_breakers: open',
    path: '/breaker/status/200',
    status: 503,
    error: 'Service temporarily unavailable.',
  },
  { name: 'circuit_breakers: other endpoints are served', path: '/breaker/other', status: 200 },
  {
    name: 'circuit_breakers: still open after 9 s',
    path: '/breaker/status/200',
    advance: 9,
    status: 503,
    error: 'Service temporarily unavailable.',
  },
  {
    name: 'circuit_breakers: a failed trial opens it again',
    path: '/breaker/status/500',
    advance: 2,
    status: 500,
  },
  { name: 'circuit_breakers: open again', path: '/breaker/status/200', status: 503 },
  { name: 'circuit_breakers: a good trial closes it', path: '/breaker/status/204', advance: 11, status: 204 },
  { name: 'circuit_breakers: closed', path: '/breaker/status/200', status: 200 },
];

const clocks = SETUPS.map(() => ({ t: Date.parse('2030-01-01T00:00:00Z') }));

describeEachSetup(
  'circuit breakers',
  (index) => ({ now: () => clocks[index]?.t ?? Date.now() }),
  ({ gw, index }) => {
    before(async () => {
      await provision(gw(), apis());
    });
    const clock = clocks[index] ?? { t: 0 };
    testRows(gw, rows, fastPathOn(index), (row) => {
      if (row.advance !== undefined) clock.t += row.advance * 1000;
    });
  },
);
