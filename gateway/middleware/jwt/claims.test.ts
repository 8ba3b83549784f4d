import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { identityOf, policiesOf, scopesOf, timeRefusal, type Claims } from './claims.ts';

const NOW = 1_700_000_000;

describe('timeRefusal', () => {
  const skews = { exp: 10, iat: 5, nbf: 20 };
  const rows: { name: string; claims: Claims; want: string | undefined }[] = [
    { name: 'no time claims', claims: {}, want: undefined },
    { name: 'exp ahead', claims: { exp: NOW + 1 }, want: undefined },
    { name: 'exp passed, within the skew', claims: { exp: NOW - 9 }, want: undefined },
    {
      name: 'exp passed by the skew',
      claims: { exp: NOW - 10 },
      want: 'Key not authorized: token has expired',
    },
    { name: 'nbf ahead, within the skew', claims: { nbf: NOW + 20 }, want: undefined },
    { name: 'nbf ahead', claims: { nbf: NOW + 21 }, want: 'Key not authorized: token is not valid yet' },
    { name: 'iat ahead, within the skew', claims: { iat: NOW + 5 }, want: undefined },
    { name: 'iat ahead', claims: { iat: NOW + 6 }, want: 'Key not authorized: token used before issued' },
    { name: 'exp not a number', claims: { exp: 'soon' }, want: 'Key not authorized' },
  ];
  for (const r of rows) {
    test(r.name, () => {
      assert.equal(timeRefusal(r.claims, NOW, skews)?.message, r.want);
    });
  }
});

test('identityOf: the base field, else sub; a non-empty string', () => {
  assert.equal(identityOf({ sub: 'a', email: 'e' }, 'email'), 'e');
  assert.equal(identityOf({ sub: 'a' }, 'email'), 'a');
  assert.equal(identityOf({ sub: 'a', email: '' }, 'email'), undefined);
  assert.equal(identityOf({ sub: 42 }, undefined), undefined);
  assert.equal(identityOf({}, undefined), undefined);
});

test('scopesOf: a space-separated string, a list, a nested claim', () => {
  assert.deepEqual(scopesOf({ scope: 'read  write' }, 'scope'), ['read', 'write']);
  assert.deepEqual(scopesOf({ scp: ['read', 3, 'write'] }, 'scp'), ['read', 'write']);
  assert.deepEqual(scopesOf({ realm_access: { roles: ['admin'] } }, 'realm_access.roles'), ['admin']);
  assert.deepEqual(scopesOf({ scope: 'x' }, 'scope.deeper'), []);
});

describe('policiesOf', () => {
  const api = (extra: Partial<GatewayApiDefinition>): GatewayApiDefinition => ({
    name: 'a',
    proxy: { listen_path: '/a/' },
    ...extra,
  });
  const mapping = { read: 'p-read', write: 'p-write' };
  const rows: { name: string; claims: Claims; api: GatewayApiDefinition; want: string[] }[] = [
    { name: 'nothing', claims: {}, api: api({}), want: [] },
    {
      name: 'the policy claim',
      claims: { pol: 'p1' },
      api: api({ jwt_policy_field_name: 'pol' }),
      want: ['p1'],
    },
    {
      name: 'a list in the policy claim',
      claims: { pol: ['p1', 'p2'] },
      api: api({ jwt_policy_field_name: 'pol' }),
      want: ['p1', 'p2'],
    },
    {
      name: 'the defaults without the claim',
      claims: {},
      api: api({ jwt_policy_field_name: 'pol', jwt_default_policies: ['d1', 'd2'] }),
      want: ['d1', 'd2'],
    },
    {
      name: 'scopes add to the claimed policy',
      claims: { pol: 'p1', scope: 'read write other' },
      api: api({ jwt_policy_field_name: 'pol', jwt_scope_to_policy_mapping: mapping }),
      want: ['p1', 'p-read', 'p-write'],
    },
    {
      name: 'scopes replace the defaults',
      claims: { scope: 'read' },
      api: api({ jwt_default_policies: ['d1'], jwt_scope_to_policy_mapping: mapping }),
      want: ['p-read'],
    },
    {
      name: 'scopes that map to nothing leave nothing of the defaults',
      claims: { scope: 'other' },
      api: api({ jwt_default_policies: ['d1'], jwt_scope_to_policy_mapping: mapping }),
      want: [],
    },
    {
      name: 'a token without scopes keeps the defaults',
      claims: {},
      api: api({ jwt_default_policies: ['d1'], jwt_scope_to_policy_mapping: mapping }),
      want: ['d1'],
    },
    {
      name: 'another scope claim',
      claims: { perms: ['write'] },
      api: api({ jwt_scope_claim_name: 'perms', jwt_scope_to_policy_mapping: mapping }),
      want: ['p-write'],
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      assert.deepEqual(policiesOf(r.claims, r.api), r.want);
    });
  }
});
