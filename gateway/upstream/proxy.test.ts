import { test } from 'node:test';
import assert from 'node:assert/strict';
import { upstreamFailure, upstreamPathOf } from './proxy.ts';

const paths: {
  name: string;
  base: string;
  baseQuery?: string;
  /** The target URL's path ends with `/`. */
  slash?: boolean;
  /** `proxy.disable_strip_slash`. */
  keepSlash?: boolean;
  listenPath: string;
  strip: boolean;
  path: string;
  query?: string;
  want: string;
}[] = [
  { name: 'kept path', base: '', listenPath: '/a', strip: false, path: '/a/b', want: '/a/b' },
  { name: 'stripped path', base: '', listenPath: '/a', strip: true, path: '/a/b', want: '/b' },
  { name: 'stripped to nothing', base: '', listenPath: '/a', strip: true, path: '/a', want: '/' },
  { name: 'stripped, trailing slash kept', base: '', listenPath: '/a', strip: true, path: '/a/', want: '/' },
  { name: 'target path prefix', base: '/v1', listenPath: '/a', strip: true, path: '/a/b', want: '/v1/b' },
  { name: 'target path, nothing left', base: '/v1', listenPath: '/a', strip: true, path: '/a', want: '/v1' },
  {
    name: 'target path, kept path',
    base: '/v1',
    listenPath: '/a',
    strip: false,
    path: '/a/b',
    want: '/v1/a/b',
  },
  { name: 'root listen path stripped', base: '', listenPath: '', strip: true, path: '/x', want: '/x' },
  {
    name: 'query kept',
    base: '',
    listenPath: '/a',
    strip: true,
    path: '/a/b',
    query: '?x=1',
    want: '/b?x=1',
  },
  {
    name: 'target query first',
    base: '',
    baseQuery: 'k=v',
    listenPath: '/a',
    strip: true,
    path: '/a/b',
    query: '?x=1',
    want: '/b?k=v&x=1',
  },
  {
    name: 'target query alone',
    base: '',
    baseQuery: 'k=v',
    listenPath: '/a',
    strip: false,
    path: '/a',
    want: '/a?k=v',
  },
  {
    name: 'disable_strip_slash: nothing left, the target path as written (with its slash)',
    base: '/query',
    slash: true,
    keepSlash: true,
    listenPath: '/a',
    strip: true,
    path: '/a',
    want: '/query/',
  },
  {
    name: 'disable_strip_slash: only a slash left, the target path as written (with its slash)',
    base: '/query',
    slash: true,
    keepSlash: true,
    listenPath: '/a',
    strip: true,
    path: '/a/',
    query: '?x=1',
    want: '/query/?x=1',
  },
  {
    name: 'disable_strip_slash: only a slash left, the target path as written (without a slash)',
    base: '/query',
    keepSlash: true,
    listenPath: '/a',
    strip: true,
    path: '/a/',
    want: '/query',
  },
  {
    name: 'disable_strip_slash: a longer path is joined as without it',
    base: '/query',
    slash: true,
    keepSlash: true,
    listenPath: '/a',
    strip: true,
    path: '/a/b/',
    want: '/query/b/',
  },
  {
    name: 'disable_strip_slash: the root target',
    base: '',
    slash: true,
    keepSlash: true,
    listenPath: '/a',
    strip: true,
    path: '/a',
    want: '/',
  },
  {
    name: 'without disable_strip_slash: the target slash dropped, the client one kept',
    base: '/query',
    slash: true,
    listenPath: '/a',
    strip: true,
    path: '/a',
    want: '/query',
  },
];

for (const c of paths) {
  test(`upstream path: ${c.name}`, () => {
    assert.equal(
      upstreamPathOf(
        { basePath: c.base, baseQuery: c.baseQuery ?? '', trailingSlash: c.slash === true },
        { listenPath: c.listenPath, strip: c.strip, keepSlash: c.keepSlash === true },
        c.path,
        c.query ?? '',
      ),
      c.want,
    );
  });
}

const failures: { code: string | undefined; status: number }[] = [
  { code: 'ECONNREFUSED', status: 502 },
  { code: 'ENOTFOUND', status: 502 },
  { code: 'UND_ERR_SOCKET', status: 502 },
  { code: 'UND_ERR_CONNECT_TIMEOUT', status: 504 },
  { code: 'UND_ERR_HEADERS_TIMEOUT', status: 504 },
  { code: 'UND_ERR_BODY_TIMEOUT', status: 504 },
  { code: undefined, status: 502 },
];

for (const f of failures) {
  test(`upstream failure ${String(f.code)} -> ${f.status}`, () => {
    assert.equal(upstreamFailure(Object.assign(new Error('x'), { code: f.code })).status, f.status);
  });
}
