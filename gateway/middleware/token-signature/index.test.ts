import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tokenSignature } from './index.ts';

// Computed once with coreutils, not with this code:
//   printf 'tokensecret1700000000' | sha256sum
//   printf 'tokensecret1700000000' | md5sum
test('the signature is the hex digest of token, secret and Unix seconds', () => {
  assert.equal(
    tokenSignature('VendorSHA256', 'token', 'secret', 1700000000),
    '0afe28769e3d516befc168ec60de32d44fe79257b21fcf31d51cda2ac567c71e',
  );
  assert.equal(
    tokenSignature('VendorMD5', 'token', 'secret', 1700000000),
    'b5a2643ecb40606506da0565754bfcaa',
  );
});
