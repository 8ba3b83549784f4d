/**
 * IP allow and block lists: `compileIpList` (addresses and CIDRs, IPv4 and IPv6), then the lists
 * through a real gateway as a table (GATEWAY-BEHAVIOUR §2; the client is 127.0.0.1, keyless APIs
 * too): forwarded headers are not trusted by default, and a blocked client is refused before
 * authentication. Each row is a request in, and the status and the `error`. The table runs
 * against the files and Redis stores, with the fast path on and off.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keyed, keyless } from '../../testing/harness.ts';
import { describeAuthTable, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';
import { compileIpList } from './index.ts';

const cases: { list: string[]; ip: string; want: boolean }[] = [
  { list: ['10.0.0.0/8'], ip: '10.1.2.3', want: true },
  { list: ['10.0.0.0/8'], ip: '11.0.0.1', want: false },
  { list: ['192.0.2.7'], ip: '192.0.2.7', want: true },
  { list: ['192.0.2.7'], ip: '192.0.2.8', want: false },
  { list: ['2001:db8::/32'], ip: '2001:db8::1', want: true },
  { list: ['2001:db8::/32'], ip: '2001:db9::1', want: false },
  { list: ['::1'], ip: '::1', want: true },
  { list: ['::1'], ip: '127.0.0.1', want: false },
  { list: ['0.0.0.0/0'], ip: '203.0.113.9', want: true },
  { list: ['0.0.0.0/0'], ip: '2001:db8::1', want: false },
  { list: [], ip: '127.0.0.1', want: false },
  { list: ['10.0.0.0/8'], ip: 'not-an-ip', want: false },
];

for (const c of cases) {
  test(`compileIpList: ${c.ip} in ${JSON.stringify(c.list)} is ${String(c.want)}`, () => {
    assert.equal(compileIpList(c.list)(c.ip), c.want);
  });
}

test('compileIpList: an entry that is not an address fails at compile time', () => {
  assert.throws(() => compileIpList(['10.0.0.*']), /not an IP address or CIDR/);
});

const rows: AuthRow[] = [
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

describeAuthTable(
  'ip lists',
  (gw, upstream) =>
    provision(gw, [
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
    ]),
  rows,
);
