import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { createCa } from '../lib/x509.ts';
import { publicKeyPinOf, type PinSecret, type SecretContent } from './certificates.ts';

/** What a refused read says (undefined when it was read). */
const problemOf = (read: PinSecret): string | undefined => (read.ok ? undefined : read.problem);

const b64 = (t: string): string => Buffer.from(t).toString('base64');
const secretOf = (crt: string, key?: string): SecretContent => ({
  type: 'kubernetes.io/tls',
  data: { 'tls.crt': b64(crt), ...(key === undefined ? {} : { 'tls.key': b64(key) }) },
});
const ca = await createCa({ commonName: 'upstream.example', validityDays: 1 });
/** What `openssl x509 -pubkey -noout` prints for the certificate: its SubjectPublicKeyInfo in PEM. */
const publicKeyPem = createPublicKey(ca.keyPem).export({ type: 'spki', format: 'pem' }).toString();
const expected = `sha256/${createHash('sha256')
  .update(createPublicKey(ca.keyPem).export({ type: 'spki', format: 'der' }))
  .digest('base64')}`;

test('a certificate in tls.crt is pinned by its public key', () => {
  assert.deepEqual(publicKeyPinOf(secretOf(ca.certPem, ca.keyPem)), { ok: true, pin: expected });
  assert.deepEqual(publicKeyPinOf({ type: 'Opaque', data: { 'tls.crt': b64(ca.certPem) } }), {
    ok: true,
    pin: expected,
  });
});

test("the reference's form: the public key itself in tls.crt, tls.key empty, gives the same pin", () => {
  assert.deepEqual(publicKeyPinOf(secretOf(publicKeyPem, '')), { ok: true, pin: expected });
  // With text around it, as a Secret written by hand may have.
  assert.deepEqual(publicKeyPinOf(secretOf(`# httpbin.org\n${publicKeyPem}\n`)), { ok: true, pin: expected });
  // PKCS#1 (`RSA PUBLIC KEY`) is the same key.
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pkcs1 = publicKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  assert.deepEqual(publicKeyPinOf(secretOf(pkcs1)), {
    ok: true,
    pin: `sha256/${createHash('sha256').update(spki).digest('base64')}`,
  });
});

test('a private key in tls.crt is refused, not reduced to its public half', () => {
  const read = publicKeyPinOf(secretOf(ca.keyPem));
  assert.match(problemOf(read) ?? '', /^tls\.crt does not parse as a PEM certificate or public key: /);
});

test('a missing, empty or broken tls.crt is refused with the reason', () => {
  for (const secret of [{ type: 'Opaque', data: {} }, secretOf('  ')]) {
    assert.deepEqual(publicKeyPinOf(secret), {
      ok: false,
      problem: 'needs tls.crt (the certificate or public key to pin)',
    });
  }
  const broken = publicKeyPinOf(secretOf('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n'));
  assert.match(problemOf(broken) ?? '', /^tls\.crt does not parse as a PEM public key: /);
  const placeholder = publicKeyPinOf(secretOf('<PUBLIC_KEY>'));
  assert.match(problemOf(placeholder) ?? '', /^tls\.crt does not parse as a PEM certificate or public key/);
});
