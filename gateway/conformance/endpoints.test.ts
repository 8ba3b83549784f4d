/**
 * Endpoint features of a classic API's served version, as tables (request in; status, body,
 * headers out): request size limits (`global_size_limit`, `size_limits`; 413 past the limit, a
 * chunked body counted as it streams), the endpoint lists (`ignored`, `white_list`,
 * `black_list`, the older `paths`) and the version's `expires`. Each table runs against the
 * files and Redis stores with the fast path on and off; on the fast path, every row with a
 * Content-Length must be served by it. The OAS extension has no per-operation form of these yet.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { fastPathStats } from '../server/fast-path/index.ts';
import type { Res } from '../testing/client.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, oneVersion, startGateway } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, fastPathOn, provision, type Expected } from '../testing/tables.ts';

interface Row extends Expected {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Sent with `Transfer-Encoding: chunked`, in these pieces (node:http serves these). */
  chunks?: string[];
  /** The body the upstream received (a 200 only). */
  upstreamBody?: string;
}

const TOO_LARGE = 'Request body too large';
const FORBIDDEN = 'Requested endpoint is forbidden';
const EXPIRED = 'Api Version has expired, please check documentation or contact administrator';
const KEY = { authorization: 'ep-key' };

let echo: Echo;
before(async () => {
  echo = await startEcho('echo');
});
after(async () => {
  await echo.close();
});

const apis = (): Record<string, unknown>[] => [
  keyless(
    'size',
    '/size/',
    echo.url,
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
    echo.url,
    oneVersion({ global_size_limit: 2, global_size_limit_disabled: true }),
  ),
  keyed(
    'lists',
    '/lists/',
    echo.url,
    oneVersion(
      {
        extended_paths: {
          ignored: [{ path: '/public', method_actions: { GET: { action: 'no_action', code: 200 } } }],
          black_list: [
            { path: '/admin/{id}', method: 'DELETE' },
            { path: '/users/13', disabled: true },
          ],
          white_list: [
            { path: '/public' },
            { path: '/users/[0-9]+', method_actions: { GET: { action: 'no_action' }, POST: {} } },
            { path: '/admin' },
            { path: '/Mixed', ignore_case: true },
          ],
        },
      },
      'v1',
    ),
  ),
  keyless('expired', '/expired/', echo.url, oneVersion({ expires: '2020-01-31 12:00' }, 'v1')),
  keyless('expiring', '/expiring/', echo.url, oneVersion({ expires: '2999-12-31 23:59' })),
  keyless(
    'older',
    '/older/',
    echo.url,
    oneVersion({
      use_extended_paths: false,
      paths: { black_list: ['/secret'], ignored: [], white_list: [] },
    }),
  ),
  keyless(
    'anycase',
    '/anycase/',
    echo.url,
    oneVersion({ ignore_endpoint_case: true, extended_paths: { black_list: [{ path: '/secret' }] } }),
  ),
];

