/**
 * `allowed_urls` of a key's access rights (GATEWAY-BEHAVIOUR §5), as a table: each entry's `url`
 * is a regular expression matched from the start of the path, against the path after the listen
 * path (as the reference operator's samples write them: `/get(.*)` on `/httpbin/`) and against
 * the whole request path, with `strip_listen_path` on and off, listen paths with and without a
 * trailing slash, a version in the URL, a custom domain and the root listen path; never in the
 * middle of the path, and only for the entry's methods. The key gets its rights from a policy,
 * as in the report. Runs against the files store and the Redis store, fast path on and off.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { keyed, type InProcessGateway } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../testing/tables.ts';

const echo = useEcho();

const GET = ['GET'];
const right = (
  apiId: string,
  urls: { url: string; methods: string[] }[],
  versions = ['Default'],
): Record<string, unknown> => ({ api_id: apiId, versions, allowed_urls: urls });

async function provision(gw: InProcessGateway): Promise<void> {
  const apis = [
    // The report: listen path with a trailing slash, the listen path stripped.
    keyed('acc', '/acc/', echo().url, {
      proxy: { listen_path: '/acc/', target_url: echo().url, strip_listen_path: true },
    }),
    // No trailing slash, the listen path kept upstream.
    keyed('keep', '/keep', echo().url, {
      proxy: { listen_path: '/keep', target_url: echo().url, strip_listen_path: false },
    }),
    // The version is the first segment after the listen path.
    keyed('ver', '/ver/', echo().url, {
      proxy: { listen_path: '/ver/', target_url: echo().url, strip_listen_path: true },
      definition: { location: 'url', strip_path: true },
      version_data: { not_versioned: false, default_version: '', versions: { v1: { name: 'v1' } } },
    }),
    keyed('dom', '/dom/', echo().url, {
      domain: 'api.example.test',
      proxy: { listen_path: '/dom/', target_url: echo().url, strip_listen_path: true },
    }),
    // The root listen path: both paths are one.
    keyed('root', '/', echo().url, {
      domain: 'root.example.test',
      proxy: { listen_path: '/', target_url: echo().url, strip_listen_path: true },
    }),
  ];
  for (const api of apis) await gw.addApi(api);
  const policy = {
    id: 'pol-urls',
    name: 'allowed URLs',
    state: 'active',
    active: true,
    access_rights: {
      acc: right('acc', [
        { url: '/anything(.*)', methods: GET },
        { url: '/acc/whole(.*)', methods: GET },
        { url: '^/anchored$', methods: ['POST'] },
        { url: '/admin', methods: GET },
        // A `^` past the first character: matched on the path after the listen path all the same.
        { url: '^/alt$|^/other$', methods: GET },
        { url: '(?<!c)/look', methods: GET },
      ]),
      keep: right('keep', [
        { url: '/anything(.*)', methods: GET },
        { url: '/keep/whole(.*)', methods: GET },
      ]),
      ver: right('ver', [{ url: '/v1/anything(.*)', methods: GET }], ['v1']),
      dom: right('dom', [{ url: '/anything', methods: GET }]),
      root: right('root', [{ url: '/anything', methods: GET }]),
    },
  };
  const res = await gw.admin('POST', '/svc/policies', policy);
  assert.equal(res.status, 200, res.text);
  const key = await gw.admin('POST', '/svc/keys/key-urls', { apply_policies: ['pol-urls'] });
  assert.equal(key.status, 200, key.text);
  await gw.reload();
}

interface Case extends Expected {
  name: string;
  method?: string;
  path: string;
  host?: string;
  /** The path the upstream received (a 200 only). */
  upstreamPath?: string;
}

const refused = { status: 403, error: 'Access to this resource has been disallowed' } as const;

const cases: Case[] = [
  {
    name: 'relative to the listen path, stripped (the report)',
    path: '/acc/anything/1',
    status: 200,
    upstreamPath: '/anything/1',
  },
  { name: 'relative, the listen path in another case', path: '/ACC/anything/1', status: 200 },
  { name: 'relative, nothing after the pattern', path: '/acc/anything', status: 200 },
  { name: 'the whole request path', path: '/acc/whole/2', status: 200, upstreamPath: '/whole/2' },
  { name: 'relative, deeper in the path: refused', path: '/acc/x/anything', ...refused },
  { name: 'the whole path, deeper in the path: refused', path: '/acc/x/acc/whole', ...refused },
  { name: 'a method the entry does not list', method: 'POST', path: '/acc/anything/1', ...refused },
  { name: 'a method of another entry only', method: 'DELETE', path: '/acc/whole/2', ...refused },
  { name: '/admin matches /admin', path: '/acc/admin', status: 200 },
  { name: '/admin does not match /x/admin', path: '/acc/x/admin', ...refused },
  { name: 'an anchored pattern, relative', method: 'POST', path: '/acc/anchored', status: 200 },
  { name: 'an anchored pattern: its $ holds', method: 'POST', path: '/acc/anchored/more', ...refused },
  { name: '^ in each alternative, relative', path: '/acc/other', status: 200 },
  { name: '^ in each alternative, deeper: refused', path: '/acc/x/other', ...refused },
  { name: 'a lookbehind, relative', path: '/acc/look', status: 200 },
  { name: 'a path no entry covers', path: '/acc/else', ...refused },
  {
    name: 'listen path kept upstream, relative',
    path: '/keep/anything/1',
    status: 200,
    upstreamPath: '/keep/anything/1',
  },
  {
    name: 'listen path kept upstream, the whole path',
    path: '/keep/whole',
    status: 200,
    upstreamPath: '/keep/whole',
  },
  { name: 'listen path kept upstream, deeper: refused', path: '/keep/x/anything', ...refused },
  { name: 'listen path kept upstream, another method', method: 'DELETE', path: '/keep/anything', ...refused },
  {
    name: 'a version in the URL is part of the path after the listen path',
    path: '/ver/v1/anything/1',
    status: 200,
    upstreamPath: '/anything/1',
  },
  { name: 'a version in the URL, deeper: refused', path: '/ver/v1/x/anything', ...refused },
  { name: 'a custom domain, relative', host: 'api.example.test', path: '/dom/anything', status: 200 },
  { name: 'a custom domain, deeper: refused', host: 'api.example.test', path: '/dom/x/anything', ...refused },
  { name: 'the root listen path', host: 'root.example.test', path: '/anything', status: 200 },
  {
    name: 'the root listen path, deeper: refused',
    host: 'root.example.test',
    path: '/x/anything',
    ...refused,
  },
];

describeEachSetup(
  'allowed URLs',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });
    for (const c of cases) {
      test(`${c.method ?? 'GET'} ${c.host ?? ''}${c.path}: ${c.name}`, async () => {
        const res = await gw().request({
          method: c.method ?? 'GET',
          path: c.path,
          headers: { authorization: 'key-urls', ...(c.host === undefined ? {} : { host: c.host }) },
        });
        assertAnswer(res, c);
        if (c.upstreamPath !== undefined) assert.equal((res.json as Echoed).path, c.upstreamPath);
      });
    }
  },
);
