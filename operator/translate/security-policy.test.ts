import { test } from 'node:test';
import assert from 'node:assert/strict';
import { policyModel } from '../../schemas/models/policy.ts';
import { checkPolicy } from '../../schemas/rules/access.ts';
import { compile } from '../../schemas/validate.ts';
import { derivedId } from '../ids.ts';
import { goldenTests } from './golden.ts';
import { translateSecurityPolicy, type SecurityPolicyInput } from './security-policy.ts';

const validGatewayPolicy = compile(policyModel);

/** API IDs as the API controllers derive them, with the kind in front so the kinds stay apart. */
const apiId = (ref: { kind: string; namespace: string; name: string }): string =>
  derivedId(ref.namespace, `${ref.kind}.${ref.name}`);

await goldenTests(
  'security-policy',
  (cr: SecurityPolicyInput) =>
    translateSecurityPolicy(cr, {
      polId: cr.spec.id ?? derivedId(cr.metadata.namespace, cr.metadata.name),
      orgId: 'org-1',
      apiId,
    }),
  (got) => {
    assert.deepEqual(validGatewayPolicy(got), [], 'the gateway policy model accepts the translation');
    assert.deepEqual(checkPolicy(got), [], "the gateway's policy rules accept the translation");
  },
);

test('translation is pure: same input, same output, input untouched', () => {
  const cr: SecurityPolicyInput = {
    metadata: { name: 'p', namespace: 'ns' },
    spec: { name: 'p', access_rights_array: [{ name: 'a', limit: { rate: 1, per: 1 } }] },
  };
  const frozen = structuredClone(cr);
  const ctx = { polId: 'pid', orgId: 'o', apiId };
  assert.deepEqual(translateSecurityPolicy(cr, ctx), translateSecurityPolicy(cr, ctx));
  assert.deepEqual(cr, frozen);
});

test('cluster-only fields never reach the gateway', () => {
  const got = translateSecurityPolicy(
    {
      metadata: { name: 'p', namespace: 'ns' },
      spec: { name: 'p', id: 'explicit', contextRef: { name: 'ctx' }, access_rights_array: [{ name: 'a' }] },
    },
    { polId: 'explicit', orgId: 'o', apiId: () => 'the-api' },
  );
  assert.equal(got.id, 'explicit');
  assert.equal('contextRef' in got, false);
  assert.equal('access_rights_array' in got, false);
  assert.deepEqual(Object.keys(got.access_rights ?? {}), ['the-api']);
});
