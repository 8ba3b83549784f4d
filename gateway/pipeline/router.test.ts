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
    upstreamConnector: () => () => undefined,
    close: () => Promise.resolve(),
    reusable: false,
    events: noEvents,
  };
}

const routes = [
  route('root', '/'),
  route('orders', '/orders/'),
  route('orders-v2', '/orders/v2/'),
  route('exact', '/orders/', 'api.example.com'),
  route('exact-only-admin', '/admin/', 'admin.example.com'),
  route('wild', '/', '*.example.com'),
  route('wild-deeper', '/orders/', '*.eu.example.com'),
  route('port', '/', undefined, 9000),
  route('upper', '/Upper/Case/'),
  { ...route('one-label', '/', '*.one.test'), domainOneLabel: true },
  { ...route('both-one', '/', '*.both.test'), domainOneLabel: true },
  route('both-deep', '/', '*.both.test'),
];
const table = new RouteTable(routes);
// The same routes among many others: large tiers are matched through their path index.
const fillers = (n: number, domain?: string): Route[] =>
  Array.from({ length: n }, (_, i) =>
    route(`filler-${domain ?? ''}-${String(i)}`, `/filler/${String(i)}/`, domain),
  );
const indexed = new RouteTable([
  ...routes,
  ...fillers(40),
  ...fillers(40, 'api.example.com'),
  ...fillers(40, '*.example.com'),
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
  { name: 'a one-label wildcard covers one label', host: 'a.one.test', path: '/x', want: 'one-label' },
  { name: 'a one-label wildcard: not two labels', host: 'a.b.one.test', path: '/x', want: 'root' },
  { name: 'a one-label wildcard: not the bare name', host: 'one.test', path: '/x', want: 'root' },
  { name: 'one label and any depth, one name: one label', host: 'a.both.test', path: '/', want: 'both-one' },
  { name: 'one label and any depth, one name: deeper', host: 'a.b.both.test', path: '/', want: 'both-deep' },
  { name: 'other listener has its own routes', listener: 9000, host: 'x', path: '/orders', want: 'port' },
  { name: 'unknown listener', listener: 9001, host: 'x', path: '/', want: undefined },
];

for (const c of cases) {
  test(`router: ${c.name}`, () => {
    assert.equal(table.match(c.listener ?? 'main', c.host, c.path)?.id, c.want);
  });
  test(`router, large tiers: ${c.name}`, () => {
    assert.equal(indexed.match(c.listener ?? 'main', c.host, c.path)?.id, c.want);
  });
}

test('router: a large tier matches exactly what a scan of every route matches', () => {
  const segments = ['a', 'B', 'k', 'ab', 'a.b', '%41'];
  const paths: string[] = [''];
  for (const x of segments) {
    paths.push(`/${x}`);
    for (const y of segments) {
      paths.push(`/${x}/${y}`);
      for (const z of segments) paths.push(`/${x}/${y}/${z}`);
    }
  }
  const many = paths.map((p, i) => route(`r${String(i).padStart(3, '0')}`, p === '' ? '/' : `${p}/`));
  // Two APIs on one listen path: the first by ID serves it, as in a scan.
  many.push(route('r000-twin', '/a/b/'));
  const t = new RouteTable(many);
  const scan = [...t.routes].sort(
    (a, b) => b.listenPath.length - a.listenPath.length || (a.id < b.id ? -1 : 1),
  );
  const requests = [
    ...paths,
    '/',
    '/A/b/',
    '/a/b/c/d',
    '/ab/c',
    '/a//b',
    '/a/bc',
    '/x',
    '/\u212A',
    '/A.B/%41/',
  ];
  for (const path of requests.flatMap((p) => [p, `${p}/`, `${p}/tail`])) {
    assert.equal(t.match('main', 'h', path)?.id, scan.find((r) => coversPath(r.listenPath, path))?.id, path);
  }
});

test('router: a route two tables hold is closed when the last of them is retired', async () => {
  const closed: string[] = [];
  const closing = (id: string): Route => ({
    ...route(id, `/${id}/`),
    close: () => {
      closed.push(id);
      return Promise.resolve();
    },
  });
  const shared = closing('shared');
  const first = new RouteTable([shared, closing('old')]);
  const second = new RouteTable([shared, closing('new')]);
  await first.retire();
  assert.deepEqual(closed, ['old']);
  await first.retire();
  assert.deepEqual(closed, ['old'], 'a second retire of one table closes nothing more');
  second.enter();
  const retired = second.retire();
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(closed, ['old'], 'nothing closes while a request runs on the table');
  second.leave();
  await retired;
  assert.deepEqual(closed.sort(), ['new', 'old', 'shared']);
});

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

test('router: an exact route serves its path alone; a prefix route of the same text serves the rest', () => {
  const exact = (id: string, listenPath: string): Route => ({
    ...route(id, listenPath),
    exactPath: listenPath.toLowerCase(),
  });
  const small = [
    exact('exact', '/Cart'),
    route('prefix', '/cart/'),
    route('root', '/'),
    exact('slash', '/end/'),
  ];
  for (const t of [new RouteTable(small), new RouteTable([...small, ...fillers(40)])]) {
    assert.equal(t.match('main', 'h', '/cart')?.id, 'exact', 'exact wins over the prefix of its text');
    assert.equal(t.match('main', 'h', '/CART')?.id, 'exact', 'compared without case');
    assert.equal(t.match('main', 'h', '/cart/')?.id, 'prefix', 'a trailing slash is another path');
    assert.equal(t.match('main', 'h', '/cart/items')?.id, 'prefix');
    assert.equal(t.match('main', 'h', '/end/')?.id, 'slash');
    assert.equal(t.match('main', 'h', '/end')?.id, 'root', 'not the exact path: the next route');
    assert.equal(t.match('main', 'h', '/end/x')?.id, 'root');
  }
});

test('router: a large tier of many first segments matches exactly what a scan of every route matches', () => {
  const segments = ['a', 'B', 'k', 'ab', 'a.b', '%41'];
  const paths: string[] = [''];
  for (const x of segments) {
    paths.push(`/${x}`);
    for (const y of segments) paths.push(`/${x}/${y}`);
  }
  const exact = (r: Route, raw: string): Route => ({ ...r, exactPath: raw.toLowerCase() });
  // Few routes per first segment (each list is scanned), many first segments (the tier is large).
  const many = [
    ...paths.map((p, i) => route(`r${String(i).padStart(3, '0')}`, p === '' ? '/' : `${p}/`)),
    route('r001-twin', '/a/'),
    exact(route('x-exact', '/a/B'), '/a/B'),
    exact(route('x-exact-slash', '/k/ab/'), '/k/ab/'),
    exact(route('x-exact-root', '/'), '/'),
    ...Array.from({ length: 30 }, (_, i) => route(`z${String(i)}`, `/z${String(i)}/x/`)),
  ];
  const t = new RouteTable(many);
  const order = [...t.routes].sort(
    (a, b) =>
      b.listenPath.length - a.listenPath.length ||
      Number(b.exactPath !== undefined) - Number(a.exactPath !== undefined) ||
      (a.id < b.id ? -1 : 1),
  );
  const scan = (path: string): string | undefined =>
    order.find((r) =>
      r.exactPath === undefined ? coversPath(r.listenPath, path) : path.toLowerCase() === r.exactPath,
    )?.id;
  const requests = [
    ...paths,
    '/',
    '/A/b',
    '/a/b/c/d',
    '/z3/x',
    '/Z3/X/y',
    '/z3',
    '/a//b',
    '/\u212A',
    '*',
    '',
  ];
  for (const path of requests.flatMap((p) => [p, `${p}/`, `${p}/tail`])) {
    assert.equal(t.match('main', 'h', path)?.id, scan(path), path);
  }
  assert.equal(t.match('main', 'h', '/A/b')?.id, 'x-exact');
  assert.equal(t.match('main', 'h', '/')?.id, 'x-exact-root');
});

test('router: many wildcard domains are matched as a scan of every wildcard matches them', () => {
  const one = (r: Route): Route => ({ ...r, domainOneLabel: true });
  const names = ['a', 'b', 'a.b', 'x.a.b', 'c.test', 'a.c.test'];
  const many = [
    ...names.map((d, i) => route(`any-${String(i)}`, '/', `*.${d}`)),
    ...names.map((d, i) => one(route(`one-${String(i)}`, '/', `*.${d}`))),
    ...names.map((d, i) => route(`deep-${String(i)}`, '/deep/', `*.${d}`)),
    ...Array.from({ length: 30 }, (_, i) => route(`w${String(i)}`, '/', `*.w${String(i)}.test`)),
    route('root', '/'),
  ];
  const indexedTable = new RouteTable(many);
  // What trying every wildcard in turn, the most specific first, finds.
  const scanned = (host: string, path: string): string | undefined => {
    const wild = many.filter((r) => r.domain !== undefined);
    const order = [...wild].sort(
      (a, b) =>
        (b.domain ?? '').length - (a.domain ?? '').length ||
        Number(b.domainOneLabel === true) - Number(a.domainOneLabel === true) ||
        b.listenPath.length - a.listenPath.length ||
        (a.id < b.id ? -1 : 1),
    );
    const hit = order.find((r) => {
      const suffix = (r.domain ?? '').slice(1);
      if (host.length <= suffix.length || !host.endsWith(suffix)) return false;
      if (r.domainOneLabel === true && host.indexOf('.') !== host.length - suffix.length) return false;
      return coversPath(r.listenPath, path);
    });
    return hit?.id ?? 'root';
  };
  const hosts = [
    ...names.flatMap((d) => [d, `h.${d}`, `h.g.${d}`, `.${d}`, `h..${d}`]),
    'h.w3.test',
    'w3.test',
    'h.x.w29.test',
    'nothing',
    '',
    '.',
  ];
  for (const host of hosts)
    for (const path of ['/', '/deep/x', '/other'])
      assert.equal(indexedTable.match('main', host, path)?.id, scanned(host, path), `${host} ${path}`);
  assert.equal(indexedTable.match('main', 'h.x.a.b', '/')?.id, 'one-3');
  assert.equal(indexedTable.match('main', 'h.g.x.a.b', '/')?.id, 'any-3');
  assert.equal(indexedTable.match('main', 'h.g.x.a.b', '/deep/1')?.id, 'deep-3');
});

test('router: a case-sensitive listen path serves its case only; another case goes on to the next route', () => {
  const cased = (r: Route, raw: string): Route => ({ ...r, casedPath: raw });
  const small = [
    cased({ ...route('exact', '/filler/Two'), exactPath: '/filler/two' }, '/filler/Two'),
    cased(route('prefix', '/filler/One/'), '/filler/One'),
    route('plain', '/filler/'),
    route('root', '/'),
  ];
  // Small (scanned), and among 40 routes of the same first segment (looked up by path prefix).
  for (const t of [new RouteTable(small), new RouteTable([...small, ...fillers(40)])]) {
    assert.equal(t.match('main', 'h', '/filler/Two')?.id, 'exact');
    assert.equal(t.match('main', 'h', '/filler/two')?.id, 'plain', 'Exact /Two does not serve /two');
    assert.equal(t.match('main', 'h', '/filler/TWO')?.id, 'plain');
    assert.equal(t.match('main', 'h', '/filler/One')?.id, 'prefix');
    assert.equal(t.match('main', 'h', '/filler/One/x/Y')?.id, 'prefix', 'the rest keeps any case');
    assert.equal(t.match('main', 'h', '/filler/one/x')?.id, 'plain');
    assert.equal(t.match('main', 'h', '/FILLER/One')?.id, 'plain', 'every segment is compared with case');
    assert.equal(new RouteTable(small.slice(0, 2)).match('main', 'h', '/FILLER/One')?.id, undefined);
  }
});
