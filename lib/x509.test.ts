import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCa, issueServingCert } from './x509.ts';

const ca = await createCa({ commonName: 'svc test CA', validityDays: 30 });

test('a CA certificate: self-signed, CA, CN as given', () => {
  const cert = new X509Certificate(ca.certPem);
  assert.equal(cert.ca, true);
  assert.equal(cert.subject, 'CN=svc test CA');
  assert.equal(cert.issuer, 'CN=svc test CA');
  assert.equal(cert.verify(cert.publicKey), true);
});

test('a serving certificate: signed by the CA, names and addresses in subjectAltName, serverAuth', async () => {
  const leaf = await issueServingCert(ca, {
    commonName: 'webhook',
    dnsNames: ['webhook.ns.svc', 'localhost'],
    ipAddresses: ['127.0.0.1', '::1', '2001:db8::1:2', '::ffff:1.2.3.4'],
    validityDays: 2,
    now: new Date('2026-03-01T12:00:00Z'),
  });
  const cert = new X509Certificate(leaf.certPem);
  assert.equal(cert.ca, false);
  assert.equal(cert.checkIssued(new X509Certificate(ca.certPem)), true);
  assert.equal(cert.verify(new X509Certificate(ca.certPem).publicKey), true);
  assert.equal(
    cert.subjectAltName,
    'DNS:webhook.ns.svc, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:1:2, IP Address:0:0:0:0:0:FFFF:102:304',
  );
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  // Backdated an hour for clock skew, valid for the days asked.
  assert.equal(new Date(cert.validFrom).toISOString(), '2026-03-01T11:00:00.000Z');
  assert.equal(new Date(cert.validTo).toISOString(), '2026-03-03T12:00:00.000Z');
  assert.equal(cert.checkPrivateKey(createPrivateKey(leaf.keyPem)), true);
});

test('dates from 2050 on use GeneralizedTime', async () => {
  const late = await createCa({
    commonName: 'late',
    validityDays: 365,
    now: new Date('2049-12-01T00:00:00Z'),
  });
  assert.equal(new Date(new X509Certificate(late.certPem).validTo).toISOString(), '2050-12-01T00:00:00.000Z');
});

test('a TLS client that trusts the CA accepts the serving certificate', async () => {
  const leaf = await issueServingCert(ca, {
    commonName: '127.0.0.1',
    ipAddresses: ['127.0.0.1'],
    validityDays: 1,
  });
  const server = https.createServer({ key: leaf.keyPem, cert: leaf.certPem }, (_req, res) => {
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get(`https://127.0.0.1:${port}/`, { ca: ca.certPem }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => {
            resolve(text);
          });
        })
        .on('error', reject);
    });
    assert.equal(body, 'ok');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
