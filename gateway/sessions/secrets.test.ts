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

test('a secret sealed before the gateway used lib/seal.ts still opens (stored keys keep working)', () => {
  // Made by the gateway's own sealer before it moved to lib/seal.ts: sealSecret(plain, 'gateway-secret').
  const before = 'enc:v1:LWrNLq2xRTpdnRxfAf9/FcdNo6FNRgvSSrlFonXFPKP7UsiPWUlHEnRVCru7TB4u/F7Yxzdfd4g8wYgV';
  assert.ok(isSealed(before));
  assert.equal(openSecret(before, 'gateway-secret'), 'hmac-secret made before lib/seal');
  assert.equal(openSecret(before, 'another secret'), undefined);
});
