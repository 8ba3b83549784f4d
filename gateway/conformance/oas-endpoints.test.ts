/**
 * The endpoint features of OAS APIs (`x-svc-api-gateway.middleware.operations.<operationId>` and
 * `middleware.global.cors` / `.cache`), as a table: each OAS API is stored through
 * `/svc/apis/oas`, converted to the classic `extended_paths` entries the endpoint middleware
 * enforce, and every row checks what the client got (status, body, headers) and what the
 * upstream received. Runs in every setup of testing/tables.ts: files and Redis stores, the fast
 * path on and off.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { oasDocument, requiring } from '../../schemas/testing.ts';
import { useEcho, type Echoed } from '../testing/echo.ts';
import { assertAnswer, describeEachSetup, type Expected, type RowRequest } from '../testing/tables.ts';

type Json = Record<string, unknown>;

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** `paths` of a document: `[path, method, operationId, extra]` rows. */
const paths = (...ops: [string, string, string, Json?][]): Json => {
  const out: Record<string, Json> = {};
  for (const [path, method, operationId, extra] of ops) {
    out[path] = {
      ...out[path],
      [method]: { operationId, responses: { 200: { description: 'ok' } }, ...extra },
    };
  }
  return { paths: out };
};

/** A keyless OAS API `id` at `/<id>/` with the operations of `rest` and the middleware `mw`. */
const api = (id: string, target: string, mw: Json, rest: Json, ext: Json = {}): Json =>
  oasDocument({ id, listenPath: `/${id}/`, target, strip: true }, { ...ext, middleware: mw }, rest);

const userSchema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
};

const apis = (u: string): Json[] => [
  api(
    'allow',
    u,
    { operations: { listPets: { allow: { enabled: true } }, getPet: { allow: { enabled: true } } } },
    paths(['/pets', 'get', 'listPets'], ['/pets/{id}', 'get', 'getPet'], ['/pets', 'post', 'addPet']),
  ),
  api(
    'block',
    u,
    { operations: { admin: { block: { enabled: true, ignoreCase: true } } } },
    paths(['/admin', 'get', 'admin']),
  ),
  oasDocument(
    { id: 'auth', listenPath: '/auth/', target: u, strip: true },
    {
      ...requiring('token', { type: 'apiKey', in: 'header', name: 'Authorization' })[0],
      middleware: { operations: { health: { ignoreAuthentication: { enabled: true } } } },
    },
    {
      ...requiring('token', { type: 'apiKey', in: 'header', name: 'Authorization' })[1],
      ...paths(['/health', 'get', 'health'], ['/pets', 'get', 'pets']),
    },
  ),
  api(
    'ops',
    u,
    {
      operations: {
        upload: { requestSizeLimit: { enabled: true, value: 5 } },
        headers: {
          transformRequestHeaders: {
            enabled: true,
            add: [{ name: 'X-Added', value: 'yes' }],
            remove: ['X-Drop'],
          },
          transformResponseHeaders: { enabled: true, add: [{ name: 'X-Resp', value: 'r' }] },
        },
        method: { transformRequestMethod: { enabled: true, toMethod: 'POST' } },
        rewrite: {
          urlRewrite: {
            enabled: true,
            pattern: '/books/(\\w+)',
            rewriteTo: '/library/item?id=$1',
            triggers: [
              {
                condition: 'any',
                rules: [{ in: 'header', name: 'X-Tier', pattern: '^gold$' }],
                rewriteTo: '/premium/$1',
              },
            ],
          },
        },
        wrapXml: {
          transformRequestBody: {
            enabled: true,
            format: 'xml',
            body: b64('{"wrapped": {{printf "%q" .person.name}}}'),
          },
        },
        wrap: {
          transformRequestBody: {
            enabled: true,
            format: 'json',
            body: b64('{"wrapped": {{printf "%q" .name}}}'),
          },
        },
        shape: {
          transformResponseBody: { enabled: true, format: 'json', body: b64('{"got": "{{.method}}"}') },
        },
        addUser: { validateRequest: { enabled: true } },
        addRef: { validateRequest: { enabled: true, errorResponseCode: 400 } },
        teapot: {
          mockResponse: {
            enabled: true,
            code: 418,
            body: 'short and stout',
            headers: [{ name: 'X-Mock', value: 'teapot' }],
          },
        },
        hang: { enforceTimeout: { enabled: true, value: 1 } },
        status: {
          circuitBreaker: {
            enabled: true,
            threshold: 0.5,
            sampleSize: 2,
            coolDownPeriod: 10,
            halfOpenStateEnabled: true,
          },
        },
        cached: { cache: { enabled: true, timeout: 60 } },
        off: { mockResponse: { enabled: false, code: 500 } },
      },
      global: {
        cache: { enabled: true, cacheResponseCodes: [200] },
        cors: {
          enabled: true,
          allowedOrigins: ['https://app.example.com'],
          allowedMethods: ['GET', 'PUT'],
          allowedHeaders: ['X-Custom'],
          maxAge: 60,
        },
      },
    },
    {
      ...paths(
        ['/upload', 'post', 'upload'],
        ['/headers', 'get', 'headers'],
        ['/method', 'get', 'method'],
        ['/books/{id}', 'get', 'rewrite'],
        ['/wrap', 'post', 'wrap'],
        ['/wrap-xml', 'post', 'wrapXml'],
        ['/shape', 'get', 'shape'],
        [
          '/users',
          'post',
          'addUser',
          { requestBody: { content: { 'application/json': { schema: userSchema } } } },
        ],
        [
          '/refs',
          'post',
          'addRef',
          {
            requestBody: {
              content: { 'application/json': { schema: { $ref: '#/components/schemas/User' } } },
            },
          },
        ],
        ['/teapot', 'get', 'teapot'],
        ['/off', 'get', 'off'],
        ['/hang', 'get', 'hang'],
        ['/status/{code}', 'get', 'status'],
        ['/cached', 'get', 'cached'],
      ),
      components: { schemas: { User: userSchema } },
    },
  ),
];

