import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTarget, upstreamEntry } from './target.ts';

describe('parseTarget', () => {
  const targets: { raw: string; want: ReturnType<typeof parseTarget> | string }[] = [
    {
      raw: 'https://u.example:8443/base/?k=v',
      want: {
        origin: 'https://u.example:8443',
        host: 'u.example:8443',
        basePath: '/base',
        baseQuery: 'k=v',
        trailingSlash: true,
      },
    },
    {
      raw: 'http://users:4001/query',
      want: { origin: 'http://users:4001', host: 'users:4001', basePath: '/query', baseQuery: '' },
    },
    {
      raw: 'orders.shop.svc:8080',
      want: {
        origin: 'http://orders.shop.svc:8080',
        host: 'orders.shop.svc:8080',
        basePath: '',
        baseQuery: '',
      },
    },
    {
      raw: 'httpbin.org',
      want: { origin: 'http://httpbin.org', host: 'httpbin.org', basePath: '', baseQuery: '' },
    },
    { raw: 'tcp://db:5432', want: 'NotSupported' },
    { raw: 'ws://chat', want: 'NotSupported' },
    { raw: 'ftp://files', want: 'NotSupported' },
    { raw: 'not a url', want: 'Invalid' },
  ];
  for (const t of targets) {
    test(t.raw, () => {
      const got = parseTarget(t.raw);
      if (typeof t.want === 'string') assert.equal('type' in got ? got.type : got, t.want);
      else assert.deepEqual(got, t.want);
    });
  }
});

test('upstreamEntry: the exact host, then the longest wildcard, then *', () => {
  const map = { '*': 'any', '*.example.com': 'wild', '*.eu.example.com': 'eu', 'API.example.com': 'exact' };
  assert.equal(upstreamEntry(map, 'api.example.com'), 'exact');
  assert.equal(upstreamEntry(map, 'x.eu.example.com'), 'eu');
  assert.equal(upstreamEntry(map, 'x.example.com'), 'wild');
  assert.equal(upstreamEntry(map, 'example.com'), 'any');
  assert.equal(upstreamEntry({ '*.example.com': 'wild' }, 'other.org'), undefined);
  assert.equal(upstreamEntry(undefined, 'x'), undefined);
});
