import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  generateKey,
  hashPassword,
  isPasswordHash,
  keyIdOf,
  sameSecret,
  verifyPassword,
} from './credentials.ts';

test('keyIdOf: a stable SHA-256, never the key', () => {
  assert.equal(keyIdOf('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.notEqual(keyIdOf('abc'), keyIdOf('ABC'));
});

test('generateKey: the organisation, then 32 random hex characters', () => {
  assert.match(generateKey('org1'), /^org1[0-9a-f]{32}$/);
  assert.notEqual(generateKey(undefined), generateKey(undefined));
});

test('passwords: salted scrypt, checked in constant time', async () => {
  const stored = await hashPassword('pw:with:colons');
  assert.ok(isPasswordHash(stored));
  assert.ok(!stored.includes('pw:with'));
  assert.notEqual(stored, await hashPassword('pw:with:colons'), 'salted');
  assert.equal(await verifyPassword('pw:with:colons', stored), true);
  assert.equal(await verifyPassword('pw:with:colon', stored), false);
  assert.equal(await verifyPassword('', stored), false);
  for (const bad of ['', 'plain', 'scrypt$1$2$3$x$y', stored.replace(/\$[^$]+$/, '$AAAA')]) {
    assert.equal(await verifyPassword('pw', bad), false, bad);
  }
});

test('sameSecret', () => {
  assert.equal(sameSecret('a', 'a'), true);
  assert.equal(sameSecret('a', 'ab'), false);
});
