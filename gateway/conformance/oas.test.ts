/**
 * OAS APIs (`/svc/apis/oas`), as tables: the management calls (codes, messages, what is
 * stored), then a classic API and an OAS API configured alike, side by side: every request goes
 * to both (under `/c/...` and `/o/...`) and must be answered the same way. Both tables run
 * in every setup of testing/setups.ts: the files and Redis stores, the fast path on and off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { merge } from '../../lib/testing/merge.ts';
import { oasDocument, requiring } from '../../schemas/testing.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyless, type InProcessGateway } from '../testing/harness.ts';
import { assertAnswer, describeEachSetup, type Expected } from '../testing/tables.ts';
import { basicAuth } from '../testing/client.ts';

type Json = Record<string, unknown>;
const X = 'x-svc-api-gateway';

/** A keyless OAS API, stripping its listen path, with `ext` and `rest` merged in. */
const oasApi = (
  id: string | undefined,
  listenPath: string,
  target: string,
  ext: Json = {},
  rest: Json = {},
): Json => oasDocument({ ...(id === undefined ? {} : { id }), listenPath, target, strip: true }, ext, rest);

const apiNotFound = { status: 'error', message: 'API not found' };
const refused = (reason: string): Json => ({
  status: 'error',
  message: `Validation of API Definition failed. Reason: ${reason}`,
});

// --- the management API --------------------------------------------------------------------------

interface AdminCase {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  status: number;
  /** The exact JSON body, or a check of it. */
  want?: unknown;
  check?: (json: unknown, gw: InProcessGateway) => Promise<void> | void;
}

const target = 'http://127.0.0.1:9';
const pets = oasApi('pets', '/pets/', target);
let generated = '';

