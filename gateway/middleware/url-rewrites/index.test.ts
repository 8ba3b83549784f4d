/**
 * URL rewrites (`extended_paths.url_rewrites`, with triggers) and context variables
 * (`$tyk_context.`, `$tyk_meta.`) in rewrites and header values, as tables (request in; status,
 * the path, query, host and headers the upstream saw out). Each table runs against the files and
 * Redis stores with the fast path on and off; on the fast path every row is served by it, except
 * a payload trigger's (it reads the body).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless, oneVersion, assertWriteRefused, withGateway } from '../../testing/harness.ts';
import {
  assertAnswer,
  describeProvisioned,
  sendRow,
  type Expected,
  type RowRequest,
} from '../../testing/tables.ts';
import { rights } from '../../testing/limits.ts';

interface Row extends Expected, RowRequest {
  name: string;
  /** What the upstream saw (a 200 only). */
  upstream?: string;
  upstreamPath?: string;
  upstreamQuery?: string;
  /** node:http serves it even with the fast path on (the body is read). */
  readsBody?: boolean;
}

const echo = useEcho();
const other = useEcho('other');

const apis = (): Record<string, unknown>[] => [
  keyless(
    'rw',
    '/rw/',
    echo().url,
    oneVersion({
      extended_paths: {
        url_rewrites: [
          {
            path: '/books/{id}',
            method: 'GET',
            match_pattern: '/books/(\\w+)',
            rewrite_to: '/library/item?id=$1',
          },
          {
            path: '/tier',
            match_pattern: '/tier(.*)',
            rewrite_to: '/standard$1',
            triggers: [
              {
                on: 'any',
                options: { header_matches: { 'X-Tier': { match_rx: '^(gold|platinum)$' } } },
                rewrite_to: '/premium/$tyk_context.trigger-0-X-Tier-0',
              },
              {
                on: 'all',
                options: {
                  query_val_matches: { beta: { match_rx: '^yes$' } },
                  path_part_matches: { part: { match_rx: '^tier$' } },
                },
                rewrite_to: '/beta$1',
              },
              {
                on: 'any',
                options: { header_matches: { 'X-Legacy': { match_rx: '^$', reverse: true } } },
                rewrite_to: 'legacy',
              },
            ],
          },
          { path: '/keep', match_pattern: '/keep', rewrite_to: '/kept' },
          { path: '/off', match_pattern: '.*', rewrite_to: '/never', disabled: true },
          { path: '/digits', match_pattern: '/digits/(\\d+)', rewrite_to: '/num/$1' },
          { path: '/away', match_pattern: '/away(.*)', rewrite_to: `${other().url}/there$1` },
        ],
      },
    }),
  ),
  keyless('rwctx', '/rwctx/', echo().url, {
    enable_context_vars: true,
    ...oneVersion({
      global_headers: {
        'x-path': '$tyk_context.path',
        'x-client': '$tyk_context.remote_addr',
        'x-name': 'name=$tyk_context.headers_X_Name',
        'x-query': '$tyk_context.request_data',
        'x-parts': '$tyk_context.path_parts',
        'x-cookie': '$tyk_context.cookies_session_id',
      },
      extended_paths: {
        url_rewrites: [
          { path: '/who', match_pattern: '/who', rewrite_to: '/user/$tyk_context.headers_X_User' },
        ],
      },
    }),
  }),
  keyless(
    'rwplain',
    '/rwplain/',
    echo().url,
    oneVersion({
      global_headers: { 'x-literal': '$tyk_context.path' },
      extended_paths: {
        url_rewrites: [
          { path: '/who', match_pattern: '/who', rewrite_to: '/user/$tyk_context.headers_X_User' },
        ],
      },
    }),
  ),
  keyed(
    'rwmeta',
    '/rwmeta/',
    echo().url,
    oneVersion({
      global_headers: { 'x-tier': '$tyk_meta.tier', 'x-none': '[$tyk_meta.absent]' },
      extended_paths: {
        url_rewrites: [
          {
            path: '/m',
            match_pattern: '/m',
            rewrite_to: '/basic',
            triggers: [
              {
                on: 'any',
                options: { session_meta_matches: { tier: { match_rx: '^gold$' } } },
                rewrite_to: '/gold',
              },
            ],
          },
        ],
      },
    }),
  ),
  keyless(
    'rwbody',
    '/rwbody/',
    echo().url,
    oneVersion({
      extended_paths: {
        url_rewrites: [
          {
            path: '/p',
            method: 'POST',
            match_pattern: '/p',
            rewrite_to: '/plain',
            triggers: [
              {
                on: 'any',
                options: { payload_matches: { match_rx: '"kind":"(\\w+)"' } },
                rewrite_to: '/kind/$tyk_context.trigger-0-payload-0-0',
              },
            ],
          },
        ],
      },
    }),
  ),
];

