/**
 * `/svc/certs`: upload (certificate, with or without its key), duplicates, refusals, listing,
 * details, deletion, and keys encrypted at rest.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startGateway, type InProcessGateway } from '../testing/harness.ts';
import { makeCert, type MadeCert } from '../testing/client-certs.ts';

describe('/svc/certs', () => {
  let gw: InProcessGateway;
  let plain: MadeCert;
  let withKey: MadeCert;
  let sec1: MadeCert;

  before(async () => {
    gw = await startGateway();
    plain = await makeCert('plain.test');
    withKey = await makeCert('keyed.test', { dnsNames: ['keyed.test', 'www.keyed.test'] });
    sec1 = await makeCert('sec1.test');
  });
  after(async () => {
    await gw.stop();
  });

  test('a certificate is added under its organisation and fingerprint', async () => {
    const res = await gw.admin('POST', '/svc/certs?org_id=org1', plain.cert);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {
      id: `org1${plain.fingerprint}`,
      status: 'ok',
      message: 'Certificate added',
    });
  });

  test('the same certificate again is a conflict naming its ID', async () => {
    const res = await gw.admin('POST', '/svc/certs?org_id=org1', plain.cert);
    assert.equal(res.status, 409);
    assert.match(res.text, new RegExp(`org1${plain.fingerprint}`));
  });

  test('a certificate with its PKCS#8 or SEC1 key is added', async () => {
    const a = await gw.admin('POST', '/svc/certs?org_id=org1', withKey.cert + withKey.key);
    assert.equal(a.status, 200, a.text);
    const b = await gw.admin('POST', '/svc/certs?org_id=org1', sec1.cert + sec1.sec1Key);
    assert.equal(b.status, 200, b.text);
  });

  const refusals: { name: string; body: () => Promise<string>; message: RegExp }[] = [
    {
      name: 'an expired certificate',
      body: async () =>
        (
          await makeCert('old.test', {
            notBefore: new Date(Date.now() - 86400_000 * 2),
            notAfter: new Date(Date.now() - 86400_000),
          })
        ).cert,
      message: /^Certificate has expired/,
    },
    {
      name: 'garbage',
      body: () => Promise.resolve('not a certificate'),
      message: /^Certificate could not be parsed/,
    },
    {
      name: 'a damaged certificate',
      body: () => Promise.resolve(plain.cert.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA')),
      message: /could not be parsed/,
    },
    {
      name: 'a key that is not the certificate’s',
      body: async () => plain.cert + (await makeCert('other.test')).key,
      message: /^Private key does not match the certificate$/,
    },
  ];
  for (const c of refusals) {
    test(`400: ${c.name}`, async () => {
      const res = await gw.admin('POST', '/svc/certs?org_id=org2', await c.body());
      assert.equal(res.status, 400, res.text);
      assert.match((res.json as { message: string }).message, c.message);
    });
  }

  test('list, detailed list, details of one and several, never a key', async () => {
    const list = await gw.admin('GET', '/svc/certs?org_id=org1');
    assert.equal(list.status, 200);
    const ids = (list.json as { certs: string[] }).certs;
    assert.deepEqual(
      [...ids].sort(),
      [`org1${plain.fingerprint}`, `org1${withKey.fingerprint}`, `org1${sec1.fingerprint}`].sort(),
    );
    assert.deepEqual((await gw.admin('GET', '/svc/certs?org_id=nobody')).json, { certs: [] });

    const detailed = await gw.admin('GET', '/svc/certs?org_id=org1&mode=detailed');
    const rows = (detailed.json as { certs: Record<string, unknown>[] }).certs;
    const keyed = rows.find((r) => r.id === `org1${withKey.fingerprint}`);
    assert.ok(keyed);
    assert.equal(keyed.fingerprint, withKey.fingerprint);
    assert.equal(keyed.subject, 'CN=keyed.test');
    assert.equal(keyed.issuer, 'CN=keyed.test');
    assert.deepEqual(keyed.dns_names, ['keyed.test', 'www.keyed.test']);
    assert.equal(keyed.has_private_key, true);
    assert.equal(typeof keyed.not_before, 'string');
    assert.equal(typeof keyed.not_after, 'string');
    assert.doesNotMatch(detailed.text, /PRIVATE KEY|enc:v1/);

    const one = await gw.admin('GET', `/svc/certs/org1${plain.fingerprint}`);
    assert.equal(one.status, 200);
    assert.equal((one.json as { has_private_key: boolean }).has_private_key, false);
    const several = await gw.admin('GET', `/svc/certs/org1${plain.fingerprint},org1${sec1.fingerprint}`);
    assert.deepEqual(
      (several.json as { id: string }[]).map((c) => c.id),
      [`org1${plain.fingerprint}`, `org1${sec1.fingerprint}`],
    );
    assert.equal((await gw.admin('GET', '/svc/certs/org1nothere')).status, 404);
  });

  test('the stored document holds no private key in clear', () => {
    const dir = join(gw.dataDir, 'certs');
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 3);
    for (const f of files) {
      const text = readFileSync(join(dir, f), 'utf8');
      assert.doesNotMatch(text, /PRIVATE KEY/);
      const doc = JSON.parse(text) as { private_key?: string };
      if (doc.private_key !== undefined) assert.match(doc.private_key, /^enc:v1:/);
    }
  });

  test('delete, then it is gone', async () => {
    const id = `org1${plain.fingerprint}`;
    const del = await gw.admin('DELETE', `/svc/certs/${id}`);
    assert.equal(del.status, 200, del.text);
    assert.equal((await gw.admin('GET', `/svc/certs/${id}`)).status, 404);
    assert.equal((await gw.admin('DELETE', `/svc/certs/${id}`)).status, 404);
  });

  test('the secret is required', async () => {
    const { send } = await import('../testing/client.ts');
    const res = await send({ port: gw.port, method: 'GET', path: '/svc/certs' });
    assert.equal(res.status, 403);
  });
});
