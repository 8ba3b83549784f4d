/**
 * Request size limits: the limit of a request (a table over limitFor), and as a table through a
 * real gateway (request in; status, error and the body the upstream received out):
 * `global_size_limit`, `size_limits` (413 past the limit), `size_limit` 0, a chunked body counted
 * as it streams, `global_size_limit_disabled`. The gateway table runs against the files and Redis
 * stores with the fast path on and off; on the fast path every row with a Content-Length must be
 * served by it (node:http serves the chunked ones).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { fastPathStats } from '../../server/fast-path/index.ts';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { assertAnswer, describeProvisioned, type Expected, type RowRequest } from '../../testing/tables.ts';
import { compileSizeLimits, limitFor } from './index.ts';

const api = (version: Record<string, unknown>, name = 'Default'): GatewayApiDefinition => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  version_data: { not_versioned: true, versions: { [name]: { name, ...version } } },
});

const cases: {
  name: string;
  api: GatewayApiDefinition;
  method: string;
  path: string;
  want: number | undefined;
}[] = [
  { name: 'the global limit', api: api({ global_size_limit: 5 }), method: 'POST', path: '/x', want: 5 },
  {
    name: 'the smaller of global and endpoint',
    api: api({
      global_size_limit: 5,
      extended_paths: { size_limits: [{ path: '/x', method: 'POST', size_limit: 9 }] },
    }),
    method: 'POST',
    path: '/x/1',
    want: 5,
  },
  {
    name: 'an endpoint of another method',
    api: api({ extended_paths: { size_limits: [{ path: '/x', method: 'PUT', size_limit: 2 }] } }),
    method: 'POST',
    path: '/x',
    want: undefined,
  },
  {
    name: 'a version found as the only one',
    api: api({ global_size_limit: 7 }, 'v1'),
    method: 'GET',
    path: '/',
    want: 7,
  },
];

for (const c of cases) {
  test(`limitFor: ${c.name}`, () => {
    const limits = compileSizeLimits(c.api);
    assert.equal(limits === undefined ? undefined : limitFor(limits, c.method, c.path), c.want);
  });
}

test('compileSizeLimits: nothing to compile without a limit, or with the limit disabled', () => {
  assert.equal(compileSizeLimits(api({})), undefined);
  assert.equal(compileSizeLimits(api({ global_size_limit: 3, global_size_limit_disabled: true })), undefined);
  assert.equal(compileSizeLimits(api({ global_size_limit: 0 })), undefined);
});

interface Row extends Expected, RowRequest {
  name: string;
  /** Sent with `Transfer-Encoding: chunked`, in these pieces (node:http serves these). */
  chunks?: string[];
  /** The body the upstream received (a 200 only). */
  upstreamBody?: string;
}

const TOO_LARGE = 'Request body too large';

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless(
    'size',
    '/size/',
    echo().url,
    oneVersion({
      global_size_limit: 10,
      extended_paths: {
        size_limits: [
          { path: '/small', method: 'POST', size_limit: 3 },
          { path: '/none', method: 'POST', size_limit: 0 },
          { path: '/small', method: 'PUT', size_limit: 1, disabled: true },
          { path: '/large', method: 'POST', size_limit: 100 },
        ],
      },
    }),
  ),
  keyless(
    'sizeoff',
    '/sizeoff/',
    echo().url,
    oneVersion({ global_size_limit: 2, global_size_limit_disabled: true }),
  ),
];

const rows: Row[] = [
  {
    name: 'size: at the global limit',
    method: 'POST',
    path: '/size/x',
    body: '0123456789',
    status: 200,
    upstreamBody: '0123456789',
  },
  {
    name: 'size: past the global limit',
    method: 'POST',
    path: '/size/x',
    body: '0123456789a',
    status: 413,
    error: TOO_LARGE,
  },
  { name: 'size: an endpoint limit, at it', method: 'POST', path: '/size/small', body: 'abc', status: 200 },
  {
    name: 'size: an endpoint limit, past it',
    method: 'POST',
    path: '/size/small/1',
    body: 'abcd',
    status: 413,
    error: TOO_LARGE,
  },
  {
    name: 'size: another method takes the global limit',
    method: 'PUT',
    path: '/size/small',
    body: 'abcd',
    status: 200,
  },
  {
    name: 'size: a path that only starts alike',
    method: 'POST',
    path: '/size/smaller',
    body: 'abcd',
    status: 200,
  },
  {
    name: 'size: an endpoint limit never raises the global one',
    method: 'POST',
    path: '/size/large',
    body: '0123456789a',
    status: 413,
    error: TOO_LARGE,
  },
  {
    name: 'size: size_limit 0 allows no body',
    method: 'POST',
    path: '/size/none',
    body: 'a',
    status: 413,
    error: TOO_LARGE,
  },
  {
    name: 'size: size_limit 0 with an empty body',
    method: 'POST',
    path: '/size/none',
    body: '',
    status: 200,
  },
  { name: 'size: a GET without a body', path: '/size/none', status: 200 },
  {
    name: 'size: chunked, under the limit, streamed',
    method: 'POST',
    path: '/size/x',
    chunks: ['01234', '5678'],
    status: 200,
    upstreamBody: '012345678',
  },
  {
    name: 'size: chunked, counted past the limit',
    method: 'POST',
    path: '/size/x',
    chunks: ['012345', '6789a'],
    status: 413,
    error: TOO_LARGE,
  },
  {
    name: 'size: chunked, past an endpoint limit',
    method: 'POST',
    path: '/size/small',
    chunks: ['ab', 'cd'],
    status: 413,
    error: TOO_LARGE,
  },
  {
    name: 'size: global_size_limit_disabled',
    method: 'POST',
    path: '/sizeoff/x',
    body: '0123456789',
    status: 200,
  },
];

describeProvisioned('size limits', apis, {}, (gw, fastPath) => {
  for (const row of rows) {
    test(`${row.name}: ${String(row.status)}`, async () => {
      const before = fastPathStats.requests;
      const res =
        row.chunks === undefined
          ? await gw().request({
              // A new connection: one the management calls left to node:http is not reused.
              fresh: true,
              method: row.method ?? 'GET',
              path: row.path,
              ...(row.headers === undefined ? {} : { headers: row.headers }),
              ...(row.body === undefined ? {} : { body: row.body }),
            })
          : await gw().request({
              fresh: true,
              method: row.method ?? 'POST',
              path: row.path,
              chunks: row.chunks,
            });
      assertAnswer(res, row);
      if (row.upstreamBody !== undefined) assert.equal((res.json as Echoed).body, row.upstreamBody);
      if (row.status === 200) assert.equal((res.json as Echoed).upstream, 'echo', 'proxied');
      const served = fastPathStats.requests - before;
      if (fastPath && row.chunks === undefined) assert.equal(served, 1, 'served by the fast path');
      if (!fastPath || row.chunks !== undefined) assert.equal(served, 0, 'served by node:http');
    });
  }
});
