/**
 * The GraphQL playground over HTTP, for a keyed proxyOnly API: the page with its policy, and
 * GraphiQL's files served from node_modules under the playground path (types, year-long caching,
 * validators, gzip), all without a key; anything else under the API still needs one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { InProcessGateway } from '../testing/harness.ts';
import { PLAYGROUND_CSP } from './playground.ts';
import { startPlayground, type TestUpstream } from './testing.ts';

const require = createRequire(import.meta.url);
/** A file of an installed package, as the gateway should serve it. */
const packageFile = (pkg: string, file: string): Buffer =>
  readFileSync(join(dirname(require.resolve(`${pkg}/package.json`)), file));

describe('GraphQL playground over HTTP', () => {
  let gql: TestUpstream;
  let gw: InProcessGateway;
  /** The asset paths the page links to, in order. */
  let assets: string[] = [];

  const url = (path: string): string => `http://127.0.0.1:${String(gw.port)}${path}`;

  before(async () => {
    ({ gql, gw } = await startPlayground());
  });

  after(async () => {
    await gw.stop();
    await gql.close();
  });

  test('the page: GraphiQL from the playground path, a policy allowing only the gateway', async () => {
    const res = await fetch(url('/pg/playground'));
    const html = await res.text();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(res.headers.get('content-security-policy'), PLAYGROUND_CSP);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.match(html, /<title>pg API · GraphQL playground<\/title>/);
    assert.match(html, /"endpoint":"\/pg\/"/);
    assert.doesNotMatch(html, /https?:\/\//);
    assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1] ?? '');
    assert.deepEqual(
      assets.map((a) => a.replace(/\.[0-9a-f]{16}\./, '.H.')),
      [
        '/pg/playground/assets/graphiql.H.css',
        '/pg/playground/assets/playground.H.css',
        '/pg/playground/assets/react.H.js',
        '/pg/playground/assets/react-dom.H.js',
        '/pg/playground/assets/graphiql.H.js',
        '/pg/playground/assets/playground.H.js',
      ],
    );
    const again = await fetch(url('/pg/playground/'));
    assert.equal(again.status, 200, 'a trailing slash is the same page');
    assert.equal(await again.text(), html);
  });

  const vendored: { name: string; asset: RegExp; pkg: string; file: string; type: string }[] = [
    {
      name: 'react',
      asset: /\/react\./,
      pkg: 'react',
      file: 'umd/react.production.min.js',
      type: 'text/javascript',
    },
    {
      name: 'react-dom',
      asset: /\/react-dom\./,
      pkg: 'react-dom',
      file: 'umd/react-dom.production.min.js',
      type: 'text/javascript',
    },
    {
      name: 'graphiql',
      asset: /\/graphiql\.\w+\.js$/,
      pkg: 'graphiql',
      file: 'graphiql.min.js',
      type: 'text/javascript',
    },
    {
      name: 'graphiql css',
      asset: /\/graphiql\.\w+\.css$/,
      pkg: 'graphiql',
      file: 'graphiql.min.css',
      type: 'text/css',
    },
  ];
  for (const v of vendored) {
    test(`asset ${v.name}: the package's file, cached for a year, gzipped on request`, async () => {
      const path = assets.find((a) => v.asset.test(a));
      assert.ok(path !== undefined, `the page links ${v.name}`);
      const plain = await fetch(url(path), { headers: { 'accept-encoding': 'identity' } });
      assert.equal(plain.status, 200);
      assert.equal(plain.headers.get('content-type'), `${v.type}; charset=utf-8`);
      assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(plain.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(plain.headers.get('content-encoding'), null);
      const body = Buffer.from(await plain.arrayBuffer());
      assert.ok(body.equals(packageFile(v.pkg, v.file)), 'served as published');
      // fetch decodes gzip itself; the header says it was sent compressed.
      const gzipped = await fetch(url(path), { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(gzipped.headers.get('content-encoding'), 'gzip');
      assert.ok(Buffer.from(await gzipped.arrayBuffer()).equals(body));
      const etag = plain.headers.get('etag') ?? '';
      assert.match(etag, /^"[0-9a-f]{16}"$/);
      const cached = await fetch(url(path), { headers: { 'if-none-match': etag } });
      assert.equal(cached.status, 304);
      const head = await fetch(url(path), { method: 'HEAD', headers: { 'accept-encoding': 'identity' } });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(body.length));
    });
  }

  const keyNeeded: { name: string; method: string; path: string }[] = [
    { name: 'an unknown asset', method: 'GET', path: '/pg/playground/assets/graphiql.min.js' },
    { name: 'a POST to the page', method: 'POST', path: '/pg/playground' },
    { name: 'a query', method: 'POST', path: '/pg/' },
  ];
  for (const c of keyNeeded) {
    test(`${c.name} goes through authentication: 401 without a key`, async () => {
      const calls = gql.calls.length;
      const res = await fetch(url(c.path), { method: c.method });
      assert.equal(res.status, 401);
      assert.equal(gql.calls.length, calls, 'the upstream was not called');
    });
  }
});