const rows: Row[] = [
  // Size limits.
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
  // Endpoint lists: ignored, black list, white list (first match wins, in that order).
  { name: 'lists: ignored endpoint without a key', path: '/lists/public', status: 200 },
  { name: 'lists: ignored endpoint, below it', path: '/lists/public/a/b', status: 200 },
  {
    name: 'lists: ignored endpoint, an unknown key is not looked at',
    path: '/lists/public',
    headers: { authorization: 'nope' },
    status: 200,
    upstreamHeaders: { authorization: 'nope' },
  },
  {
    name: 'lists: ignored for GET only: POST needs a key',
    method: 'POST',
    path: '/lists/public',
    body: '',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'lists: white-listed POST with its key',
    method: 'POST',
    path: '/lists/public',
    body: '',
    headers: KEY,
    status: 200,
  },
  {
    name: 'lists: white list, no key',
    path: '/lists/users/12',
    status: 401,
    error: 'Authorization field missing',
  },
  { name: 'lists: white list, with a key', path: '/lists/users/12', headers: KEY, status: 200 },
  {
    name: 'lists: white list, a method it does not name',
    method: 'DELETE',
    path: '/lists/users/12',
    headers: KEY,
    status: 403,
    error: FORBIDDEN,
  },
  {
    name: 'lists: outside the white list, before authentication',
    path: '/lists/users/abc',
    status: 403,
    error: FORBIDDEN,
  },
  { name: 'lists: a path that only starts alike', path: '/lists/publicity', status: 403, error: FORBIDDEN },
  { name: 'lists: the listen path itself', path: '/lists/', headers: KEY, status: 403, error: FORBIDDEN },
  {
    name: 'lists: black list, its method',
    method: 'DELETE',
    path: '/lists/admin/7',
    headers: KEY,
    status: 403,
    error: FORBIDDEN,
  },
  { name: 'lists: black list, another method', path: '/lists/admin/7', headers: KEY, status: 200 },
  { name: 'lists: a disabled black-list entry', path: '/lists/users/13', headers: KEY, status: 200 },
  {
    name: 'lists: paths match case-sensitively',
    path: '/lists/ADMIN',
    headers: KEY,
    status: 403,
    error: FORBIDDEN,
  },
  { name: 'lists: ignore_case on an entry', path: '/lists/mIXED', headers: KEY, status: 200 },
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
  { name: 'older paths: black list', path: '/older/secret', status: 403, error: FORBIDDEN },
  { name: 'older paths: elsewhere', path: '/older/open', status: 200 },
  {
    name: 'ignore_endpoint_case: the version matches any case',
    path: '/anycase/SeCrEt/1',
    status: 403,
    error: FORBIDDEN,
  },
];

/** A request whose body goes out with `Transfer-Encoding: chunked`, piece by piece. */
function sendChunked(port: number, method: string, path: string, chunks: string[]): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false }, (res) => {
      const got: Buffer[] = [];
      res.on('data', (c: Buffer) => got.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(got).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    // The gateway may answer 413 and close before the last piece is written.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    req.flushHeaders();
    let i = 0;
    const next = (): void => {
      const piece = chunks[i++];
      if (piece === undefined) {
        req.end();
        return;
      }
      req.write(piece, () => setImmediate(next));
    };
    next();
  });
}

describeEachSetup(
  'endpoint features',
  () => ({}),
  ({ gw, index }) => {
    before(async () => {
      await provision(gw(), apis(), {
        'ep-key': {
          access_rights: { lists: { api_id: 'lists', versions: ['v1'] } },
        },
      });
    });
    const fastPath = fastPathOn(index);
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
            : await sendChunked(gw().port, row.method ?? 'POST', row.path, row.chunks);
        assertAnswer(res, row);
        if (row.upstreamBody !== undefined) assert.equal((res.json as Echoed).body, row.upstreamBody);
        if (row.status === 200) assert.equal((res.json as Echoed).upstream, 'echo', 'proxied');
        const served = fastPathStats.requests - before;
        if (fastPath && row.chunks === undefined) assert.equal(served, 1, 'served by the fast path');
        if (!fastPath || row.chunks !== undefined) assert.equal(served, 0, 'served by node:http');
      });
    }
  },
);

test('writes: what the endpoint features do not serve yet is refused by path, with the rest', async () => {
  const gw = await startGateway();
  try {
    const res = await gw.admin(
      'POST',
      '/svc/apis',
      keyless(
        'refused',
        '/refused/',
        echo.url,
        oneVersion({
          expires: 'tomorrow',
          extended_paths: {
            transform_jq: [{ path: '/a', filter: '.' }],
            black_list: [{ path: '/b[', method: 'GET' }],
            virtual: [{ path: '/c', method: 'GET', response_function_name: 'f' }],
            size_limits: [],
          },
        }),
      ),
    );
    assert.equal(res.status, 400, res.text);
    const message = (res.json as { message: string }).message;
    for (const part of [
      'version_data.versions.Default.extended_paths.black_list[0].path: Invalid value: "/b["',
      'version_data.versions.Default.extended_paths.transform_jq: not supported by svc yet',
      'version_data.versions.Default.extended_paths.virtual: not supported by svc yet',
      'version_data.versions.Default.expires: Invalid value: "tomorrow" is not a time',
    ]) {
      assert.ok(message.includes(part), `${part} in ${message}`);
    }
  } finally {
    await gw.stop();
  }
});
