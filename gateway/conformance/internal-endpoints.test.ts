/**
 * Internal endpoints (`version_data.versions.<v>.extended_paths.internal`, and an OAS operation's
 * `internal: {enabled: true}`): a client calling one gets 403 `Requested endpoint is forbidden`;
 * a request that reaches it through an internal target passes: a URL rewrite to `svc://self/...`
 * of the same API, or another API's `svc://<api_id>/...` or `svc://<api-name>/...`. An internal
 * target's host names the API by ID, by name (unless several APIs share it: that API is left
 * out), or `self`; a hop back to the same API on the same method and path is a loop (508).
 * Tables (request in; status, error and what the upstream saw out) against the files and Redis
 * stores with the fast path on and off (`ie-plain`, without internal targets of its own, is
 * served by the fast path when it is on).
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { oasDocument } from '../../schemas/testing.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { keyless, oneVersion } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../testing/tables.ts';

type Json = Record<string, unknown>;

interface Row extends Expected {
  name: string;
  method?: string;
  path: string;
  /** What the upstream saw (a 200 only). */
  upstreamPath?: string;
}

const echo = useEcho();

const op = (operationId: string): Json => ({ operationId, responses: { 200: { description: 'ok' } } });

const classicApis = (): Json[] => [
  // Internal endpoints reached through a URL rewrite to svc://self/... of the same API.
  keyless(
    'ie-api',
    '/ie/',
    echo().url,
    {
      name: 'Orders Internal',
      ...oneVersion({
        extended_paths: {
          internal: [
            { path: '/private/{id}', method: 'GET' },
            { path: '/hidden' },
            { path: '/off', disabled: true },
          ],
          url_rewrites: [
            {
              path: '/public/{id}',
              method: 'GET',
              match_pattern: '/public/(\\w+)',
              rewrite_to: 'svc://self/private/$1',
            },
          ],
        },
      }),
    },
    { strip_listen_path: true },
  ),
  // Internal endpoints and no internal target of its own: the fast path serves it when on.
  keyless(
    'ie-plain',
    '/ie-plain/',
    echo().url,
    oneVersion({ extended_paths: { internal: [{ path: '/private', method: 'GET' }] } }),
    { strip_listen_path: true },
  ),
  // Other APIs reaching the internal endpoints: by ID, by name.
  keyless('ie-to-plain', '/ie-to-plain/', 'svc://ie-plain/private', {}, { strip_listen_path: true }),
  keyless('ie-by-name', '/ie-by-name/', 'svc://orders-internal/private', {}, { strip_listen_path: true }),
  keyless('ie-to-oas', '/ie-to-oas/', 'svc://oas-ie/secret', {}, { strip_listen_path: true }),
  // A name two APIs share: the API naming it stays loaded; its requests to that target get 502.
  keyless('dup-1', '/dup-1/', echo().url, { name: 'Dup Name' }),
  keyless('dup-2', '/dup-2/', echo().url, { name: 'dup-name' }),
  keyless('ie-ambiguous', '/ie-ambiguous/', 'svc://dup-name/x', {}, { strip_listen_path: true }),
  // svc://self back on the same method and path: a loop.
  keyless('ie-loop', '/ie-loop/', 'svc://self', {}, { strip_listen_path: true }),
];

const oasApis = (u: string): Json[] => [
  oasDocument(
    { id: 'oas-ie', listenPath: '/oas-ie/', target: u, strip: true },
    {
      middleware: {
        operations: {
          secret: { internal: { enabled: true } },
          front: {
            urlRewrite: { enabled: true, pattern: '/front/(\\w+)', rewriteTo: 'svc://self/secret/$1' },
          },
          open: { internal: { enabled: false } },
        },
      },
    },
    {
      paths: {
        '/secret/{id}': { get: op('secret') },
        '/front/{id}': { get: op('front') },
        '/open': { get: op('open') },
      },
    },
  ),
];

const forbidden = { status: 403, error: 'Requested endpoint is forbidden' } as const;

const rows: Row[] = [
  { name: 'classic: from a client, refused', path: '/ie/private/1', ...forbidden },
  {
    name: 'classic: another method of the same path is not internal',
    method: 'POST',
    path: '/ie/private/1',
    status: 200,
    upstreamPath: '/private/1',
  },
  {
    name: 'classic: an entry without method covers every method',
    method: 'DELETE',
    path: '/ie/hidden',
    ...forbidden,
  },
  { name: 'classic: a disabled entry is skipped', path: '/ie/off', status: 200, upstreamPath: '/off' },
  {
    name: 'classic: through a URL rewrite to svc://self/..., allowed',
    path: '/ie/public/7',
    status: 200,
    upstreamPath: '/private/7',
  },
  { name: 'classic: other paths are served', path: '/ie/other', status: 200, upstreamPath: '/other' },
  { name: 'classic, fast-path route: from a client, refused', path: '/ie-plain/private', ...forbidden },
  {
    name: 'classic, fast-path route: other paths are served',
    path: '/ie-plain/public',
    status: 200,
    upstreamPath: '/public',
  },
  {
    name: 'classic: from another API (svc://<api_id>), allowed',
    path: '/ie-to-plain/x',
    status: 200,
    upstreamPath: '/private/x',
  },
  {
    name: 'classic: from another API naming it by name (svc://orders-internal), allowed',
    path: '/ie-by-name/3',
    status: 200,
    upstreamPath: '/private/3',
  },
  {
    name: 'a name two APIs share: the API naming it is served, its calls to that target get 502',
    path: '/ie-ambiguous/x',
    status: 502,
    error: /^svc:\/\/dup-name: 2 APIs have the name "dup-name" \(dup-1, dup-2\): write the API ID/,
  },
  {
    name: 'svc://self on the same method and path: a loop',
    path: '/ie-loop/x',
    status: 508,
    error: /^Loop detected: .*\(ie-loop -> ie-loop\)$/,
  },
  { name: 'OAS: from a client, refused', path: '/oas-ie/secret/1', ...forbidden },
  {
    name: 'OAS: through a urlRewrite to svc://self/..., allowed',
    path: '/oas-ie/front/5',
    status: 200,
    upstreamPath: '/secret/5',
  },
  {
    name: 'OAS: internal with enabled false is not applied',
    path: '/oas-ie/open',
    status: 200,
    upstreamPath: '/open',
  },
  {
    name: 'OAS: from another API, allowed',
    path: '/ie-to-oas/9',
    status: 200,
    upstreamPath: '/secret/9',
  },
];

describeEachSetup(
  'internal endpoints',
  () => ({}),
  ({ gw }) => {
    before(async () => {
      for (const api of classicApis()) await gw().addApi(api);
      for (const doc of oasApis(echo().url)) {
        const res = await gw().admin('POST', '/svc/apis/oas', doc);
        assert.equal(res.status, 200, res.text);
      }
      await gw().reload();
    });
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        const res = await gw().request({ fresh: true, method: row.method ?? 'GET', path: row.path });
        assertAnswer(res, row);
        if (row.status === 200 && row.upstreamPath !== undefined) {
          assert.equal((res.json as Echoed).path, row.upstreamPath);
        }
      });
    }
  },
);
