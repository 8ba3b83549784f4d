import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecureContext, type SecureContext } from 'node:tls';
import { SniTable } from './sni.ts';

test('SNI: exact names, any-depth wildcards and one-label wildcards', () => {
  const [exact, deep, one, bothDeep, bothOne] = Array.from({ length: 5 }, () => createSecureContext()) as [
    SecureContext,
    SecureContext,
    SecureContext,
    SecureContext,
    SecureContext,
  ];
  const t = new SniTable(
    new Map([
      ['api.example.com', exact],
      ['*.example.com', deep],
      ['*.both.test', bothDeep],
    ]),
    new Map([
      ['*.one.test', one],
      ['*.both.test', bothOne],
    ]),
  );
  assert.equal(t.lookup('API.example.com.'), exact);
  assert.equal(t.lookup('a.b.example.com'), deep);
  assert.equal(t.lookup('example.com'), undefined);
  assert.equal(t.lookup('a.one.test'), one);
  assert.equal(t.lookup('a.b.one.test'), undefined, 'one label only');
  assert.equal(t.lookup('one.test'), undefined);
  assert.equal(t.lookup('a.both.test'), bothOne);
  assert.equal(t.lookup('a.b.both.test'), bothDeep);
});