const adminCases: AdminCase[] = [
  { name: 'empty list', method: 'GET', path: '/svc/apis/oas', status: 200, want: [] },
  {
    name: 'a body without the extension',
    method: 'POST',
    path: '/svc/apis/oas',
    body: { openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: {} },
    status: 400,
    want: { status: 'error', message: 'the payload should contain x-svc-api-gateway' },
  },
  {
    name: 'a body that is not JSON',
    method: 'POST',
    path: '/svc/apis/oas',
    body: '{',
    status: 400,
    want: { status: 'error', message: 'Request malformed' },
  },
  {
    name: 'POST with info.id: added',
    method: 'POST',
    path: '/svc/apis/oas',
    body: pets,
    status: 200,
    want: { key: 'pets', status: 'ok', action: 'added' },
  },
  {
    name: 'POST of the same ID again',
    method: 'POST',
    path: '/svc/apis/oas',
    body: pets,
    status: 409,
    want: { status: 'error', message: 'API already exists' },
  },
  {
    name: 'a classic API with the ID of an OAS API',
    method: 'POST',
    path: '/svc/apis',
    body: keyless('pets', '/other/', target),
    status: 409,
    want: { status: 'error', message: 'API already exists' },
  },
  {
    name: 'a classic API',
    method: 'POST',
    path: '/svc/apis',
    body: keyless('classic', '/classic/', target),
    status: 200,
    want: { key: 'classic', status: 'ok', action: 'added' },
  },
  {
    name: 'an OAS API with the ID of a classic API',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi('classic', '/c2/', target),
    status: 409,
    want: { status: 'error', message: 'API already exists' },
  },
  {
    name: 'POST without info.id: an ID is generated',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi(undefined, '/gen/', target),
    status: 200,
    check: (json) => {
      const body = json as { key: string; status: string; action: string };
      assert.match(body.key, /^[0-9a-f]{32}$/);
      assert.deepEqual({ ...body, key: '' }, { key: '', status: 'ok', action: 'added' });
      generated = body.key;
    },
  },
  {
    name: 'GET returns the document as stored, the generated ID in info.id',
    method: 'GET',
    path: '/svc/apis/oas/{generated}',
    status: 200,
    check: (json) => {
      const doc = oasApi(undefined, '/gen/', target);
      assert.deepEqual(json, merge(doc, { [X]: { info: { id: generated } } }));
    },
  },
  { name: 'GET one', method: 'GET', path: '/svc/apis/oas/pets', status: 200, want: pets },
  {
    name: 'GET the list: OAS documents only',
    method: 'GET',
    path: '/svc/apis/oas',
    status: 200,
    check: (json) => {
      const ids = (json as Json[]).map((d) => (d[X] as { info: { id: string } }).info.id).sort();
      assert.deepEqual(ids, [generated, 'pets'].sort());
    },
  },
  {
    name: 'the classic endpoint shows the classic form',
    method: 'GET',
    path: '/svc/apis/pets',
    status: 200,
    want: {
      is_oas: true,
      api_id: 'pets',
      name: 'pets',
      active: true,
      proxy: { target_url: target, listen_path: '/pets/', strip_listen_path: true },
      use_keyless: true,
    },
  },
  {
    name: 'the classic list has both kinds',
    method: 'GET',
    path: '/svc/apis',
    status: 200,
    check: (json) => {
      const ids = (json as Json[]).map((d) => `${String(d.api_id)}${d.is_oas === true ? ' (oas)' : ''}`);
      assert.deepEqual(ids.sort(), [`${generated} (oas)`, 'classic', 'pets (oas)'].sort());
    },
  },
  {
    name: 'a classic API through the OAS endpoint',
    method: 'GET',
    path: '/svc/apis/oas/classic',
    status: 400,
    want: { status: 'error', message: 'API classic is a classic API: use /svc/apis/classic' },
  },
  {
    name: 'an OAS API updated through the classic endpoint',
    method: 'PUT',
    path: '/svc/apis/pets',
    body: keyless('pets', '/pets/', target),
    status: 400,
    want: { status: 'error', message: 'API pets is an OAS API: use /svc/apis/oas/pets' },
  },
  {
    name: 'PUT with another info.id',
    method: 'PUT',
    path: '/svc/apis/oas/pets',
    body: oasApi('other', '/pets/', target),
    status: 400,
    want: {
      status: 'error',
      message: 'Request APIID does not match that in Definition! For Update operations these must match.',
    },
  },
  {
    name: 'PUT without info.id takes the path ID',
    method: 'PUT',
    path: '/svc/apis/oas/pets',
    body: oasApi(undefined, '/pets/v2/', target),
    status: 200,
    want: { key: 'pets', status: 'ok', action: 'modified' },
    check: async (_json, gw) => {
      const res = await gw.admin('GET', '/svc/apis/oas/pets');
      assert.deepEqual(
        res.json,
        merge(oasApi(undefined, '/pets/v2/', target), { [X]: { info: { id: 'pets' } } }),
      );
    },
  },
  {
    name: 'PUT of a missing API',
    method: 'PUT',
    path: '/svc/apis/oas/missing',
    body: oasApi('missing', '/m/', target),
    status: 404,
    want: apiNotFound,
  },
  {
    name: 'PUT of a classic API through the OAS endpoint',
    method: 'PUT',
    path: '/svc/apis/oas/classic',
    body: oasApi('classic', '/classic/', target),
    status: 400,
    want: { status: 'error', message: 'API classic is a classic API: use /svc/apis/classic' },
  },
  {
    name: 'PUT without the extension',
    method: 'PUT',
    path: '/svc/apis/oas/pets',
    body: { openapi: '3.0.3' },
    status: 400,
    want: { status: 'error', message: 'the payload should contain x-svc-api-gateway' },
  },
  {
    name: 'refused by the document schema, at its path',
    method: 'POST',
    path: '/svc/apis/oas',
    body: merge(oasApi('bad', '/bad/', target), { [X]: { info: { name: undefined } } }),
    status: 400,
    want: refused('x-svc-api-gateway.info.name: Required value: add this field'),
  },
  {
    name: 'refused by the classic rules, at the document path',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi('bad', '/svc/bad/', 'ftp://files'),
    status: 400,
    want: refused(
      'x-svc-api-gateway.server.listenPath.value: Invalid value: "/svc/bad/": the gateway\'s management API answers /svc and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own; ' +
        'x-svc-api-gateway.upstream.url: Unsupported value: "ftp://files": the scheme "ftp" is not supported yet by this gateway: proxy to an http:// or https:// address, such as http://orders.default.svc:8080',
    ),
  },
  {
    name: 'settings the gateway does not enforce are refused by name',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi('bad', '/bad/', target, { middleware: { global: { contextVariables: { enabled: true } } } }),
    status: 400,
    want: refused(
      'x-svc-api-gateway.middleware.global.contextVariables: Unsupported value: not supported yet by this gateway: remove it (the gateway keeps no setting it does not enforce)',
    ),
  },
  {
    name: 'a scheme the document requires but the extension does not enable',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi(
      'bad',
      '/bad/',
      target,
      ...requiring('token', { type: 'apiKey', in: 'header', name: 'X' }, { enabled: false }),
    ),
    status: 400,
    want: refused(
      'x-svc-api-gateway.server.authentication.securitySchemes.token.enabled: Required value: the document\'s security requires "token": set enabled to true, so that the gateway enforces it',
    ),
  },
  {
    name: 'the ID oas is reserved (OAS)',
    method: 'POST',
    path: '/svc/apis/oas',
    body: oasApi('oas', '/o/', target),
    status: 400,
    want: refused(
      'x-svc-api-gateway.info.id: "oas" is reserved (the path /svc/apis/oas lists OAS APIs): choose another ID',
    ),
  },
  {
    name: 'the ID oas is reserved (classic)',
    method: 'POST',
    path: '/svc/apis',
    body: keyless('oas', '/o/', target),
    status: 400,
    want: refused('api_id: "oas" is reserved (the path /svc/apis/oas lists OAS APIs): choose another ID'),
  },
  {
    name: "is_oas is the gateway's",
    method: 'POST',
    path: '/svc/apis',
    body: keyless('fake', '/fake/', target, { is_oas: true }),
    status: 400,
    want: refused(
      'is_oas: set by the gateway on the classic form of OAS APIs: remove it, or write the API to /svc/apis/oas',
    ),
  },
  { name: 'PATCH is not a method here', method: 'PATCH', path: '/svc/apis/oas', status: 405 },
  {
    name: 'DELETE of a classic API through the OAS endpoint',
    method: 'DELETE',
    path: '/svc/apis/oas/classic',
    status: 400,
    want: { status: 'error', message: 'API classic is a classic API: use /svc/apis/classic' },
  },
  {
    name: 'DELETE',
    method: 'DELETE',
    path: '/svc/apis/oas/pets',
    status: 200,
    want: { key: 'pets', status: 'ok', action: 'deleted' },
  },
  { name: 'GET after DELETE', method: 'GET', path: '/svc/apis/oas/pets', status: 404, want: apiNotFound },
  { name: 'DELETE again', method: 'DELETE', path: '/svc/apis/oas/pets', status: 404, want: apiNotFound },
  {
    name: 'the classic endpoint deletes an OAS API too',
    method: 'DELETE',
    path: '/svc/apis/{generated}',
    status: 200,
    check: (json) => {
      assert.deepEqual(json, { key: generated, status: 'ok', action: 'deleted' });
    },
  },
  { name: 'empty list again', method: 'GET', path: '/svc/apis/oas', status: 200, want: [] },
];

