import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultApiDefinition } from './api-definition.default.ts';
import { defaultOperatorContext } from './operator-context.default.ts';
import { apiDefinition, operatorContext } from './testing.ts';

test('defaultApiDefinition: namespaces of contextRef and jwt_default_policies', () => {
  const obj = apiDefinition(
    'orders',
    { contextRef: { name: 'gw' }, jwt_default_policies: [{ name: 'a' }, { name: 'b', namespace: 'x' }] },
    'shop',
  );
  assert.deepEqual(
    defaultApiDefinition(obj),
    apiDefinition(
      'orders',
      {
        contextRef: { name: 'gw', namespace: 'shop' },
        jwt_default_policies: [
          { name: 'a', namespace: 'shop' },
          { name: 'b', namespace: 'x' },
        ],
      },
      'shop',
    ),
  );
});

test('defaultApiDefinition: nothing to default', () => {
  const obj = apiDefinition('orders');
  assert.deepEqual(defaultApiDefinition(obj), obj);
});

test('defaultOperatorContext: secretRef.namespace', () => {
  assert.deepEqual(
    defaultOperatorContext(operatorContext('gw', { secretRef: { name: 'conf' } }, 'shop')),
    operatorContext('gw', { secretRef: { name: 'conf', namespace: 'shop' } }, 'shop'),
  );
});
