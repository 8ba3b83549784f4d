/**
 * Signature validation of auth tokens (`VendorSHA256`, `VendorMD5`): the digest, and as a table
 * through a real gateway (a header or a query parameter, with a clock skew and a configurable
 * refusal), request in, status and error out. The expected signatures are literals computed once
 * with coreutils, on a gateway whose clock stands at 1700000000 (Tue, 14 Nov 2023 22:13:20 GMT).
 * The table runs against the files store and the Redis store, with the fast path on and off.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../../testing/echo.ts';
import { keyed, type InProcessGateway } from '../../testing/harness.ts';
import { describeEachSetup, testAnswers, type AnswerCase } from '../../testing/tables.ts';
import { tokenSignature } from './index.ts';
import { rights } from '../../testing/limits.ts';

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

const NOW_MS = 1_700_000_000_000;

const echo = useEcho();

async function provision(gw: InProcessGateway): Promise<void> {
  const apis = [
    keyed('sig', '/sig/', echo().url, {
      use_standard_auth: true,
      auth: {
        validate_signature: true,
        signature: {
          algorithm: 'VendorSHA256',
          header: 'X-Signature',
          secret: 'sig-secret',
          allowed_clock_skew: 2,
        },
      },
    }),
    keyed('sigmd5', '/sigmd5/', echo().url, {
      use_standard_auth: true,
      auth_configs: {
        authToken: {
          auth_header_name: 'X-Api-Key',
          validate_signature: true,
          signature: {
            algorithm: 'VendorMD5',
            use_param: true,
            param_name: 'sig',
            secret: 'sig-secret',
            allowed_clock_skew: 2,
            error_code: 403,
            error_message: 'Bad signature',
          },
        },
      },
    }),
  ];
  for (const a of apis) await gw.addApi(a);
  const res = await gw.admin('POST', '/svc/keys/key-one', { access_rights: rights('sig', 'sigmd5') });
  assert.equal(res.status, 200, `key-one: ${res.text}`);
  await gw.reload();
}

const cases: AnswerCase[] = [
  // Signature validation of tokens: printf 'key-onesig-secret<seconds>' | sha256sum (or md5sum).
  {
    name: 'token signature: SHA-256 of this second',
    path: '/sig/x',
    headers: {
      authorization: 'key-one',
      'x-signature': '07e4fc8993da4ea340be828b4465adc9e692889c8145f91165c490fa5e494406',
    },
    status: 200,
  },
  {
    name: 'token signature: upper-case hex, 2 s ago (within the skew)',
    path: '/sig/x',
    headers: {
      authorization: 'key-one',
      'x-signature': 'A996F4F801E428641030A41D57DEF5C3819D070A1A55E026C9F5C79D24D872B0',
    },
    status: 200,
  },
  {
    name: 'token signature: 3 s ahead (beyond the skew)',
    path: '/sig/x',
    headers: {
      authorization: 'key-one',
      'x-signature': '267948f5bb412229dbf40435a2fd412933f7a109ff20e818f77b381fc607464f',
    },
    status: 401,
    error: 'Request signature verification failed',
  },
  {
    name: 'token signature: none',
    path: '/sig/x',
    headers: { authorization: 'key-one' },
    status: 401,
    error: 'Request signature verification failed',
  },
  {
    name: 'token signature: the token is checked first',
    path: '/sig/x',
    headers: { authorization: 'nope', 'x-signature': '07e4fc' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'token signature: MD5 in a query parameter, 1 s ahead',
    path: '/sigmd5/x?sig=820f9d6d68b88b84dd7a915be2591a88',
    headers: { 'x-api-key': 'key-one' },
    status: 200,
  },
  {
    name: 'token signature: the configured refusal',
    path: '/sigmd5/x?sig=820f9d6d68b88b84dd7a915be2591a89',
    headers: { 'x-api-key': 'key-one' },
    status: 403,
    error: 'Bad signature',
  },
];

describeEachSetup(
  'token signatures',
  () => ({ now: () => NOW_MS }),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });

    testAnswers(gw, cases);
  },
);