// --- a classic API and an OAS API configured alike -----------------------------------------------

/** One feature, twice: the classic definition (at /c/<name>/) and the OAS document (at /o/<name>/). */
interface Pair {
  name: string;
  classic: (upstream: string) => Json;
  oas: (upstream: string) => Json;
}

const keyedClassic = (name: string, upstream: string, extra: Json): Json => ({
  api_id: `c-${name}`,
  name: `${name} API`,
  use_keyless: false,
  proxy: { listen_path: `/c/${name}/`, target_url: upstream, strip_listen_path: true },
  ...extra,
});

/** An OAS API named like its classic twin (basic auth realms are the API name). */
const twin = (name: string, upstream: string, ext: Json = {}, rest: Json = {}): Json =>
  oasApi(`o-${name}`, `/o/${name}/`, upstream, merge({ info: { name: `${name} API` } }, ext), rest);

const classicKeyless = (name: string, upstream: string, extra: Json = {}, proxy: Json = {}): Json =>
  keyless(
    `c-${name}`,
    `/c/${name}/`,
    upstream,
    { name: `${name} API`, ...extra },
    { strip_listen_path: true, ...proxy },
  );

const pairs: Pair[] = [
  { name: 'open', classic: (u) => classicKeyless('open', u), oas: (u) => twin('open', u) },
  {
    name: 'slash',
    classic: (u) => classicKeyless('slash', `${u}/base/`, {}, { disable_strip_slash: true }),
    oas: (u) => twin('slash', `${u}/base/`, { upstream: { preserveTrailingSlash: { enabled: true } } }),
  },
  {
    name: 'plain',
    classic: (u) => classicKeyless('plain', u, {}, { strip_listen_path: false }),
    oas: (u) => twin('plain', u, { server: { listenPath: { strip: false } } }),
  },
  {
    name: 'tok',
    classic: (u) => keyedClassic('tok', u, { use_standard_auth: true, strip_auth_data: true }),
    oas: (u) =>
      twin(
        'tok',
        u,
        ...requiring(
          'token',
          { type: 'apiKey', in: 'header', name: 'Authorization' },
          {},
          {
            stripAuthorizationData: true,
          },
        ),
      ),
  },
  {
    name: 'tokq',
    classic: (u) =>
      keyedClassic('tokq', u, {
        use_standard_auth: true,
        strip_auth_data: true,
        auth_configs: {
          authToken: {
            disable_header: true,
            use_param: true,
            param_name: 'api_key',
            use_cookie: true,
            cookie_name: 'session',
          },
        },
      }),
    oas: (u) =>
      twin(
        'tokq',
        u,
        ...requiring(
          'key',
          { type: 'apiKey', in: 'query', name: 'api_key' },
          {
            cookie: { enabled: true, name: 'session' },
          },
          { stripAuthorizationData: true },
        ),
      ),
  },
  {
    name: 'hdr',
    classic: (u) =>
      keyedClassic('hdr', u, { auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } } }),
    oas: (u) => twin('hdr', u, ...requiring('token', { type: 'apiKey', in: 'header', name: 'X-Api-Key' })),
  },
  {
    name: 'basic',
    classic: (u) => keyedClassic('basic', u, { use_basic_auth: true, org_id: 'acme' }),
    oas: (u) => {
      const [ext, rest] = requiring('basic', { type: 'http', scheme: 'basic' });
      return twin('basic', u, merge(ext, { info: { orgId: 'acme' } }), rest);
    },
  },
  {
    name: 'allow',
    classic: (u) => classicKeyless('allow', u, { enable_ip_whitelisting: true, allowed_ips: ['10.0.0.0/8'] }),
    oas: (u) =>
      twin('allow', u, { middleware: { global: { ipAllowList: { enabled: true, allow: ['10.0.0.0/8'] } } } }),
  },
  {
    name: 'allow-me',
    classic: (u) =>
      classicKeyless('allow-me', u, { enable_ip_whitelisting: true, allowed_ips: ['127.0.0.0/8', '::1'] }),
    oas: (u) =>
      twin('allow-me', u, {
        middleware: { global: { ipAllowList: { enabled: true, allow: ['127.0.0.0/8', '::1'] } } },
      }),
  },
  {
    name: 'block',
    classic: (u) =>
      classicKeyless('block', u, { enable_ip_blacklisting: true, blacklisted_ips: ['127.0.0.1'] }),
    oas: (u) =>
      twin('block', u, { middleware: { global: { ipBlockList: { enabled: true, block: ['127.0.0.1'] } } } }),
  },
  {
    name: 'rate',
    classic: (u) => classicKeyless('rate', u, { global_rate_limit: { rate: 2, per: 60 } }),
    oas: (u) =>
      twin('rate', u, { middleware: { global: { rateLimit: { enabled: true, rate: 2, per: '1m' } } } }),
  },
  {
    name: 'dom',
    classic: (u) => classicKeyless('dom', u, { domain: 'api.example.test' }),
    oas: (u) => twin('dom', u, { server: { customDomain: { enabled: true, name: 'api.example.test' } } }),
  },
];

