import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCa } from '../../../lib/x509.ts';
import { tlsSecretProblem } from './tls-secret.ts';

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

test('a TLS Secret: a certificate and key that parse are fine; anything else is named', async () => {
  const tls = await createCa({ commonName: 'listener.example', validityDays: 1 });
  const key = tls.keyPem;
  assert.equal(tlsSecretProblem({ data: { 'tls.crt': b64(tls.certPem), 'tls.key': b64(key) } }), undefined);
  assert.equal(tlsSecretProblem({ data: { 'tls.crt': b64('Hello world') } }), 'needs tls.crt and tls.key');
  assert.equal(
    tlsSecretProblem({ data: { 'tls.crt': b64('Hello world'), 'tls.key': b64(key) } }),
    'tls.crt is not a PEM certificate',
  );
  assert.equal(
    tlsSecretProblem({ data: { 'tls.crt': b64(tls.certPem), 'tls.key': b64('nope') } }),
    'tls.key is not a PEM private key',
  );
});
