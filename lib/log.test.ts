import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createLogger, redact, redactUrl } from './log.ts';

test('redact hides secret fields at any depth and keeps the rest', () => {
  assert.deepEqual(
    redact({
      headers: { Authorization: 'Bearer abc', 'x-request-id': '1' },
      body: { password: 'p', user: 'u', nested: [{ token: 't' }] },
      SVC_AUTH: 'k',
    }),
    {
      headers: { Authorization: '[redacted]', 'x-request-id': '1' },
      body: { password: '[redacted]', user: 'u', nested: [{ token: '[redacted]' }] },
      SVC_AUTH: '[redacted]',
    },
  );
});

/** What a key becomes in a logged path: the start of its stored ID. */
const h = (key: string): string =>
  `[redacted:${createHash('sha256').update(key).digest('hex').slice(0, 12)}]`;
const stored = createHash('sha256').update('k').digest('hex');

const cases: { name: string; in: string; out: string; allParams?: boolean }[] = [
  { name: 'dashboard key', in: '/api/keys/sEcReT1', out: `/api/keys/${h('sEcReT1')}` },
  { name: 'dashboard key reset', in: '/api/keys/sEcReT1/reset', out: `/api/keys/${h('sEcReT1')}/reset` },
  { name: 'gateway key', in: '/svc/keys/sEcReT1', out: `/svc/keys/${h('sEcReT1')}` },
  {
    name: 'gateway key reset with its query',
    in: '/svc/keys/sEcReT1/reset?api_id=orders',
    out: `/svc/keys/${h('sEcReT1')}/reset?api_id=orders`,
  },
  { name: 'trailing slash', in: '/svc/keys/sEcReT1/', out: `/svc/keys/${h('sEcReT1')}/` },
  { name: 'doubled slashes', in: '//api//keys//sEcReT1', out: `//api//keys//${h('sEcReT1')}` },
  { name: 'any case', in: '/API/Keys/sEcReT1', out: `/API/Keys/${h('sEcReT1')}` },
  {
    name: 'percent-encoded key hashed as the server decodes it',
    in: '/api/keys/a%2Fb',
    out: `/api/keys/${h('a/b')}`,
  },
  { name: 'full URL', in: 'http://gw:8080/svc/keys/sEcReT1', out: `http://gw:8080/svc/keys/${h('sEcReT1')}` },
  { name: 'behind a path prefix', in: '/dash/api/keys/sEcReT1', out: `/dash/api/keys/${h('sEcReT1')}` },
  {
    name: 'stored ID named with hashed=true kept',
    in: `/svc/keys/${stored}?hashed=true`,
    out: `/svc/keys/${stored}?hashed=true`,
  },
  { name: 'stored ID without hashed=true hashed', in: `/api/keys/${stored}`, out: `/api/keys/${h(stored)}` },
  { name: 'key list', in: '/api/keys?p=2', out: '/api/keys?p=2' },
  { name: 'key creation names no key', in: '/svc/keys/create', out: '/svc/keys/create' },
  {
    name: 'basic-auth user name is no secret',
    in: '/api/apis/keys/basic/alice',
    out: '/api/apis/keys/basic/alice',
  },
  { name: 'node key lookup by hash', in: `/system/keys/${stored}`, out: `/system/keys/${stored}` },
  { name: 'other paths', in: '/api/portal/policies/gold', out: '/api/portal/policies/gold' },
  { name: 'api_key', in: '/orders?api_key=sEcReT1&page=2', out: '/orders?api_key=[redacted]&page=2' },
  { name: 'access_token', in: '/o?page=2&access_token=sEcReT1', out: '/o?page=2&access_token=[redacted]' },
  { name: 'authorization', in: '/o?Authorization=Bearer%20x', out: '/o?Authorization=[redacted]' },
  { name: 'key', in: '/o?key=sEcReT1', out: '/o?key=[redacted]' },
  { name: 'token any case', in: '/o?Token=sEcReT1', out: '/o?Token=[redacted]' },
  {
    name: 'signature',
    in: '/b/o?X-Amz-Signature=abc&X-Amz-Date=1',
    out: '/b/o?X-Amz-Signature=[redacted]&X-Amz-Date=1',
  },
  {
    name: 'client_secret',
    in: '/t?client_id=a&client_secret=b',
    out: '/t?client_id=a&client_secret=[redacted]',
  },
  { name: 'password', in: '/login?user=a&password=b', out: '/login?user=a&password=[redacted]' },
  { name: 'session', in: '/x?sessionid=b', out: '/x?sessionid=[redacted]' },
  { name: 'fragment', in: '/cb#access_token=b&state=s', out: '/cb#access_token=[redacted]&state=s' },
  { name: 'not a secret name', in: '/books?author=ann&q=x', out: '/books?author=ann&q=x' },
  { name: 'password in the URL', in: 'http://user:pw@host/x', out: 'http://user:[redacted]@host/x' },
  {
    name: 'password alone in the URL',
    in: 'redis://:pw@redis:6379/0',
    out: 'redis://:[redacted]@redis:6379/0',
  },
  {
    name: 'token as the URL user',
    in: 'https://ghp_abc@github.com/o/r',
    out: 'https://[redacted]@github.com/o/r',
  },
  { name: 'an e-mail address is no URL', in: 'ann@example.com', out: 'ann@example.com' },
  {
    name: 'a line with a path',
    in: 'gateway GET /svc/keys/sEcReT1: 404 Key not found',
    out: `gateway GET /svc/keys/${h('sEcReT1')}: 404 Key not found`,
  },
  {
    name: 'a line with a quoted URL',
    in: 'Post "http://h/p?token=sEcReT1": dial tcp: refused',
    out: 'Post "http://h/p?token=[redacted]": dial tcp: refused',
  },
  {
    name: 'a line with an escaped quoted URL',
    in: 'msg="Post \\"http://h/p?token=sEcReT1\\": refused"',
    out: 'msg="Post \\"http://h/p?token=[redacted]\\": refused"',
  },
  {
    name: 'every parameter of a configured URL',
    in: 'https://idp/jwks?a=1&b=2',
    out: 'https://idp/jwks?a=[redacted]&b=[redacted]',
    allParams: true,
  },
  { name: 'nothing to redact', in: 'routes loaded', out: 'routes loaded' },
];

