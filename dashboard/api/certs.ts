/**
 * `/api/certs[/{id}]`: the organisation's certificates, uploaded as PEM. The ID is the
 * organisation's ID followed by the certificate's SHA-256 fingerprint, as the gateway names
 * certificates. Private keys are refused for now: the dashboard stores no secret it would have
 * to hand to gateways in clear (see docs/dashboard.md).
 */
import { X509Certificate } from 'node:crypto';
import type { Doc } from '../store/store.ts';
import { auditedPut, callerOf, fail, json, ok, pageOf, readText, type Ctx, type Reply } from './http.ts';

const notFound = (): Reply => fail(404, 'Certificate not found');
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function details(d: Doc): Record<string, unknown> {
  const { pem: _pem, ...rest } = d.body;
  return { ...rest, id: d.id };
}

/** POST /api/certs: a PEM certificate (and its chain). */
export async function addCert(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const text = await readText(c.req);
  if (text.includes('PRIVATE KEY-----')) {
    return fail(
      400,
      'certificate: private keys are not accepted by the dashboard: upload the certificate alone',
    );
  }
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0)
    return fail(400, 'certificate: no PEM certificate in the body (-----BEGIN CERTIFICATE-----)');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(blocks[0] ?? '');
  } catch {
    return fail(400, 'certificate: the first PEM block is not a valid certificate');
  }
  if (new Date(cert.validTo).getTime() < c.deps.now()) {
    return fail(400, `certificate: expired on ${new Date(cert.validTo).toISOString()}`);
  }
  const fingerprint = cert.fingerprint256.replaceAll(':', '').toLowerCase();
  const id = `${org}${fingerprint}`;
  const body = {
    org_id: org,
    fingerprint,
    subject: cert.subject,
    issuer: cert.issuer,
    not_before: new Date(cert.validFrom).toISOString(),
    not_after: new Date(cert.validTo).toISOString(),
    dns_names: (cert.subjectAltName ?? '')
      .split(', ')
      .filter((n) => n.startsWith('DNS:'))
      .map((n) => n.slice(4)),
    pem: blocks.join('\n'),
  };
  return c.deps.store.write(org, async (tx) => {
    if ((await tx.get(org, 'certs', id)) !== undefined)
      return fail(409, `Certificate with ID ${id} already exists`);
    await auditedPut(c, tx, org, 'certs', id, undefined, body);
    return json({ id, status: 'ok', message: 'Certificate added' });
  });
}

/** GET /api/certs: `{"certs": [<id>...], "pages": n}` */
export async function listCerts(c: Ctx): Promise<Reply> {
  const page = pageOf(c);
  const { items, total } = await c.deps.store.list(callerOf(c).org, 'certs', page.slice);
  return json({ certs: items.map((d) => d.id), pages: page.pages(total) });
}

/** GET /api/certs/{id}: details and the PEM of the certificate. */
export async function getCert(c: Ctx): Promise<Reply> {
  const d = await c.deps.store.get(callerOf(c).org, 'certs', c.params[0] ?? '');
  return d === undefined ? notFound() : json({ ...details(d), pem: d.body.pem });
}

/** DELETE /api/certs/{id} */
export async function deleteCert(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const id = c.params[0] ?? '';
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'certs', id);
    if (before === undefined) return notFound();
    await auditedPut(c, tx, org, 'certs', id, before, undefined);
    return ok('Certificate deleted');
  });
}
