import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { compileEndpointPath } from '../../pipeline/endpoints.ts';
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