const GOLD = { authorization: 'rw-gold' };

const rows: Row[] = [
  {
    name: 'groups into path and query',
    path: '/rw/books/42',
    status: 200,
    upstreamPath: '/library/item',
    upstreamQuery: 'id=42',
  },
  {
    name: 'another method is not rewritten',
    method: 'POST',
    path: '/rw/books/42',
    status: 200,
    upstreamPath: '/rw/books/42',
  },
  {
    name: 'no trigger holds: the entry target',
    path: '/rw/tier/x',
    status: 200,
    upstreamPath: '/standard/x',
  },
  {
    name: 'header trigger, any, with its match as a variable',
    path: '/rw/tier/x',
    headers: { 'x-tier': 'gold' },
    status: 200,
    upstreamPath: '/premium/gold',
  },
  {
    name: 'header trigger: no match',
    path: '/rw/tier/x',
    headers: { 'x-tier': 'bronze' },
    status: 200,
    upstreamPath: '/standard/x',
  },
  {
    name: 'all: query and path part',
    path: '/rw/tier/x?beta=yes',
    status: 200,
    upstreamPath: '/beta/x',
    upstreamQuery: 'beta=yes',
  },
  {
    name: 'all: one option short',
    path: '/rw/tier/x?beta=no',
    status: 200,
    upstreamPath: '/standard/x',
    upstreamQuery: 'beta=no',
  },
  {
    name: 'reverse: a value that does not match',
    path: '/rw/tier',
    headers: { 'x-legacy': '1' },
    status: 200,
    upstreamPath: '/legacy',
  },
  {
    name: 'the query is kept when the target has none',
    path: '/rw/keep?a=1&b=2',
    status: 200,
    upstreamPath: '/kept',
    upstreamQuery: 'a=1&b=2',
  },
  { name: 'a disabled entry', path: '/rw/off', status: 200, upstreamPath: '/rw/off' },
  {
    name: 'match_pattern does not match',
    path: '/rw/digits/abc',
    status: 200,
    upstreamPath: '/rw/digits/abc',
  },
  { name: 'match_pattern matches', path: '/rw/digits/77', status: 200, upstreamPath: '/num/77' },
  {
    name: 'another host',
    path: '/rw/away/a?q=1',
    status: 200,
    upstream: 'other',
    upstreamPath: '/there/a',
    upstreamQuery: 'q=1',
  },
  // Context variables.
  {
    name: 'context variables in headers',
    path: '/rwctx/a/b?x=1&x=2&y=3',
    headers: { 'x-name': 'Ann', cookie: 'other=1; session-id=abc' },
    status: 200,
    upstreamQuery: 'x=1&x=2&y=3',
    upstreamHeaders: {
      'x-path': '/rwctx/a/b',
      'x-client': '127.0.0.1',
      'x-name': 'name=Ann',
      'x-query': 'x:1,2;y:3',
      'x-parts': 'rwctx,a,b',
      'x-cookie': 'abc',
    },
  },
  {
    name: 'a context variable in a rewrite, query-escaped',
    path: '/rwctx/who',
    headers: { 'x-user': 'a b/c' },
    status: 200,
    upstreamPath: '/user/a%20b%2Fc',
  },
  {
    name: 'without enable_context_vars: headers as written, rewrites empty',
    path: '/rwplain/who',
    headers: { 'x-user': 'ann' },
    status: 200,
    upstreamPath: '/user/',
    upstreamHeaders: { 'x-literal': '$tyk_context.path' },
  },
  {
    name: 'key metadata in headers and a session trigger',
    path: '/rwmeta/m',
    headers: GOLD,
    status: 200,
    upstreamPath: '/gold',
    upstreamHeaders: { 'x-tier': 'gold', 'x-none': '[]' },
  },
  {
    name: 'payload trigger',
    method: 'POST',
    path: '/rwbody/p',
    body: '{"kind":"bulk"}',
    status: 200,
    upstreamPath: '/kind/bulk',
    readsBody: true,
  },
  {
    name: 'payload trigger: no match',
    method: 'POST',
    path: '/rwbody/p',
    body: '{"other":1}',
    status: 200,
    upstreamPath: '/plain',
    readsBody: true,
  },
];

