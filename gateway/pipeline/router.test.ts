import { noEvents } from '../events/events.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coversPath, normalizeHost, RouteTable, type ListenerKey, type Route } from './router.ts';
import { removeDotSegments, splitTarget } from './url.ts';

function route(id: string, listenPath: string, domain?: string, listener: ListenerKey = 'main'): Route {
  const lp = listenPath.replace(/\/+$/, '');
  return {
    id,
    api: { name: id, proxy: { listen_path: listenPath } },
    listener,
    domain,
    listenPath: lp,
    strip: false,
    target: undefined,
    handle: () => Promise.resolve(),
    handlers: [],
    fastPath: true,
    close: () => Promise.resolve(),
    events: noEvents,
  };
}

const table = new RouteTable([
  route('root', '/'),
  route('orders', '/orders/'),
  route('orders-v2', '/orders/v2/'),
  route('exact', '/orders/', 'api.example.com'),
  route('exact-only-admin', '/admin/', 'admin.example.com'),
  route('wild', '/', '*.example.com'),
  route('wild-deeper', '/orders/', '*.eu.example.com'),
  route('port', '/', undefined, 9000),
  route('upper', '/Upper/Case/'),
]);

const cases: {
  name: string;
  listener?: ListenerKey;
  host: string;
  path: string;
  want: string | undefined;
}[] = [
  { name: 'longest listen path wins', host: 'x', path: '/orders/v2/items', want: 'orders-v2' },
  { name: 'listen path without its trailing slash', host: 'x', path: '/orders', want: 'orders' },
  { name: 'prefix only on whole segments', host: 'x', path: '/ordersx', want: 'root' },
  { name: 'listen paths match without case', host: 'x', path: '/ORDERS/V2/items', want: 'orders-v2' },
  { name: 'a listen path written in capitals', host: 'x', path: '/upper/case', want: 'upper' },
  { name: 'case-insensitive on whole segments only', host: 'x', path: '/UPPER/cases', want: 'root' },
  { name: 'root catches the rest', host: 'x', path: '/other', want: 'root' },
  { name: 'exact domain first', host: 'api.example.com', path: '/orders/1', want: 'exact' },
  {
    name: 'exact domain without a matching path falls to wildcard',
    host: 'api.example.com',
    path: '/x',
    want: 'wild',
  },
  { name: 'wildcard covers subdomains', host: 'shop.example.com', path: '/orders/1', want: 'wild' },
  { name: 'most specific wildcard first', host: 'a.eu.example.com', path: '/orders/1', want: 'wild-deeper' },
  { name: 'wildcard does not cover the bare domain', host: 'example.com', path: '/orders/1', want: 'orders' },
  { name: 'domain-less APIs last', host: 'admin.example.com', path: '/orders', want: 'wild' },
  { name: 'other listener has its own routes', listener: 9000, host: 'x', path: '/orders', want: 'port' },
  { name: 'unknown listener', listener: 9001, host: 'x', path: '/', want: undefined },
];

for (const c of cases) {
  test(`router: ${c.name}`, () => {
    assert.equal(table.match(c.listener ?? 'main', c.host, c.path)?.id, c.want);
  });
}

test('router: listeners of the table', () => {
  assert.deepEqual(table.listeners.sort(), [9000, 'main'].sort());
});

test('router: no match without a root API', () => {
  const t = new RouteTable([route('a', '/a/')]);
  assert.equal(t.match('main', 'x', '/b'), undefined);
});

test('normalizeHost', () => {
  assert.equal(normalizeHost('API.Example.COM:8080'), 'api.example.com');
  assert.equal(normalizeHost('example.com.'), 'example.com');
  assert.equal(normalizeHost('[::1]:80'), '[::1]');
  assert.equal(normalizeHost(undefined), '');
});

const covers: [listenPath: string, path: string, want: boolean, why: string][] = [
  ['', '/anything', true, 'the root covers everything'],
  ['/a', '/a', true, 'the listen path itself'],
  ['/a', '/a/b', true, 'a path under it'],
  ['/a', '/ab', false, 'whole segments only'],
  ['/a', '/', false, 'a shorter path'],
  ['/a', '/A/b', true, 'ASCII letters without case'],
  ['/Abc', '/aBC', true, 'either side in capitals'],
  // `@` and `` ` `` (or `[` and `{`) differ only in the bit that folds letters: they are not letters.
  ['/@', '/`', false, 'not letters: @ and `'],
  ['/[', '/{', false, 'not letters: [ and {'],
  ['/k', '/\u212a', false, 'the Kelvin sign is not k'],
];

for (const [listenPath, path, want, why] of covers) {
  test(`coversPath: ${why}`, () => {
    assert.equal(coversPath(listenPath, path), want);
  });
}

const targets: { url: string; path: string; query: string }[] = [
  { url: '/a/b?x=1', path: '/a/b', query: '?x=1' },
  { url: '/a/../b', path: '/b', query: '' },
  { url: '/api/./v1/../../admin/', path: '/admin/', query: '' },
  { url: '/api/%2e%2e/admin', path: '/admin', query: '' },
  { url: '/../../x', path: '/x', query: '' },
  { url: '/a/..', path: '/', query: '' },
  { url: 'http://host:8080/p?q', path: '/p', query: '?q' },
  { url: '*', path: '*', query: '' },
];

for (const t of targets) {
  test(`splitTarget ${t.url}`, () => {
    assert.deepEqual(splitTarget(t.url), { path: t.path, query: t.query });
  });
}

test('removeDotSegments keeps ordinary dots', () => {
  assert.equal(removeDotSegments('/a/.well-known/b..c'), '/a/.well-known/b..c');
});
