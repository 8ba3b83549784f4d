/**
 * The endpoint lists: how an entry's path matches (a table over compileEndpointPath and the
 * compiled lists), and as a table through a real gateway (request in; status, error out):
 * `ignored`, `white_list`, `black_list` (first match wins, in that order), the older `paths`,
 * `ignore_case` and the version's `ignore_endpoint_case`. The gateway table runs against the files
 * and Redis stores with the fast path on and off; on the fast path every row must be served by it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { compileEndpointPath } from '../../pipeline/endpoints.ts';
import { useEcho } from '../../testing/echo.ts';
import { keyed, keyless, oneVersion } from '../../testing/harness.ts';
import { describeProxiedTable, type ProxiedRow } from '../../testing/tables.ts';
import { compileEndpointLists } from './index.ts';

const paths: { path: string; request: string; want: boolean }[] = [
  { path: '/users', request: '/users', want: true },
  { path: '/users', request: '/users/1', want: true },
  { path: '/users', request: '/usersX', want: false },
  { path: '/users', request: '/api/users', want: false },
  { path: '/users/{id}', request: '/users/42', want: true },
  { path: '/users/{id}', request: '/users/', want: false },
  { path: '/users/[0-9]+', request: '/users/42/orders', want: true },
  { path: '/users/[0-9]+', request: '/users/4a', want: false },
  { path: '/', request: '/anything', want: true },
  { path: '/a|/b', request: '/b/c', want: true },
];

for (const c of paths) {
  test(`compileEndpointPath: ${c.path} on ${c.request} is ${String(c.want)}`, () => {
    assert.equal(compileEndpointPath(c.path, false).test(c.request), c.want);
  });
}

test('compileEndpointPath: a path that is no regular expression fails at load, naming it', () => {
  assert.throws(() => compileEndpointPath('/a(', false), /endpoint path "\/a\(" is not a regular expression/);
});

const api = (version: Record<string, unknown>): GatewayApiDefinition => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  version_data: { not_versioned: true, versions: { Default: { name: 'Default', ...version } } },
});

test('compileEndpointLists: empty and disabled lists compile to nothing (the middleware is left out)', () => {
  assert.equal(
    compileEndpointLists(api({ paths: { ignored: [], white_list: [], black_list: [] } })),
    undefined,
  );
  assert.equal(
    compileEndpointLists(api({ extended_paths: { black_list: [{ path: '/x', disabled: true }] } })),
    undefined,
  );
});

test('compileEndpointLists: ignored first, then black, then white; methods from method_actions and method', () => {
  const lists = compileEndpointLists(
    api({
      paths: { white_list: ['/w'] },
      extended_paths: {
        white_list: [{ path: '/x', method_actions: { GET: { action: 'no_action' } }, method: 'PUT' }],
        ignored: [{ path: '/i' }],
      },
    }),
  );
  assert.ok(lists !== undefined);
  assert.deepEqual(
    lists.entries.map((e) => [e.list, [...e.endpoint.methods]]),
    [
      [0, []],
      [2, []],
      [2, ['GET', 'PUT']],
    ],
  );
  assert.equal(lists.whiteList, true);
  assert.equal(lists.ignored, true);
});

const FORBIDDEN = 'Requested endpoint is forbidden';
const KEY = { authorization: 'ep-key' };

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyed(
    'lists',
    '/lists/',
    echo().url,
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
  keyless(
    'older',
    '/older/',
    echo().url,
    oneVersion({
      use_extended_paths: false,
      paths: { black_list: ['/secret'], ignored: [], white_list: [] },
    }),
  ),
  keyless(
    'anycase',
    '/anycase/',
    echo().url,
    oneVersion({ ignore_endpoint_case: true, extended_paths: { black_list: [{ path: '/secret' }] } }),
  ),
];

const rows: ProxiedRow[] = [
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
  { name: 'older paths: black list', path: '/older/secret', status: 403, error: FORBIDDEN },
  { name: 'older paths: elsewhere', path: '/older/open', status: 200 },
  {
    name: 'ignore_endpoint_case: the version matches any case',
    path: '/anycase/SeCrEt/1',
    status: 403,
    error: FORBIDDEN,
  },
];

describeProxiedTable('endpoint lists', apis, rows, {
  'ep-key': {
    access_rights: { lists: { api_id: 'lists', versions: ['v1'] } },
  },
});