describeProvisioned(
  'url rewrites and context variables',
  apis,
  { 'rw-gold': { access_rights: rights('rwmeta'), meta_data: { tier: 'gold' } } },
  (gw, fastPath) => {
    for (const row of rows) {
      test(`${row.name}: ${String(row.status)}`, async () => {
        const { res, served } = await sendRow(gw(), row);
        assertAnswer(res, row);
        const got = res.json as Echoed;
        if (row.status === 200) assert.equal(got.upstream, row.upstream ?? 'echo', 'upstream');
        if (row.upstreamPath !== undefined) assert.equal(got.path, row.upstreamPath);
        if (row.status === 200) assert.equal(got.query, row.upstreamQuery ?? '');
        assert.equal(served, fastPath && row.readsBody !== true ? 1 : 0, 'entrance');
      });
    }
  },
);

test('writes: rewrite targets and variables svc does not serve are refused by path', async () => {
  const at = 'version_data.versions.Default';
  await withGateway((gw) =>
    assertWriteRefused(
      gw,
      keyless('refused', '/refused/', 'https://secure.example.com', {
        pinned_public_keys: { 'secure.example.com': 'sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' },
        ...oneVersion({
          override_target: 'https://other.example.com',
          global_headers: { 'x-token': '$tyk_context.token', 'x-secret': '$secret_env.KEY' },
          extended_paths: {
            url_rewrites: [
              { path: '/a', match_pattern: '/a(', rewrite_to: 'tyk://other/a' },
              {
                path: '/b',
                match_pattern: '/b',
                rewrite_to: 'http://$1.example.com/b',
                triggers: [
                  { on: 'any', options: { header_matches: { 'X-A': { match_rx: '[' } } }, rewrite_to: '/c' },
                  {
                    on: 'any',
                    options: {},
                    rewrite_to_internal: { target: 'default/other', path: '/x' },
                  },
                ],
              },
            ],
          },
        }),
      }),
      [
        `${at}.override_target: not supported by svc yet: upstream TLS settings`,
        `${at}.global_headers.x-token: not supported by svc yet: the context variable "$tyk_context.token"`,
        `${at}.global_headers.x-secret: not supported by svc yet: secret store variables ($secret_env.)`,
        `${at}.extended_paths.url_rewrites[0].match_pattern: Invalid value`,
        `${at}.extended_paths.url_rewrites[0].rewrite_to: Invalid value: "tyk://other/a": another API of the gateway is written svc://<api_id>/<path> here`,
        `${at}.extended_paths.url_rewrites[1].rewrite_to: not supported by svc yet: a host chosen per request`,
        `${at}.extended_paths.url_rewrites[1].triggers[0].options.header_matches.X-A.match_rx: Invalid value`,
        `${at}.extended_paths.url_rewrites[1].triggers[1].rewrite_to_internal.target: Invalid value: "default/other": the gateway takes the ID of the target API`,
      ],
    ),
  );
});