/** One request, sent to both twins: `{p}` in paths stands for `c` or `o`. */
interface SideCase extends Expected {
  name: string;
  /** After the side's prefix: `tok/x` is `/c/tok/x` and `/o/tok/x`. */
  path: string;
  headers?: Record<string, string>;
  upstreamPath?: string;
  upstreamQuery?: string;
}

const sideCases: SideCase[] = [
  { name: 'keyless', path: 'open/x', status: 200, upstreamPath: '/x' },
  { name: 'keyless, listen path kept', path: 'plain/x', status: 200, upstreamPath: '/{p}/plain/x' },
  {
    name: "preserveTrailingSlash (disable_strip_slash): the target's path as written",
    path: 'slash',
    status: 200,
    upstreamPath: '/base/',
  },
  {
    name: 'preserveTrailingSlash: a longer path joined as without it',
    path: 'slash/a',
    status: 200,
    upstreamPath: '/base/a',
  },
  { name: 'token: none', path: 'tok/x', status: 401, error: 'Authorization field missing' },
  {
    name: 'token: unknown',
    path: 'tok/x',
    headers: { authorization: 'nope' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: in the header, stripped',
    path: 'tok/x',
    headers: { authorization: 'Bearer key-both' },
    status: 200,
    upstreamPath: '/x',
    upstreamHeaders: { authorization: undefined },
  },
  {
    name: 'token: a key for the other twin only',
    path: 'tok/x',
    headers: { authorization: 'key-{other}' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: in the query, stripped',
    path: 'tokq/x?a=1&api_key=key-both',
    status: 200,
    upstreamQuery: 'a=1',
  },
  {
    name: 'token: in the cookie, stripped',
    path: 'tokq/x',
    headers: { cookie: 'theme=dark; session=key-both' },
    status: 200,
    upstreamHeaders: { cookie: 'theme=dark' },
  },
  {
    name: 'token: not read from the header when declared in the query',
    path: 'tokq/x',
    headers: { authorization: 'key-both' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: query names are case-sensitive',
    path: 'tokq/x?API_KEY=key-both',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: a custom header, any case',
    path: 'hdr/x',
    headers: { 'x-api-KEY': 'key-both' },
    status: 200,
  },
  {
    name: 'token: Authorization is not the custom header',
    path: 'hdr/x',
    headers: { authorization: 'key-both' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'basic: none',
    path: 'basic/x',
    status: 401,
    error: 'Authorization field missing',
    responseHeaders: { 'www-authenticate': 'Basic realm="basic API"' },
  },
  {
    name: 'basic: valid',
    path: 'basic/x',
    headers: { authorization: basicAuth('alice', 's3cret') },
    status: 200,
  },
  {
    name: 'basic: wrong password',
    path: 'basic/x',
    headers: { authorization: basicAuth('alice', 'nope') },
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'ip: not in the allow list',
    path: 'allow/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
  { name: 'ip: in the allow list', path: 'allow-me/x', status: 200 },
  {
    name: 'ip: in the block list',
    path: 'block/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
  { name: 'rate limit: first', path: 'rate/x', status: 200 },
  { name: 'rate limit: second', path: 'rate/x', status: 200 },
  { name: 'rate limit: third', path: 'rate/x', status: 429, error: 'API Rate Limit Exceeded' },
  {
    name: 'domain: matching host',
    path: 'dom/x',
    headers: { host: 'API.example.test:8080' },
    status: 200,
    upstreamPath: '/x',
  },
  {
    name: 'domain: other host',
    path: 'dom/x',
    headers: { host: 'other.test' },
    status: 404,
    error: 'Not Found',
  },
];

/** Classic keys name versions `Default`; OAS keys `""` or none. */
const rights = (side: 'c' | 'o', names: readonly string[], versions?: string[]): Json =>
  Object.fromEntries(
    names.map((n) => [
      `${side}-${n}`,
      { api_id: `${side}-${n}`, versions: versions ?? (side === 'c' ? ['Default'] : ['']) },
    ]),
  );

const KEYED = ['tok', 'tokq', 'hdr'];

async function provision(gw: InProcessGateway, upstream: string): Promise<void> {
  for (const p of pairs) {
    await gw.addApi(p.classic(upstream));
    const res = await gw.admin('POST', '/svc/apis/oas', p.oas(upstream));
    assert.equal(res.status, 200, `${p.name}: ${res.text}`);
  }
  const keys: [string, Json][] = [
    ['key-both', { access_rights: { ...rights('c', KEYED), ...rights('o', KEYED) } }],
    ['key-c', { access_rights: rights('c', KEYED) }],
    ['key-o', { access_rights: rights('o', KEYED) }],
    ['key-default', { access_rights: rights('o', ['tok'], ['Default']) }],
    ['key-any-version', { access_rights: rights('o', ['tok'], []) }],
    [
      'alice',
      {
        org_id: 'acme',
        basic_auth_data: { password: 's3cret' },
        access_rights: { ...rights('c', ['basic']), ...rights('o', ['basic']) },
      },
    ],
  ];
  for (const [k, body] of keys) {
    const res = await gw.admin('POST', `/svc/keys/${k}`, body);
    assert.equal(res.status, 200, `key ${k}: ${res.text}`);
  }
  await gw.reload();
}

let echo: Echo;

before(async () => {
  echo = await startEcho('echo');
});
after(async () => {
  await echo.close();
});

describeEachSetup(
  'OAS APIs',
  () => ({}),
  (ctx) => {
    let gw: InProcessGateway;
    before(() => {
      gw = ctx.gw();
    });

    describe('management API', () => {
      for (const c of adminCases) {
        test(c.name, async () => {
          const path = c.path.replace('{generated}', generated);
          const res = await gw.admin(c.method, path, c.body);
          assert.equal(res.status, c.status, res.text);
          if (c.want !== undefined) assert.deepEqual(res.json, c.want);
          await c.check?.(res.json, gw);
        });
      }
    });

    describe('a classic API and an OAS API configured alike answer alike', () => {
      before(async () => {
        await provision(gw, echo.url);
      });
      for (const c of sideCases) {
        test(c.name, async () => {
          for (const side of ['c', 'o'] as const) {
            const other = side === 'c' ? 'o' : 'c';
            const headers = Object.fromEntries(
              Object.entries(c.headers ?? {}).map(([k, v]) => [k, v.replace('{other}', other)]),
            );
            const res = await gw.request({ path: `/${side}/${c.path}`, headers });
            try {
              assertAnswer(res, c);
              if (c.status !== 200) continue;
              const echoed = res.json as Echoed;
              if (c.upstreamPath !== undefined)
                assert.equal(echoed.path, c.upstreamPath.replace('{p}', side));
              if (c.upstreamQuery !== undefined) assert.equal(echoed.query, c.upstreamQuery);
            } catch (err) {
              throw new Error(`the ${side === 'c' ? 'classic' : 'OAS'} API answered otherwise`, {
                cause: err,
              });
            }
          }
        });
      }

      test('versions: an OAS API is version "" (or none), never Default', async () => {
        const status = async (key: string): Promise<number> =>
          (await gw.request({ path: '/o/tok/x', headers: { authorization: key } })).status;
        assert.equal(await status('key-o'), 200);
        assert.equal(await status('key-any-version'), 200);
        assert.equal(await status('key-default'), 403);
      });

      test('a stored document that no longer passes is left out of a reload, by document path', async () => {
        const bad = twin('broken', echo.url, { server: { listenPath: { value: '/svc/broken/' } } });
        await gw.store.put('apis', 'o-broken', bad);
        const res = await gw.admin('GET', '/svc/reload');
        assert.equal(res.status, 200, res.text);
        assert.match(
          String((res.json as Json).message),
          /left out: API o-broken: x-svc-api-gateway\.server\.listenPath\.value: Invalid value: "\/svc\/broken\/"/,
        );
        assert.equal((await gw.request({ path: '/o/open/x' })).status, 200);
        await gw.store.delete('apis', 'o-broken');
      });

      test('an OAS API deleted and reloaded is no longer served', async () => {
        const res = await gw.admin('DELETE', '/svc/apis/oas/o-open');
        assert.equal(res.status, 200, res.text);
        await gw.reload();
        assert.equal((await gw.request({ path: '/o/open/x' })).status, 404);
        assert.equal((await gw.request({ path: '/c/open/x' })).status, 200);
      });
    });
  },
);
