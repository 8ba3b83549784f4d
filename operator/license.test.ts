/**
 * The license key of mode pro: form, expiry (at start and at every resolve), signature when a
 * public key is set; and connections in mode pro getting the dashboard client with the
 * context's owners.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import type { OperatorContext } from '../schemas/generated/kinds.ts';
import { DashboardClient } from './clients/dashboard.ts';
import { GatewayClient } from './clients/gateway.ts';
import { Connections, clientFor } from './connections.ts';
import { LicenseChecker, checkLicense } from './license.ts';

const NOW = Date.UTC(2030, 0, 1);
const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const publicPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const signed = (exp: number, key = keys.privateKey): Promise<string> =>
  new SignJWT({ sub: 'acme' })
    .setProtectedHeader({ alg: 'ES256' })
    .setExpirationTime(exp / 1000)
    .sign(key);
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
const unsigned = (exp?: number): string => {
  const t = new UnsecuredJWT({ sub: 'acme' });
  if (exp !== undefined) t.setExpirationTime(exp / 1000);
  return t.encode();
};

describe('checkLicense', () => {
  const cases: {
    name: string;
    token: () => Promise<string | undefined> | string | undefined;
    publicKey?: string;
    ok: boolean;
    problem?: RegExp;
  }[] = [
    { name: 'missing', token: () => undefined, ok: false, problem: /needs a license key/ },
    { name: 'not a JWT', token: () => 'abc.def.ghi', ok: false, problem: /not a JWT/ },
    {
      name: 'unsigned, no public key: refused',
      token: () => unsigned(NOW + 60_000),
      ok: false,
      problem: /not signed \(alg none\): unsigned license keys are refused/,
    },
    { name: 'unsigned, no expiry: refused', token: () => unsigned(), ok: false, problem: /not signed/ },
    {
      name: 'unsigned, alg NONE in capitals: refused',
      token: () => `${b64({ alg: 'NONE' })}.${b64({ sub: 'acme' })}.`,
      ok: false,
      problem: /not signed/,
    },
    {
      name: 'unsigned, no alg at all: refused',
      token: () => `${b64({ typ: 'JWT' })}.${b64({ sub: 'acme' })}.`,
      ok: false,
      problem: /not signed/,
    },
    {
      name: 'signed, no public key: cannot be verified, no license',
      token: () => signed(NOW + 60_000),
      ok: false,
      problem:
        /cannot be verified: no license public key is configured .*SVC_OPERATOR_LICENSE_PUBLIC_KEY.*operator\.licensePublicKey/,
    },
    {
      name: 'signed with an HMAC secret, a public key set',
      token: () =>
        new SignJWT({ sub: 'acme' }).setProtectedHeader({ alg: 'HS256' }).sign(Buffer.alloc(32, 1)),
      publicKey: publicPem,
      ok: false,
      problem: /signature/,
    },
    { name: 'signed with the key', token: () => signed(NOW + 60_000), publicKey: publicPem, ok: true },
    {
      name: 'signed with the key, no expiry',
      token: () => new SignJWT({ sub: 'acme' }).setProtectedHeader({ alg: 'ES256' }).sign(keys.privateKey),
      publicKey: publicPem,
      ok: true,
    },
    {
      name: 'signed with another key',
      token: () => signed(NOW + 60_000, other.privateKey),
      publicKey: publicPem,
      ok: false,
      problem: /signature/,
    },
    {
      name: 'unsigned with a public key set',
      token: () => unsigned(NOW + 60_000),
      publicKey: publicPem,
      ok: false,
      problem: /not signed/,
    },
    {
      name: 'signed but expired',
      token: () => signed(NOW - 1000),
      publicKey: publicPem,
      ok: false,
      problem: /expired on 2029-12-31/,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const l = await checkLicense(await c.token(), {
        now: () => NOW,
        ...(c.publicKey === undefined ? {} : { publicKey: c.publicKey }),
      });
      assert.equal(l.ok, c.ok, JSON.stringify(l));
      if (!l.ok && c.problem) assert.match(l.problem, c.problem);
    });
  }

  test('a license valid at start ends when its expiry passes', async () => {
    let now = NOW;
    const checker = new LicenseChecker({ now: () => now, publicKey: publicPem });
    const token = await signed(NOW + 60_000);
    assert.equal(await checker.problem(token), undefined);
    now = NOW + 61_000;
    assert.match((await checker.problem(token)) ?? '', /expired/);
  });
});

describe('connections in mode pro', () => {
  const base = { url: 'http://127.0.0.1:1', auth: 'k', org: 'o', insecureSkipVerify: false };

  test('the client follows the mode', async () => {
    const pro = clientFor({ ...base, mode: 'pro' });
    const ce = clientFor({ ...base, mode: 'ce' });
    assert.ok(pro instanceof DashboardClient);
    assert.ok(ce instanceof GatewayClient);
    await Promise.all([pro.close(), ce.close()]);
  });

  test("a context's owners and license; an expired license refuses the connection", async () => {
    const ctx = (name: string, licenseKey: string): OperatorContext => ({
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'OperatorContext',
      metadata: { name, namespace: 'ns' },
      spec: {
        env: {
          mode: 'pro',
          url: 'http://dash:3000',
          auth: 'key',
          org: 'acme',
          licenseKey,
          user_owners: ['u1'],
          user_group_owners: ['g1'],
        },
      },
    });
    const contexts = new Map([
      ['good', ctx('good', await signed(NOW + 60_000))],
      ['expired', ctx('expired', await signed(NOW - 60_000))],
      ['unsigned', ctx('unsigned', unsigned(NOW + 60_000))],
    ]);
    const made: unknown[] = [];
    const connections = new Connections({
      default: { ...base, mode: 'pro', licenseKey: await signed(NOW + 60_000) },
      contexts: { get: (_ns: string, name: string) => Promise.resolve(contexts.get(name)) } as never,
      secrets: () => Promise.resolve(undefined),
      makeClient: (conn) => {
        made.push(conn);
        return clientFor(conn);
      },
      license: new LicenseChecker({ now: () => NOW, publicKey: publicPem }),
    });
    try {
      const good = await connections.resolve({ name: 'good' }, 'ns');
      assert.ok(good.ok);
      assert.deepEqual(good.conn.userOwners, ['u1']);
      assert.deepEqual(good.conn.userGroupOwners, ['g1']);
      assert.ok(good.client instanceof DashboardClient);
      const expired = await connections.resolve({ name: 'expired' }, 'ns');
      assert.equal(expired.ok, false);
      assert.equal(expired.reason, 'LicenseInvalid');
      const unsignedKey = await connections.resolve({ name: 'unsigned' }, 'ns');
      assert.equal(unsignedKey.ok, false);
      assert.equal(unsignedKey.reason, 'LicenseInvalid');
      const dflt = await connections.resolve(undefined, 'ns');
      assert.ok(dflt.ok);
      assert.equal(made.length, 2);
    } finally {
      await connections.close();
    }
  });
});
