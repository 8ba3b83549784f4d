import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultSecurityPolicy } from './security-policy.default.ts';
import { securityPolicy } from './testing.ts';

const cases: { name: string; in: Record<string, unknown>[]; out: Record<string, unknown>[] }[] = [
  {
    name: 'kind, namespace and the classic default version',
    in: [{ name: 'orders' }],
    out: [{ name: 'orders', kind: 'ApiDefinition', namespace: 'shop', versions: ['Default'] }],
  },
  {
    name: 'OAS and streams APIs default to the version ""',
    in: [
      { name: 'pets', kind: 'SvcOasApiDefinition' },
      { name: 'events', kind: 'SvcStreamsApiDefinition', namespace: 'other' },
    ],
    out: [
      { name: 'pets', kind: 'SvcOasApiDefinition', namespace: 'shop', versions: [''] },
      { name: 'events', kind: 'SvcStreamsApiDefinition', namespace: 'other', versions: [''] },
    ],
  },
  {
    name: 'an HTTPRoute defaults to the version of its generated (classic) APIs',
    in: [{ name: 'shop', kind: 'HTTPRoute' }],
    out: [{ name: 'shop', kind: 'HTTPRoute', namespace: 'shop', versions: ['Default'] }],
  },
  {
    name: 'values that are set are kept',
    in: [{ name: 'orders', kind: 'ApiDefinition', namespace: 'x', versions: ['v2'] }],
    out: [{ name: 'orders', kind: 'ApiDefinition', namespace: 'x', versions: ['v2'] }],
  },
  {
    name: 'an unknown kind gets no versions (validation refuses it)',
    in: [{ name: 'orders', kind: 'Api' }],
    out: [{ name: 'orders', kind: 'Api', namespace: 'shop' }],
  },
];

for (const c of cases) {
  test(`defaultSecurityPolicy: ${c.name}`, () => {
    const input = securityPolicy('plan', { access_rights_array: c.in }, 'shop');
    const before = structuredClone(input);
    const out = defaultSecurityPolicy(input);
    assert.deepEqual(out, securityPolicy('plan', { access_rights_array: c.out }, 'shop'));
    assert.deepEqual(input, before, 'the input is not modified');
  });
}

test('defaultSecurityPolicy: contextRef.namespace', () => {
  const out = defaultSecurityPolicy(securityPolicy('plan', { contextRef: { name: 'gw' } }, 'shop'));
  assert.deepEqual(out, securityPolicy('plan', { contextRef: { name: 'gw', namespace: 'shop' } }, 'shop'));
});

test('defaultSecurityPolicy: a malformed object is returned as it is', () => {
  for (const bad of [null, 'x', { spec: 'x' }, { spec: { access_rights_array: 'x' } }]) {
    assert.deepEqual(defaultSecurityPolicy(bad), bad);
  }
});
