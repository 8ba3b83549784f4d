/**
 * HMAC request signing as a table through a real gateway: each algorithm, the `Authorization` and
 * `Signature` headers, `X-Aux-Date`, a stale date, keys without HMAC, a policy that lets a key
 * sign; and the key's HMAC secret sealed at rest. The expected signatures are literals computed
 * once with openssl, on a gateway whose clock stands at 1700000000 (Tue, 14 Nov 2023 22:13:20
 * GMT). The table runs against the files store and the Redis store, with the fast path on and
 * off.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FilesStore } from '../../store/files.ts';
import { useEcho } from '../../testing/echo.ts';
import { keyed, type InProcessGateway } from '../../testing/harness.ts';
import { describeEachSetup, testAnswers, type AnswerCase } from '../../testing/tables.ts';
import { rights } from '../../testing/limits.ts';

const NOW_MS = 1_700_000_000_000;
const DATE = 'Tue, 14 Nov 2023 22:13:20 GMT';

const echo = useEcho();

async function provision(gw: InProcessGateway): Promise<void> {
  const apis = [
    keyed('hmac', '/hmac/', echo().url, {
      enable_signature_checking: true,
      hmac_allowed_clock_skew: 5000,
      strip_auth_data: true,
    }),
    keyed('hmac256', '/hmac256/', echo().url, {
      enable_signature_checking: true,
      hmac_allowed_algorithms: ['hmac-sha256'],
    }),
  ];
  for (const a of apis) await gw.addApi(a);
  const policy = {
    id: 'hmac-pol',
    name: 'signs',
    state: 'active',
    hmac_enabled: true,
    access_rights: rights('hmac'),
  };
  assert.equal((await gw.admin('POST', '/svc/policies', policy)).status, 200);
  const keys: [string, Record<string, unknown>][] = [
    [
      'hmac-key',
      { hmac_enabled: true, hmac_string: 'hmac-secret', access_rights: rights('hmac', 'hmac256') },
    ],
    ['hmac-off', { hmac_string: 'hmac-secret', access_rights: rights('hmac') }],
    ['hmac-by-policy', { hmac_string: 'hmac-secret', apply_policies: ['hmac-pol'] }],
  ];
  for (const [k, body] of keys) {
    const res = await gw.admin('POST', `/svc/keys/${k}`, body);
    assert.equal(res.status, 200, `${k}: ${res.text}`);
  }
  await gw.reload();
}

/** `Signature keyId=...,algorithm=...,headers=...,signature=...`. */
const signature = (
  keyId: string,
  algorithm: string,
  sig: string,
  headers = '(request-target) date',
): string => `Signature keyId="${keyId}",algorithm="${algorithm}",headers="${headers}",signature="${sig}"`;

// printf '(request-target): get /hmac/x?a=1\ndate: Tue, 14 Nov 2023 22:13:20 GMT' |
//   openssl dgst -<sha1|sha256|sha384|sha512> -hmac 'hmac-secret' -binary | base64
const SIGNED = {
  'hmac-sha1': 'OM0v3M7leLoMgc4TTgv/f+vpOqQ=',
  'hmac-sha256': 'wy8c7BPxppreXkwadCw3gd2xAOxTrLSDIA1N2R3xexQ=',
  'hmac-sha384': 'qI6OWZtKoFNLkcA8APOhCucreOfuYC7XboBnJOWbm0nlVyp026f3DHkDoFaK+SvO',
  'hmac-sha512': 'hkcTTpJTHxIc7lSl4fdRvJiHGqfMzwVCY6xX4XBSCkH6n/87FepOZCzHNhnUB8P14xXE2aroGdR8PEMtPdnYGw==',
};
// printf '(request-target): get /hmac/x\ndate: ...' | openssl dgst -sha256 -hmac 'hmac-secret' -binary | base64
const SIGNED_PATH_ONLY = 'UocEXxN5lzgIEt8DyU4JAzc8OQhZJf8jkr4ZlzWV578=';
// printf 'date: Tue, 14 Nov 2023 22:13:20 GMT' | openssl dgst -sha256 -hmac 'hmac-secret' -binary | base64
const SIGNED_DATE = 'SCPNtT6J0oedudpQnsLVgV8jE62RJa4aJ2CED+Tr8j8=';
// printf 'x-aux-date: Tue, 14 Nov 2023 22:13:20 GMT' | openssl dgst -sha256 -hmac 'hmac-secret' -binary | base64
const SIGNED_AUX_DATE = 'quqyoW837XK4J3g7zRA2DmbK+fJjWyGtXO3IOnc0X5A=';

const HMAC_REFUSED = 'Authorization field missing, malformed or invalid';
const hmacRefused = (name: string, headers: Record<string, string>, path = '/hmac/x?a=1'): AnswerCase => ({
  name,
  path,
  headers,
  status: 400,
  error: HMAC_REFUSED,
});

