/**
 * Who may call what, as tables (GATEWAY-BEHAVIOUR §2, §3, §5): auth tokens in every location,
 * basic authentication, IP lists, key state, access rights, allowed URLs, policies and their
 * states. Each case is a request in, and the status, the `error`, headers out, and what the
 * upstream received. The table runs against the files store and the Redis store, with the fast
 * path on and off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { RedisStore } from '../store/redis.ts';
import { startEcho, type Echo, type Echoed } from '../testing/echo.ts';
import { keyed, keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { startRedis, type TestRedis } from '../testing/redis-server.ts';

interface Case {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  error?: string;
  /** Headers the client received; undefined means absent. */
  responseHeaders?: Record<string, string | undefined>;
  /** Headers the upstream received; undefined means absent. */
  upstreamHeaders?: Record<string, string | undefined>;
  /** The query the upstream received. */
  upstreamQuery?: string;
  upstreamBody?: string;
}

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const past = Math.floor(Date.now() / 1000) - 3600;
const future = Math.floor(Date.now() / 1000) + 3600;

const access = (...ids: string[]): Record<string, unknown> =>
  Object.fromEntries(ids.map((id) => [id, { api_id: id, api_name: id, versions: ['Default'] }]));

const cases: Case[] = [
  // Auth token in the Authorization header (the default of a keyed API).
  { name: 'token: none', path: '/tok/x', status: 401, error: 'Authorization field missing' },
  {
    name: 'token: empty header',
    path: '/tok/x',
    headers: { authorization: '  ' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: unknown',
    path: '/tok/x',
    headers: { authorization: 'nope' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: valid',
    path: '/tok/x',
    headers: { authorization: 'key-one' },
    status: 200,
    upstreamHeaders: { authorization: 'key-one' },
  },
  { name: 'token: Bearer prefix', path: '/tok/x', headers: { authorization: 'Bearer key-one' }, status: 200 },
  {
    name: 'token: bearer prefix in any case',
    path: '/tok/x',
    headers: { authorization: 'BEARER key-one' },
    status: 200,
  },
  {
    name: 'token: another case of the key is another key',
    path: '/tok/x',
    headers: { authorization: 'KEY-ONE' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token: a basic-auth user name is no token',
    path: '/tok/x',
    headers: { authorization: 'alice' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  // A custom header name, case-insensitive.
  { name: 'token: custom header', path: '/hdr/x', headers: { 'X-API-KEY': 'key-one' }, status: 200 },
  {
    name: 'token: Authorization is not the custom header',
    path: '/hdr/x',
    headers: { authorization: 'key-one' },
    status: 401,
    error: 'Authorization field missing',
  },
  // Query parameter and cookie (case-sensitive names), stripped before proxying.
  {
    name: 'token: query parameter, stripped',
    path: '/tokq/x?a=1&api_key=key-one&b=2',
    status: 200,
    upstreamQuery: 'a=1&b=2',
  },
  {
    name: 'token: query parameter name is case-sensitive',
    path: '/tokq/x?API_KEY=key-one',
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: cookie, stripped',
    path: '/tokq/x',
    headers: { cookie: 'theme=dark; session=key-one' },
    status: 200,
    upstreamHeaders: { cookie: 'theme=dark' },
  },
  {
    name: 'token: cookie name is case-sensitive',
    path: '/tokq/x',
    headers: { cookie: 'Session=key-one' },
    status: 401,
    error: 'Authorization field missing',
  },
  {
    name: 'token: header, stripped',
    path: '/tokq/x',
    headers: { authorization: 'key-one' },
    status: 200,
    upstreamHeaders: { authorization: undefined },
  },
  {
    name: 'token: a later source wins (cookie over header)',
    path: '/tokq/x',
    headers: { authorization: 'nope', cookie: 'session=key-one' },
    status: 200,
  },
  // Key state.
  {
    name: 'key: inactive',
    path: '/tok/x',
    headers: { authorization: 'key-inactive' },
    status: 403,
    error: 'Key is inactive, please renew',
  },
  {
    name: 'key: expired',
    path: '/tok/x',
    headers: { authorization: 'key-expired' },
    status: 401,
    error: 'Key has expired, please renew',
  },
  { name: 'key: expires later', path: '/tok/x', headers: { authorization: 'key-later' }, status: 200 },
  // Access rights: the API, its version, allowed URLs; organisations.
  {
    name: 'access: API not in the key',
    path: '/tok/x',
    headers: { authorization: 'key-other' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: key without access rights',
    path: '/tok/x',
    headers: { authorization: 'key-empty' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: version not covered',
    path: '/tok/x',
    headers: { authorization: 'key-v2' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: allowed URL and method',
    path: '/urls/read/1',
    headers: { authorization: 'key-urls' },
    status: 200,
  },
  {
    name: 'access: allowed URL, other method',
    method: 'POST',
    path: '/urls/read/1',
    body: 'x',
    headers: { authorization: 'key-urls' },
    status: 403,
    error: 'Access to this resource has been disallowed',
  },
  {
    name: 'access: URL outside the list',
    path: '/urls/write/1',
    headers: { authorization: 'key-urls' },
    status: 403,
    error: 'Access to this resource has been disallowed',
  },
  {
    name: 'access: exact URL pattern',
    method: 'POST',
    path: '/urls/',
    body: 'x',
    headers: { authorization: 'key-urls' },
    status: 200,
  },
  {
    name: 'org: key of no organisation on an organisation API',
    path: '/org/x',
    headers: { authorization: 'key-one' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'org: key of the organisation',
    path: '/org/x',
    headers: { authorization: 'key-org' },
    status: 200,
  },
  // Policies: applied rights, partitions, states.
  {
    name: 'policy: rights from the policy',
    path: '/pol/x',
    headers: { authorization: 'key-pol' },
    status: 200,
  },
  {
    name: 'policy: rights of two policies united',
    path: '/tok/x',
    headers: { authorization: 'key-pol' },
    status: 200,
  },
  {
    name: 'policy: an acl-less partition keeps the key rights',
    path: '/tok/x',
    headers: { authorization: 'key-part' },
    status: 200,
  },
  {
    name: 'policy: ...and grants none of its own',
    path: '/pol/x',
    headers: { authorization: 'key-part' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'policy: draft disables its keys',
    path: '/pol/x',
    headers: { authorization: 'key-draft' },
    status: 403,
    error: 'Key is inactive, please renew',
  },
  {
    name: 'policy: deny is never applied',
    path: '/pol/x',
    headers: { authorization: 'key-deny' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  // Basic authentication.
  {
    name: 'basic: none',
    path: '/basic/x',
    status: 401,
    error: 'Authorization field missing',
    responseHeaders: { 'www-authenticate': 'Basic realm="basic API"' },
  },
  {
    name: 'basic: valid',
    path: '/basic/x',
    headers: { authorization: basic('alice', 's3cret:x') },
    status: 200,
  },
  {
    name: 'basic: scheme in any case',
    path: '/basic/x',
    headers: { authorization: `bAsIc ${Buffer.from('alice:s3cret:x').toString('base64')}` },
    status: 200,
  },
  {
    name: 'basic: wrong password',
    path: '/basic/x',
    headers: { authorization: basic('alice', 'wrong') },
    status: 401,
    error: 'User not authorised',
    responseHeaders: { 'www-authenticate': 'Basic realm="basic API"' },
  },
  {
    name: 'basic: unknown user',
    path: '/basic/x',
    headers: { authorization: basic('mallory', 's3cret:x') },
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: a token is not a user',
    path: '/basic/x',
    headers: { authorization: basic('key-one', '') },
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: not base64',
    path: '/basic/x',
    headers: { authorization: 'Basic !!!' },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: no colon',
    path: '/basic/x',
    headers: { authorization: `Basic ${Buffer.from('alice').toString('base64')}` },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: a bare token',
    path: '/basic/x',
    headers: { authorization: 'alice' },
    status: 400,
    error: 'Attempted access with malformed header, header not in basic auth format',
  },
  {
    name: 'basic: user of another organisation',
    path: '/basic/x',
    headers: { authorization: basic('bob', 'pw') },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'basic: custom header',
    path: '/basichdr/x',
    headers: { 'x-user': basic('alice', 's3cret:x') },
    status: 200,
  },
  {
    name: 'basic: credentials in the body',
    method: 'POST',
    path: '/basicbody/x',
    body: '<user>alice</user><pass>s3cret:x</pass>',
    status: 200,
    upstreamBody: '<user>alice</user><pass>s3cret:x</pass>',
  },
  {
    name: 'basic: wrong password in the body',
    method: 'POST',
    path: '/basicbody/x',
    body: '<user>alice</user><pass>no</pass>',
    status: 401,
    error: 'User not authorised',
  },
  {
    name: 'basic: body without credentials',
    method: 'POST',
    path: '/basicbody/x',
    body: 'nothing',
    status: 401,
    error: 'Authorization field missing',
  },
  // IP lists (the client is 127.0.0.1), keyless APIs too.
  {
    name: 'ip: allow list without the client',
    path: '/allow-other/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
  { name: 'ip: allow list with the client (CIDR)', path: '/allow-me/x', status: 200 },
  {
    name: 'ip: empty allow list refuses everyone',
    path: '/allow-none/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
  {
    name: 'ip: block list with the client',
    path: '/block-me/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
  { name: 'ip: block list without the client (IPv6 and IPv4)', path: '/block-other/x', status: 200 },
  {
    name: 'ip: forwarded headers are not trusted by default',
    path: '/block-me/x',
    headers: { 'x-forwarded-for': '198.51.100.7', 'x-real-ip': '198.51.100.7' },
    status: 403,
  },
  {
    name: 'ip: a blocked client is refused before authentication',
    path: '/tok-blocked/x',
    status: 403,
    error: 'access from this IP has been disallowed',
  },
];

/** The APIs, policies and keys every case runs against. */
async function provision(gw: InProcessGateway, upstream: string): Promise<void> {
  const apis = [
    keyed('tok', '/tok/', upstream),
    keyed('hdr', '/hdr/', upstream, { auth_configs: { authToken: { auth_header_name: 'X-Api-Key' } } }),
    keyed('tokq', '/tokq/', upstream, {
      use_standard_auth: true,
      auth: { use_param: true, param_name: 'api_key', use_cookie: true, cookie_name: 'session' },
      strip_auth_data: true,
    }),
    keyed('urls', '/urls/', upstream),
    keyed('org', '/org/', upstream, { org_id: 'org1' }),
    keyed('pol', '/pol/', upstream),
    keyed('basic', '/basic/', upstream, { use_basic_auth: true, org_id: 'acme' }),
    keyed('basichdr', '/basichdr/', upstream, {
      use_basic_auth: true,
      org_id: 'acme',
      auth_configs: { basic: { auth_header_name: 'X-User' } },
    }),
    keyed('basicbody', '/basicbody/', upstream, {
      use_basic_auth: true,
      org_id: 'acme',
      basic_auth: {
        extract_from_body: true,
        body_user_regexp: '<user>(.*)</user>',
        body_password_regexp: '<pass>(.*)</pass>',
      },
    }),
    keyless('allow-other', '/allow-other/', upstream, {
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8', '2001:db8::/32'],
    }),
    keyless('allow-me', '/allow-me/', upstream, {
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.1', '127.0.0.0/8'],
    }),
    keyless('allow-none', '/allow-none/', upstream, { enable_ip_whitelisting: true, allowed_ips: [] }),
    keyless('block-me', '/block-me/', upstream, {
      enable_ip_blacklisting: true,
      blacklisted_ips: ['127.0.0.1'],
    }),
    keyless('block-other', '/block-other/', upstream, {
      enable_ip_blacklisting: true,
      blacklisted_ips: ['::1', '192.0.2.0/24'],
    }),
    keyed('tok-blocked', '/tok-blocked/', upstream, {
      enable_ip_blacklisting: true,
      blacklisted_ips: ['127.0.0.0/8'],
    }),
  ];
  for (const api of apis) await gw.addApi(api);
  const policies = [
    { id: 'pol-a', name: 'A', state: 'active', active: true, access_rights: access('pol') },
    { id: 'pol-b', name: 'B', state: 'active', active: true, access_rights: access('tok') },
    {
      id: 'pol-part',
      name: 'quota only',
      state: 'active',
      partitions: { quota: true },
      quota_max: -1,
      access_rights: access('pol'),
    },
    { id: 'pol-draft', name: 'to be draft', state: 'active', access_rights: access('pol') },
    { id: 'pol-deny', name: 'to be deny', state: 'active', access_rights: access('pol') },
    {
      id: 'pol-urls',
      name: 'urls',
      partitions: { acl: true },
      access_rights: {
        urls: {
          api_id: 'urls',
          versions: ['Default'],
          allowed_urls: [
            { url: '/urls/read(.*)', methods: ['GET'] },
            { url: '/urls/$', methods: ['POST'] },
          ],
        },
      },
    },
  ];
  for (const p of policies) {
    const res = await gw.admin('POST', '/svc/policies', p);
    assert.equal(res.status, 200, `policy ${p.id}: ${res.text}`);
  }
  const keys: [string, Record<string, unknown>][] = [
    ['key-one', { access_rights: access('tok', 'hdr', 'tokq', 'org') }],
    ['key-inactive', { is_inactive: true, access_rights: access('tok') }],
    ['key-expired', { expires: past, access_rights: access('tok') }],
    ['key-later', { expires: future, access_rights: access('tok') }],
    ['key-other', { access_rights: access('hdr') }],
    ['key-empty', {}],
    ['key-v2', { access_rights: { tok: { api_id: 'tok', versions: ['v2'] } } }],
    ['key-urls', { apply_policies: ['pol-urls'] }],
    ['key-org', { org_id: 'org1', access_rights: access('org') }],
    ['key-pol', { apply_policies: ['pol-a', 'pol-b'] }],
    ['key-part', { apply_policies: ['pol-part'], access_rights: access('tok') }],
    ['key-draft', { apply_policies: ['pol-draft'] }],
    ['key-deny', { apply_policies: ['pol-deny'] }],
    [
      'alice',
      {
        org_id: 'acme',
        basic_auth_data: { password: 's3cret:x' },
        access_rights: access('basic', 'basichdr', 'basicbody'),
      },
    ],
    ['bob', { org_id: 'other', basic_auth_data: { password: 'pw' }, access_rights: access('basic') }],
  ];
  for (const [k, body] of keys) {
    const res = await gw.admin('POST', `/svc/keys/${k}`, body);
    assert.equal(res.status, 200, `key ${k}: ${res.text}`);
  }
  for (const [id, state] of [
    ['pol-draft', 'draft'],
    ['pol-deny', 'deny'],
  ] as const) {
    const res = await gw.admin('PUT', `/svc/policies/${id}`, {
      id,
      name: id,
      state,
      access_rights: access('pol'),
    });
    assert.equal(res.status, 200, res.text);
  }
  await gw.reload();
}

let redis: TestRedis | undefined;
let echo: Echo;

before(async () => {
  redis = await startRedis();
  echo = await startEcho('echo');
});
after(async () => {
  await echo.close();
  await redis?.stop();
});

const setups = [
  { name: 'files store, fast path on', redis: false, argv: [] },
  { name: 'files store, fast path off', redis: false, argv: ['--fast-path=false'] },
  { name: 'redis store, fast path on', redis: true, argv: [] },
  { name: 'redis store, fast path off', redis: true, argv: ['--fast-path=false'] },
];

let prefixN = 0;
for (const setup of setups) {
  describe(`authentication and access: ${setup.name}`, () => {
    let gw: InProcessGateway;
    before(async () => {
      const store =
        setup.redis && redis !== undefined
          ? new RedisStore(redis.url, { prefix: `auth${prefixN++}:`, log: silentLogger() })
          : undefined;
      gw = await startGateway({ argv: setup.argv, ...(store === undefined ? {} : { store }) });
      await provision(gw, echo.url);
    });
    after(async () => {
      await gw.stop();
    });

    for (const c of cases) {
      test(c.name, async () => {
        const res = await gw.request({
          method: c.method ?? 'GET',
          path: c.path,
          ...(c.headers === undefined ? {} : { headers: c.headers }),
          ...(c.body === undefined ? {} : { body: c.body }),
        });
        assert.equal(res.status, c.status, res.text);
        if (c.error !== undefined) assert.deepEqual(res.json, { error: c.error });
        for (const [name, want] of Object.entries(c.responseHeaders ?? {})) {
          assert.equal(res.headers[name], want, `response header ${name}`);
        }
        if (c.status === 200) {
          const echoed = res.json as Echoed;
          assert.equal(echoed.upstream, 'echo');
          for (const [name, want] of Object.entries(c.upstreamHeaders ?? {})) {
            assert.equal(echoed.headers[name], want, `upstream header ${name}`);
          }
          if (c.upstreamQuery !== undefined) assert.equal(echoed.query, c.upstreamQuery);
          if (c.upstreamBody !== undefined) assert.equal(echoed.body, c.upstreamBody);
        }
      });
    }
  });
}