interface Row extends Expected, RowRequest {
  name: string;
  /** The exact body the client got. */
  text?: string;
  /** What the echo upstream received (proxied rows). */
  upstream?: Partial<Pick<Echoed, 'method' | 'path' | 'query' | 'body'>>;
}

const FORBIDDEN = 'Requested endpoint is forbidden';
const json = { 'content-type': 'application/json' };

const rows: Row[] = [
  { name: 'allow: an allowed operation', path: '/allow/pets', status: 200, upstream: { path: '/pets' } },
  { name: 'allow: a path parameter', path: '/allow/pets/42', status: 200, upstream: { path: '/pets/42' } },
  { name: 'allow: another method', method: 'POST', path: '/allow/pets', status: 403, error: FORBIDDEN },
  { name: 'allow: another path', path: '/allow/other', status: 403, error: FORBIDDEN },
  { name: 'block: a blocked operation', path: '/block/admin', status: 403, error: FORBIDDEN },
  { name: 'block: ignoreCase', path: '/block/ADMIN', status: 403, error: FORBIDDEN },
  { name: 'block: another path', path: '/block/x', status: 200 },
  { name: 'ignoreAuthentication: no key asked', path: '/auth/health', status: 200 },
  {
    name: 'ignoreAuthentication: other operations ask',
    path: '/auth/pets',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'requestSizeLimit: past the limit',
    method: 'POST',
    path: '/ops/upload',
    body: 'too long a body',
    status: 413,
  },
  { name: 'requestSizeLimit: within', method: 'POST', path: '/ops/upload', body: 'ok', status: 200 },
  {
    name: 'transformRequestHeaders and transformResponseHeaders',
    path: '/ops/headers',
    headers: { 'x-drop': 'gone', 'x-keep': 'kept' },
    status: 200,
    upstreamHeaders: { 'x-added': 'yes', 'x-drop': undefined, 'x-keep': 'kept' },
    responseHeaders: { 'x-resp': 'r' },
  },
  {
    name: 'transformRequestHeaders: only its operation',
    path: '/ops/method',
    status: 200,
    upstreamHeaders: { 'x-added': undefined },
  },
  { name: 'transformRequestMethod', path: '/ops/method', status: 200, upstream: { method: 'POST' } },
  {
    name: 'urlRewrite: the basic trigger',
    path: '/ops/books/dune',
    status: 200,
    upstream: { path: '/library/item', query: 'id=dune' },
  },
  {
    name: 'urlRewrite: a header trigger',
    path: '/ops/books/dune',
    headers: { 'x-tier': 'gold' },
    status: 200,
    upstream: { path: '/premium/dune' },
  },
  {
    name: 'transformRequestBody',
    method: 'POST',
    path: '/ops/wrap',
    headers: json,
    body: '{"name":"Ann"}',
    status: 200,
    upstream: { body: '{"wrapped": "Ann"}' },
  },
  {
    name: 'transformRequestBody, format xml',
    method: 'POST',
    path: '/ops/wrap-xml',
    headers: { 'content-type': 'application/xml' },
    body: '<person><name>Ann</name></person>',
    status: 200,
    upstream: { body: '{"wrapped": "Ann"}' },
  },
  { name: 'transformResponseBody', path: '/ops/shape', status: 200, text: '{"got": "GET"}' },
  {
    name: 'validateRequest: a body missing a field',
    method: 'POST',
    path: '/ops/users',
    headers: json,
    body: '{}',
    status: 422,
    error: /name/,
  },
  {
    name: 'validateRequest: a valid body',
    method: 'POST',
    path: '/ops/users',
    headers: json,
    body: '{"name":"Ann"}',
    status: 200,
  },
  {
    name: 'validateRequest: a $ref schema, errorResponseCode',
    method: 'POST',
    path: '/ops/refs',
    headers: json,
    body: '{"name":1}',
    status: 400,
    error: /name/,
  },
  {
    name: 'mockResponse',
    path: '/ops/teapot',
    status: 418,
    text: 'short and stout',
    responseHeaders: { 'x-mock': 'teapot' },
  },
  { name: 'mockResponse: disabled', path: '/ops/off', status: 200, upstream: { path: '/off' } },
  { name: 'enforceTimeout', path: '/ops/hang', status: 504 },
  { name: 'circuitBreaker: a failure', path: '/ops/status/500', status: 500 },
  { name: 'circuitBreaker: another opens it', path: '/ops/status/502', status: 502 },
  {
    name: 'circuitBreaker: open',
    path: '/ops/status/200',
    status: 503,
    error: 'Service temporarily unavailable.',
  },
  {
    name: 'cache: a miss',
    path: '/ops/cached',
    status: 200,
    responseHeaders: { 'x-svc-cached-response': undefined },
  },
  {
    name: 'cache: a hit',
    path: '/ops/cached',
    status: 200,
    responseHeaders: { 'x-svc-cached-response': '1' },
  },
  {
    name: 'cache: other operations are not cached',
    path: '/ops/method',
    status: 200,
    responseHeaders: { 'x-svc-cached-response': undefined },
  },
  {
    name: 'cors: a preflight answered by the gateway',
    method: 'OPTIONS',
    path: '/ops/headers',
    headers: {
      origin: 'https://app.example.com',
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'X-Custom',
    },
    status: 204,
    responseHeaders: {
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-max-age': '60',
    },
  },
  {
    name: 'cors: another origin',
    path: '/ops/headers',
    headers: { origin: 'https://evil.example.com' },
    status: 200,
    responseHeaders: { 'access-control-allow-origin': undefined },
  },
];

