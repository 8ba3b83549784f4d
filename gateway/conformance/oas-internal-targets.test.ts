/**
 * Internal targets from OAS APIs (the reference's `upstream.url: tyk://...` and internal APIs,
 * written `svc://<api_id>/<path>` here): `x-svc-api-gateway.upstream.url` and an operation's
 * `urlRewrite.rewriteTo` (and a trigger's) may name another API of the gateway, which then runs
 * in process; `info.state.internal: true` makes an OAS API reachable only that way (404 to
 * clients). A table (request in; status, error and what the upstream saw out) in every setup of
 * testing/tables.ts: files and Redis stores, the fast path on and off.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { oasDocument } from '../../schemas/testing.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { keyless } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../testing/tables.ts';

type Json = Record<string, unknown>;

const echo = useEcho();

const op = (operationId: string): Json => ({ operationId, responses: { 200: { description: 'ok' } } });

const oasApis = (u: string): Json[] => [
  // The internal OAS API: served to no client; the others reach it.
  oasDocument(
    { id: 'oas-int', listenPath: '/oas-int/', target: u, strip: true },
    { info: { state: { active: true, internal: true } } },
  ),
  // upstream.url naming the internal OAS API, with a base path.
  oasDocument({ id: 'oas-to', listenPath: '/oas-to/', target: 'svc://oas-int/base', strip: true }),
  // upstream.url naming a classic internal API.
  oasDocument({ id: 'oas-to-classic', listenPath: '/oas-to-classic/', target: 'svc://cl-int', strip: true }),
  // An operation's urlRewrite to the internal API, by pattern and by trigger.
  oasDocument(
    { id: 'oas-rw', listenPath: '/oas-rw/', target: u, strip: true },
    {
      middleware: {
        operations: {
          book: {
            urlRewrite: {
              enabled: true,
              pattern: '/books/(\\w+)',
              rewriteTo: 'svc://oas-int/library/$1?via=rw',
              triggers: [
                {
                  condition: 'any',
                  rules: [{ in: 'header', name: 'X-Tier', pattern: 'gold' }],
                  rewriteTo: 'svc://oas-int/premium',
                },
              ],
            },
          },
        },
      },
    },
    { paths: { '/books/{id}': { get: op('book') }, '/other': { get: op('other') } } },
  ),
];

interface Row extends Expected {
  name: string;
  path: string;
  headers?: Record<string, string>;
  upstream?: Partial<Pick<Echoed, 'path' | 'query'>>;
}

const rows: Row[] = [
  {
    name: 'upstream.url svc://: served through the internal OAS API',
    path: '/oas-to/items/1',
    status: 200,
    upstream: { path: '/base/items/1' },
  },
  {
    name: 'upstream.url svc:// to a classic internal API',
    path: '/oas-to-classic/items/2',
    status: 200,
    upstream: { path: '/items/2' },
  },
  { name: 'info.state.internal: not served to clients', path: '/oas-int/items/1', status: 404 },
  {
    name: 'urlRewrite to svc://: the pattern',
    path: '/oas-rw/books/dune',
    status: 200,
    upstream: { path: '/library/dune', query: 'via=rw' },
  },
  {
    name: 'urlRewrite to svc://: a trigger',
    path: '/oas-rw/books/dune',
    headers: { 'X-Tier': 'gold' },
    status: 200,
    upstream: { path: '/premium' },
  },
  {
    name: 'urlRewrite: another operation goes to the upstream',
    path: '/oas-rw/other',
    status: 200,
    upstream: { path: '/other' },
  },
];

describeEachSetup(
  'OAS internal targets',
  () => ({}),
  (ctx) => {
    describe('served', () => {
      before(async () => {
        const gw = ctx.gw();
        await gw.addApi(
          keyless('cl-int', '/cl-int/', echo().url, { internal: true }, { strip_listen_path: true }),
        );
        for (const doc of oasApis(echo().url)) {
          const res = await gw.admin('POST', '/svc/apis/oas', doc);
          assert.equal(res.status, 200, res.text);
        }
        await gw.reload();
      });
      for (const row of rows) {
        test(row.name, async () => {
          const res = await ctx.gw().request({ method: 'GET', path: row.path, headers: row.headers ?? {} });
          assertAnswer(res, row);
          for (const [k, v] of Object.entries(row.upstream ?? {})) {
            assert.equal((res.json as Record<string, unknown>)[k], v, `upstream ${k}`);
          }
        });
      }
    });
    describe('refused, by document path', () => {
      test('upstream.url svc:// without an API ID', async () => {
        const doc = oasDocument({ id: 'oas-bad', listenPath: '/oas-bad/', target: 'svc:///x' });
        const res = await ctx.gw().admin('POST', '/svc/apis/oas', doc);
        assert.equal(res.status, 400, res.text);
        assert.match(String((res.json as Json).message), /x-svc-api-gateway\.upstream\.url/);
      });
    });
  },
);
