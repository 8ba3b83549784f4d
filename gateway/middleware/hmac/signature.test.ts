import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hmacOf, parseSignature, signingString, type SignatureParams } from './signature.ts';

describe('parseSignature', () => {
  const rows: { name: string; value: string; want: SignatureParams | undefined }[] = [
    {
      name: 'the Authorization form',
      value:
        'Signature keyId="k1",algorithm="hmac-sha256",headers="(request-target) date",signature="ab+/c=="',
      want: {
        keyId: 'k1',
        algorithm: 'hmac-sha256',
        headers: ['(request-target)', 'date'],
        signature: 'ab+/c==',
      },
    },
    {
      name: 'the Signature header form, spaces, and date by default',
      value: 'keyId="k1", algorithm="hmac-sha1", signature="x"',
      want: { keyId: 'k1', algorithm: 'hmac-sha1', headers: ['date'], signature: 'x' },
    },
    {
      name: 'a percent-encoded signature, as the reference gateway signs',
      value: 'signature keyId="k1",algorithm="hmac-sha512",signature="ab%2B%2Fc%3D%3D"',
      want: { keyId: 'k1', algorithm: 'hmac-sha512', headers: ['date'], signature: 'ab+/c==' },
    },
    {
      name: 'unquoted values',
      value: 'Signature keyId=k1,algorithm=hmac-sha384,signature=x',
      want: { keyId: 'k1', algorithm: 'hmac-sha384', headers: ['date'], signature: 'x' },
    },
    {
      name: 'an unknown algorithm',
      value: 'Signature keyId="k",algorithm="rsa-sha256",signature="x"',
      want: undefined,
    },
    { name: 'no key', value: 'Signature algorithm="hmac-sha1",signature="x"', want: undefined },
    {
      name: 'an unknown parameter',
      value: 'Signature keyId="k",algorithm="hmac-sha1",signature="x",created=1',
      want: undefined,
    },
    {
      name: 'a repeated parameter',
      value: 'Signature keyId="k",keyId="j",algorithm="hmac-sha1",signature="x"',
      want: undefined,
    },
    { name: 'not a signature', value: 'Bearer abc', want: undefined },
  ];
  for (const r of rows) {
    test(r.name, () => {
      assert.deepEqual(parseSignature(r.value), r.want);
    });
  }
});

// Computed once with openssl, not with this code:
//   printf '(request-target): get /hmac/x?a=1\ndate: Tue, 14 Nov 2023 22:13:20 GMT' |
//     openssl dgst -sha256 -hmac 'hmac-secret' -binary | base64
test('the signing string and its HMAC', () => {
  const text = signingString(['(request-target)', 'date'], {
    method: 'GET',
    target: '/hmac/x?a=1',
    headers: { date: 'Tue, 14 Nov 2023 22:13:20 GMT' },
  });
  assert.equal(text, '(request-target): get /hmac/x?a=1\ndate: Tue, 14 Nov 2023 22:13:20 GMT');
  assert.equal(hmacOf('hmac-sha256', 'hmac-secret', text), 'wy8c7BPxppreXkwadCw3gd2xAOxTrLSDIA1N2R3xexQ=');
  assert.equal(hmacOf('hmac-sha1', 'hmac-secret', text), 'OM0v3M7leLoMgc4TTgv/f+vpOqQ=');
});

test('X-Aux-Date stands for the date when sent', () => {
  const text = signingString(['date', 'x-custom'], {
    method: 'POST',
    target: '/',
    headers: { date: 'ignored', 'x-aux-date': 'Tue, 14 Nov 2023 22:13:20 GMT', 'x-custom': ' v ' },
  });
  assert.equal(text, 'x-aux-date: Tue, 14 Nov 2023 22:13:20 GMT\nx-custom: v');
});
