import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeParams, findRoute, trimTrailingSlashes, type Route } from './router.ts';

const routes: Route<string>[] = [
  { path: /^\/items\/special$/, methods: { GET: 'special' } },
  { path: /^\/items\/([^/]+)$/, methods: { GET: 'get', DELETE: 'delete' } },
  { path: /^\/items$/, methods: { GET: 'list', POST: 'create' } },
];

test('findRoute: first match wins, 405 and 404 told apart; decodeParams', () => {
  const cases: {
    name: string;
    method: string;
    path: string;
    headAsGet?: boolean;
    want: { handler: string; params: string[] | undefined } | { allow: string[] } | 'not-found';
  }[] = [
    {
      name: 'a route without parameters',
      method: 'GET',
      path: '/items',
      want: { handler: 'list', params: [] },
    },
    {
      name: 'an earlier route wins',
      method: 'GET',
      path: '/items/special',
      want: { handler: 'special', params: [] },
    },
    {
      name: 'a parameter, percent-decoded',
      method: 'DELETE',
      path: '/items/a%2Fb',
      want: { handler: 'delete', params: ['a/b'] },
    },
    { name: 'a method the route lacks', method: 'PUT', path: '/items/x', want: { allow: ['GET', 'DELETE'] } },
    {
      name: 'the first matching route decides the 405',
      method: 'POST',
      path: '/items/special',
      want: { allow: ['GET'] },
    },
    { name: 'HEAD without headAsGet', method: 'HEAD', path: '/items', want: { allow: ['GET', 'POST'] } },
    {
      name: 'HEAD as GET',
      method: 'HEAD',
      path: '/items',
      headAsGet: true,
      want: { handler: 'list', params: [] },
    },
    { name: 'no route', method: 'GET', path: '/other', want: 'not-found' },
    {
      name: 'a malformed percent-encoding',
      method: 'GET',
      path: '/items/%E0%A4%A',
      want: { handler: 'get', params: undefined },
    },
  ];
  for (const c of cases) {
    const found = findRoute(routes, c.method, c.path, { headAsGet: c.headAsGet ?? false });
    const got =
      found.kind === 'found'
        ? { handler: found.handler, params: decodeParams(found.groups) }
        : found.kind === 'method-not-allowed'
          ? { allow: found.allow }
          : 'not-found';
    assert.deepEqual(got, c.want, c.name);
  }
});

test('trimTrailingSlashes', () => {
  assert.deepEqual(['/a/b/', '/a//', '/', '//', '/a'].map(trimTrailingSlashes), [
    '/a/b',
    '/a',
    '/',
    '/',
    '/a',
  ]);
});