for (const c of cases) {
  test(`redactUrl: ${c.name}`, () => {
    assert.equal(redactUrl(c.in, { allParams: c.allParams ?? false }), c.out);
  });
}

test('redact applies redactUrl to every string, error messages included', () => {
  assert.deepEqual(
    redact({
      path: '/api/keys/sEcReT1',
      nested: [{ url: 'http://u:pw@h/' }],
      err: new Error('GET /svc/keys/sEcReT1?token=x'),
    }),
    {
      path: `/api/keys/${h('sEcReT1')}`,
      nested: [{ url: 'http://u:[redacted]@h/' }],
      err: { name: 'Error', message: `GET /svc/keys/${h('sEcReT1')}?token=[redacted]` },
    },
  );
});

test('a logger writes no URL secret, in fields, child fields or the message', () => {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk: string | Uint8Array): boolean => {
    lines.push(String(chunk));
    return true;
  };
  try {
    const log = createLogger({ component: 'test' }).child({ dashboard: 'http://u:sEcReT2@dash' });
    log.info('GET /svc/keys/sEcReT1', { path: '/api/keys/sEcReT1/reset', query: '?api_key=sEcReT3' });
  } finally {
    process.stderr.write = write;
  }
  const out = lines.join('');
  assert.match(out, /\[redacted:[0-9a-f]{12}\]/);
  for (const s of ['sEcReT1', 'sEcReT2', 'sEcReT3']) assert.ok(!out.includes(s), `${s} in ${out}`);
});