const cases: AnswerCase[] = [
  ...(Object.entries(SIGNED) as [keyof typeof SIGNED, string][]).map(([algorithm, sig]): AnswerCase => ({
    name: `hmac: ${algorithm}`,
    path: '/hmac/x?a=1',
    headers: { date: DATE, authorization: signature('hmac-key', algorithm, sig) },
    status: 200,
    upstreamHeaders: { authorization: undefined, date: DATE },
  })),
  {
    name: 'hmac: in the Signature header',
    path: '/hmac/x?a=1',
    headers: {
      date: DATE,
      signature: `keyId="hmac-key",algorithm="hmac-sha256",headers="(request-target) date",signature="${SIGNED['hmac-sha256']}"`,
    },
    status: 200,
  },
  {
    name: 'hmac: percent-encoded, as the reference gateway signs',
    path: '/hmac/x?a=1',
    headers: {
      date: DATE,
      authorization: signature('hmac-key', 'hmac-sha256', encodeURIComponent(SIGNED['hmac-sha256'])),
    },
    status: 200,
  },
  {
    name: 'hmac: the path without the query, as the reference gateway signs',
    path: '/hmac/x?a=1',
    headers: { date: DATE, authorization: signature('hmac-key', 'hmac-sha256', SIGNED_PATH_ONLY) },
    status: 200,
  },
  {
    name: 'hmac: the date alone by default',
    path: '/hmac/anything',
    headers: {
      date: DATE,
      authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
    },
    status: 200,
  },
  {
    name: 'hmac: X-Aux-Date for clients that cannot set Date',
    path: '/hmac/anything',
    headers: {
      'x-aux-date': DATE,
      authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_AUX_DATE}"`,
    },
    status: 200,
  },
  {
    name: 'hmac: a key whose policy lets it sign',
    path: '/hmac/anything',
    headers: {
      date: DATE,
      authorization: `Signature keyId="hmac-by-policy",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
    },
    status: 200,
  },
  hmacRefused('hmac: none', {}),
  hmacRefused('hmac: a token, not a signature', { authorization: 'hmac-key', date: DATE }),
  hmacRefused(
    'hmac: another query',
    { date: DATE, authorization: signature('hmac-key', 'hmac-sha256', SIGNED['hmac-sha256']) },
    '/hmac/x?a=2',
  ),
  hmacRefused('hmac: another method is another signature', {
    date: DATE,
    authorization: signature('hmac-key', 'hmac-sha1', SIGNED['hmac-sha256']),
  }),
  hmacRefused('hmac: a stale date', {
    date: 'Tue, 14 Nov 2023 22:13:10 GMT',
    authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
  }),
  hmacRefused('hmac: no date', {
    authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
  }),
  hmacRefused('hmac: an unknown key', {
    date: DATE,
    authorization: signature('nobody', 'hmac-sha256', SIGNED['hmac-sha256']),
  }),
  hmacRefused('hmac: a key without hmac_enabled', {
    date: DATE,
    authorization: signature('hmac-off', 'hmac-sha256', SIGNED['hmac-sha256']),
  }),
  hmacRefused('hmac: an unsupported algorithm', {
    date: DATE,
    authorization: signature('hmac-key', 'hmac-md5', SIGNED['hmac-sha256']),
  }),
  {
    name: 'hmac: an algorithm the API allows',
    path: '/hmac256/anything',
    headers: {
      date: DATE,
      authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
    },
    status: 200,
  },
  {
    name: 'hmac: an algorithm the API does not allow',
    path: '/hmac256/x?a=1',
    headers: { date: DATE, authorization: signature('hmac-key', 'hmac-sha1', SIGNED['hmac-sha1']) },
    status: 400,
    error: HMAC_REFUSED,
  },
];

describeEachSetup(
  'hmac signing',
  () => ({ now: () => NOW_MS }),
  ({ gw }) => {
    before(async () => {
      await provision(gw());
    });

    testAnswers(gw, cases);

    test('the HMAC secret is stored encrypted, never returned, and kept by an update without it', async () => {
      const got = (await gw().admin('GET', '/svc/keys/hmac-key')).json as Record<string, unknown>;
      assert.equal(got.hmac_enabled, true);
      assert.equal('hmac_string' in got, false);
      const stored = JSON.stringify(await gw().store.get('keys', got.key_hash as string));
      assert.ok(!stored.includes('hmac-secret'), stored);
      assert.match(stored, /"hmac_string":"enc:v1:/);
      if (gw().store instanceof FilesStore) {
        const dir = join(gw().dataDir, 'keys');
        for (const f of await readdir(dir))
          assert.ok(!(await readFile(join(dir, f), 'utf8')).includes('hmac-secret'));
      }
      const update = await gw().admin('PUT', '/svc/keys/hmac-key', {
        hmac_enabled: true,
        access_rights: rights('hmac', 'hmac256'),
      });
      assert.equal(update.status, 200, update.text);
      const res = await gw().request({
        path: '/hmac/anything',
        headers: {
          date: DATE,
          authorization: `Signature keyId="hmac-key",algorithm="hmac-sha256",signature="${SIGNED_DATE}"`,
        },
      });
      assert.equal(res.status, 200, res.text);
      const sealed = await gw().admin('POST', '/svc/keys/sealed', {
        hmac_enabled: true,
        hmac_string: 'enc:v1:AAAA',
      });
      assert.equal(sealed.status, 400);
      assert.match((sealed.json as { message: string }).message, /send the secret in clear/);
    });
  },
);