interface Refusal {
  name: string;
  doc: (u: string) => Json;
  /** The refusal's reason, matched. */
  reason: RegExp;
}

const refusals: Refusal[] = [
  {
    name: 'an operationId that names no operation',
    doc: (u) =>
      api('r1', u, { operations: { nope: { block: { enabled: true } } } }, paths(['/a', 'get', 'a'])),
    reason:
      /x-svc-api-gateway\.middleware\.operations\.nope: .*no operation in paths has the operationId "nope"/,
  },
  {
    name: 'a setting not converted',
    doc: (u) =>
      api('r2', u, { operations: { a: { virtualEndpoint: { enabled: true } } } }, paths(['/a', 'get', 'a'])),
    reason: /x-svc-api-gateway\.middleware\.operations\.a\.virtualEndpoint: .*not supported yet/,
  },
  {
    name: 'validateRequest without a request body schema',
    doc: (u) =>
      api('r3', u, { operations: { a: { validateRequest: { enabled: true } } } }, paths(['/a', 'post', 'a'])),
    reason: /operations\.a\.validateRequest: .*requestBody/,
  },
  {
    name: 'an operation cache without the API cache',
    doc: (u) => api('r4', u, { operations: { a: { cache: { enabled: true } } } }, paths(['/a', 'get', 'a'])),
    reason: /operations\.a\.cache\.enabled: .*middleware\.global\.cache/,
  },
  {
    name: 'a classic rule, reported at the document path',
    doc: (u) =>
      api(
        'r5',
        u,
        { operations: { a: { urlRewrite: { enabled: true, pattern: '(', rewriteTo: '/x' } } } },
        paths(['/a', 'get', 'a']),
      ),
    reason: /operations\.a\.urlRewrite\.pattern/,
  },
];

const echo = useEcho();

describeEachSetup(
  'OAS endpoint features',
  () => ({}),
  (ctx) => {
    describe('served', () => {
      before(async () => {
        const gw = ctx.gw();
        for (const doc of apis(echo().url)) {
          const res = await gw.admin('POST', '/svc/apis/oas', doc);
          assert.equal(res.status, 200, res.text);
        }
        const key = await gw.admin('POST', '/svc/keys/oas-key', {
          access_rights: { auth: { api_id: 'auth', versions: [] } },
        });
        assert.equal(key.status, 200, key.text);
        await gw.reload();
      });
      for (const row of rows) {
        test(row.name, async () => {
          const res = await ctx.gw().request({
            method: row.method ?? 'GET',
            path: row.path,
            headers: row.headers ?? {},
            ...(row.body === undefined ? {} : { body: row.body }),
          });
          assertAnswer(res, row);
          if (row.text !== undefined) assert.equal(res.text, row.text);
          for (const [k, v] of Object.entries(row.upstream ?? {})) {
            assert.equal((res.json as Record<string, unknown>)[k], v, `upstream ${k}`);
          }
        });
      }
    });
    describe('refused, by document path', () => {
      for (const r of refusals) {
        test(r.name, async () => {
          const res = await ctx.gw().admin('POST', '/svc/apis/oas', r.doc(echo().url));
          assert.equal(res.status, 400, res.text);
          assert.match(String((res.json as Json).message), r.reason);
        });
      }
    });
  },
);
