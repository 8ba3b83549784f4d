/** The operator process refuses to start on bad configuration, with one message naming every problem. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { SignJWT } from 'jose';

const main = join(import.meta.dirname, '..', '..', 'operator', 'main.ts');

function start(env: Record<string, string>): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: r.status, stderr: r.stderr };
}

test('no configuration: exit 2 and every missing key named at once', () => {
  const r = start({});
  assert.equal(r.code, 2);
  assert.match(r.stderr, /svc-operator: invalid configuration:/);
  for (const key of ['SVC_MODE', 'SVC_URL', 'SVC_ORG', 'SVC_AUTH']) {
    assert.match(r.stderr, new RegExp(`- ${key}: Required value`));
  }
});

test('mode pro without a license key and a bad URL: both named', () => {
  const r = start({
    SVC_MODE: 'pro',
    SVC_URL: 'dashboard:3000',
    SVC_ORG: 'o',
    SVC_AUTH: 'topsecret-auth-value',
  });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /environment variable SVC_URL: Invalid value/);
  assert.match(
    r.stderr,
    /environment variable SVC_OPERATOR_LICENSEKEY: Required value: mode pro needs a license key/,
  );
  assert.ok(!r.stderr.includes('topsecret-auth-value'), 'the credential is not echoed');
});

test('mode pro with an unsigned, unverifiable, expired or wrongly signed license key: exit 2, the reason named', async () => {
  const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = (exp: number): string => `${b64({ alg: 'none' })}.${b64({ sub: 'acme', exp })}.`;
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const signed = (exp: number, key = pair.privateKey): Promise<string> =>
    new SignJWT({ sub: 'acme' }).setProtectedHeader({ alg: 'ES256' }).setExpirationTime(exp).sign(key);
  const base = { SVC_MODE: 'pro', SVC_URL: 'http://127.0.0.1:1', SVC_ORG: 'o', SVC_AUTH: 'k' };
  const cases: { name: string; env: Record<string, string>; reason: RegExp }[] = [
    {
      name: 'unsigned, no public key',
      env: { SVC_OPERATOR_LICENSEKEY: unsigned(4_000_000_000) },
      reason: /SVC_OPERATOR_LICENSEKEY: Invalid value: license key is not signed \(alg none\)/,
    },
    {
      name: 'unsigned, a public key set',
      env: { SVC_OPERATOR_LICENSEKEY: unsigned(4_000_000_000), SVC_OPERATOR_LICENSE_PUBLIC_KEY: publicPem },
      reason: /license key is not signed/,
    },
    {
      name: 'signed, no public key to verify it with',
      env: { SVC_OPERATOR_LICENSEKEY: await signed(4_000_000_000) },
      reason:
        /license key cannot be verified: no license public key is configured \(set SVC_OPERATOR_LICENSE_PUBLIC_KEY/,
    },
    {
      name: 'signed with another key',
      env: {
        SVC_OPERATOR_LICENSEKEY: await signed(4_000_000_000, other.privateKey),
        SVC_OPERATOR_LICENSE_PUBLIC_KEY: publicPem,
      },
      reason: /license key signature or claims do not verify/,
    },
    {
      name: 'signed, expired',
      env: { SVC_OPERATOR_LICENSEKEY: await signed(1_000_000), SVC_OPERATOR_LICENSE_PUBLIC_KEY: publicPem },
      reason: /SVC_OPERATOR_LICENSEKEY: Invalid value: license key expired on 1970-01-12/,
    },
  ];
  for (const c of cases) {
    const r = start({ ...base, ...c.env });
    assert.equal(r.code, 2, `${c.name}: ${r.stderr}`);
    assert.match(r.stderr, c.reason, c.name);
  }
});
