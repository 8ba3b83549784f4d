import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSealed, openSecret, sealSecret } from './secrets.ts';

test('a sealed secret opens with the gateway secret only', () => {
  const sealed = sealSecret('hmac-secret', 'gateway-secret');
  assert.ok(isSealed(sealed));
  assert.ok(!sealed.includes('hmac-secret'));
  assert.notEqual(sealSecret('hmac-secret', 'gateway-secret'), sealed, 'a new IV every time');
  assert.equal(openSecret(sealed, 'gateway-secret'), 'hmac-secret');
  assert.equal(openSecret(sealed, 'another secret'), undefined);
  assert.equal(openSecret('hmac-secret', 'gateway-secret'), undefined);
  const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  assert.equal(openSecret(tampered, 'gateway-secret'), undefined);
});
