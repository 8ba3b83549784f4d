/**
 * A version's `expires` through a real gateway: past, 403 and no expiry header; ahead, proxied
 * with `X-Svc-Api-Expires`. Runs against the files and Redis stores with the fast path on and
 * off; on the fast path every row must be served by it.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import {
  assertAnswer,
  describeEachSetup,
  fastPathOn,
  provision,
  sendRow,
  type Row,
} from '../../testing/tables.ts';

const EXPIRED = 'Api Version has expired, please check documentation or contact administrator';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless('expired', '/expired/', echo().url, oneVersion({ expires: '2020-01-31 12:00' }, 'v1')),
  keyless('expiring', '/expiring/', echo().url, oneVersion({ expires: '2999-12-31 23:59' })),
];

const rows: Row[] = [
  {
    name: 'expires: past',
    path: '/expired/x',
    status: 403,
    error: EXPIRED,
    responseHeaders: { 'x-svc-api-expires': undefined },
  },
  {
    name: 'expires: ahead',
    path: '/expiring/x',
    status: 200,
    responseHeaders: { 'x-svc-api-expires': 'Tue, 31 Dec 2999 23:59:00 GMT' },
  },
];

describeEachSetup(
  'version expiry',
  () => ({}),
  ({ gw, index }) => {
    before(async () => {
      await provision(gw(), apis());
    });
    const fastPath = fastPathOn(index);
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        const { res, served } = await sendRow(gw(), row);
        assertAnswer(res, row);
        if (row.status === 200) assert.equal((res.json as Echoed).upstream, 'echo', 'proxied');
        if (fastPath) assert.equal(served, 1, 'served by the fast path');
        if (!fastPath) assert.equal(served, 0, 'served by node:http');
      });
    }
  },
);
