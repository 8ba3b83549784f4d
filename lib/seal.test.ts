import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CERT_KEY_AT_REST, CERT_KEY_TO_NODE, seal, sealer, unseal } from './seal.ts';

test('a sealed value opens with its secret and purpose only', () => {
  const sealed = seal('private key', 'admin-secret', CERT_KEY_AT_REST);
  assert.ok(sealed.startsWith('sealed:v1:'));
  assert.ok(!sealed.includes('private key'));
  assert.notEqual(seal('private key', 'admin-secret', CERT_KEY_AT_REST), sealed, 'a new IV every time');
  assert.equal(unseal(sealed, 'admin-secret', CERT_KEY_AT_REST), 'private key');
  assert.equal(unseal(sealed, 'another secret', CERT_KEY_AT_REST), undefined);
  assert.equal(unseal(sealed, 'admin-secret', CERT_KEY_TO_NODE), undefined);
  assert.equal(unseal('private key', 'admin-secret', CERT_KEY_AT_REST), undefined);
  assert.equal(unseal('sealed:v1:AAAA', 'admin-secret', CERT_KEY_AT_REST), undefined);
  const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  assert.equal(unseal(tampered, 'admin-secret', CERT_KEY_AT_REST), undefined);
});

test('values sealed before the sealers were one still open', () => {
  // Made by lib/seal.ts before it became the one sealer (seal(plain, secret, purpose)).
  const atRest = 'sealed:v1:FZHijF5owHAyVMOmswd8GZ6+PqqkB6b02szlKOw5cgrANP+HTlTd69g8cv/6q/qvnRm/';
  const toNode = 'sealed:v1:74GNO+QDTB0XlCB4EJk0VL3U8Oh33DyLEhEjMBIUfkcqbNrG/6OKEejMA10vtbPG00up';
  assert.equal(unseal(atRest, 'admin-secret', CERT_KEY_AT_REST), 'key at rest made before');
  assert.equal(unseal(toNode, 'node-secret', CERT_KEY_TO_NODE), 'key to node made before');
});

test('one format does not open another', () => {
  const a = sealer({ prefix: 'enc:v1:', salt: 'svc-gateway', info: 'stored secrets v1' });
  const b = sealer({ prefix: 'enc:v1:', salt: 'svc-gateway', info: 'other v1' });
  const sealed = a.seal('x', 's');
  assert.equal(a.open(sealed, 's'), 'x');
  assert.equal(b.open(sealed, 's'), undefined);
  assert.equal(unseal(sealed, 's', 'stored secrets v1'), undefined);
});
