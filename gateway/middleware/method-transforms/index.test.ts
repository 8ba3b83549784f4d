/**
 * `method_transforms` as a table: the endpoint's request goes upstream with the new method,
 * another endpoint keeps its own. Runs against the files and Redis stores with the fast path on
 * and off; on the fast path every row must be served by it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEcho, type Echo, type Echoed } from '../../testing/echo.ts';
import { keyless } from '../../testing/harness.ts';
import {
  assertAnswer,
  describeEachSetup,
  fastPathOn,
  provision,
  sendRow,
  type Expected,
} from '../../testing/tables.ts';

interface Row extends Expected {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Which upstream answered (a 200 only). */
  upstream?: string;
  /** The path and query the upstream received (a 200 only). */
  upstreamPath?: string;
  upstreamQuery?: string;
  upstreamMethod?: string;
}

let echo: Echo;
before(async () => {
  echo = await startEcho('echo');
});
after(async () => {
  await echo.close();
});

const apis = (): Record<string, unknown>[] => [
  keyless('hdr', '/hdr/', echo.url, {
    version_data: {
      not_versioned: true,
      versions: {
        Default: {
          name: 'Default',
          use_extended_paths: true,
          extended_paths: {
            method_transforms: [{ path: '/convert', method: 'GET', to_method: 'POST' }],
          },
        },
      },
    },
  }),
];

const rows: Row[] = [
  { name: 'method_transforms: GET sent as POST', path: '/hdr/convert', status: 200, upstreamMethod: 'POST' },
  {
    name: 'method_transforms: another endpoint keeps its method',
    path: '/hdr/a',
    status: 200,
    upstreamMethod: 'GET',
  },
];

describeEachSetup(
  'method transforms',
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
        if (row.status === 200) {
          const got = res.json as Echoed;
          assert.equal(got.upstream, row.upstream ?? 'echo', 'upstream');
          if (row.upstreamPath !== undefined) assert.equal(got.path, row.upstreamPath);
          if (row.upstreamQuery !== undefined) assert.equal(got.query, row.upstreamQuery);
          if (row.upstreamMethod !== undefined) assert.equal(got.method, row.upstreamMethod);
        }
        assert.equal(served, fastPath ? 1 : 0, fastPath ? 'served by the fast path' : 'served by node:http');
      });
    }
  },
);
