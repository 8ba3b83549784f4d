/** The operator process refuses to start on bad configuration, with one message naming every problem. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';

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

test('mode pro with an expired or wrongly signed license key: exit 2, the reason named', () => {
  const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = (exp: number): string => `${b64({ alg: 'none' })}.${b64({ sub: 'acme', exp })}.`;
  const base = { SVC_MODE: 'pro', SVC_URL: 'http://127.0.0.1:1', SVC_ORG: 'o', SVC_AUTH: 'k' };
  const expired = start({ ...base, SVC_OPERATOR_LICENSEKEY: unsigned(1_000_000) });
  assert.equal(expired.code, 2);
  assert.match(expired.stderr, /SVC_OPERATOR_LICENSEKEY: Invalid value: license key expired on 1970-01-12/);
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const unsignedWithKey = start({
    ...base,
    SVC_OPERATOR_LICENSEKEY: unsigned(4_000_000_000),
    SVC_OPERATOR_LICENSE_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  });
  assert.equal(unsignedWithKey.code, 2);
  assert.match(unsignedWithKey.stderr, /license key is not signed/);
});
