import { test } from 'node:test';
import assert from 'node:assert/strict';
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
