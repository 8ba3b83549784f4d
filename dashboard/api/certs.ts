/**
 * `/api/certs[/{id}]`: the organisation's certificates, uploaded as PEM: the certificate, its
 * chain, and optionally its private key (a server certificate for an HTTPS listener, a client
 * certificate a gateway presents upstream), as a gateway's `/svc/certs` takes them. The ID is the
 * organisation's ID followed by the certificate's SHA-256 fingerprint, as the gateway names
 * certificates. A private key is checked against the certificate and kept sealed (lib/seal.ts,
 * under the admin secret); no user reads it back (`has_private_key` says it is there): only
 * gateways get it, through `/system/certs/{id}` (nodeCert), sealed under the node secret.
 */
import { X509Certificate, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { CERT_KEY_AT_REST, CERT_KEY_TO_NODE, seal, unseal } from '../../lib/seal.ts';
import { orgIds } from '../nodes/nodes.ts';
import type { Doc, Store } from '../store/store.ts';
import { auditedPut, deleteExisting, pageOfKind } from './documents.ts';
import { callerOf, fail, json, readText, type Ctx, type Reply } from './http.ts';

const notFound = (): Reply => fail(404, 'Certificate not found');
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const PEM_KEY =
  /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----[\s\S]+?-----END (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/g;

/** What users see of a certificate: never its private key. */
function details(d: Doc): Record<string, unknown> {
  const { pem: _pem, private_key: privateKey, ...rest } = d.body;
  return { ...rest, id: d.id, has_private_key: typeof privateKey === 'string' };
}

/** The private key of an upload (at most one, matching the certificate), or why it is refused. */
function privateKeyOf(text: string, cert: X509Certificate): { key?: KeyObject } | { refused: string } {
  const blocks = text.match(PEM_KEY) ?? [];
  if (blocks.length === 0) {
    return text.includes('PRIVATE KEY-----')
      ? { refused: 'the private key is not a PEM block the dashboard reads' }
      : {};
  }
  if (blocks.length > 1) return { refused: 'more than one private key in the body' };
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: blocks[0] ?? '', format: 'pem' });
  } catch {
    // Not the parser's message: it may quote the key.
    return { refused: 'the private key could not be read (PKCS#8, PKCS#1 or SEC1, unencrypted)' };
  }
  const mine = createPublicKey(key).export({ type: 'spki', format: 'der' });
  if (!mine.equals(cert.publicKey.export({ type: 'spki', format: 'der' })))
    return { refused: 'the private key does not match the certificate' };
  return { key };
}

/** POST /api/certs: a PEM certificate (and its chain, and its private key). */
export async function addCert(c: Ctx): Promise<Reply> {
  const org = callerOf(c).org;
  const text = await readText(c.req);
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
  const found = privateKeyOf(text, cert);
  if ('refused' in found) return fail(400, `certificate: ${found.refused}`);
  const key = found.key;
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
    ...(key === undefined
      ? {}
      : {
          private_key: seal(
            key.export({ type: 'pkcs8', format: 'pem' }).toString(),
            c.deps.config.admin_secret,
            CERT_KEY_AT_REST,
          ),
        }),
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
  const { items, pages } = await pageOfKind(c, 'certs');
  return json({ certs: items.map((d) => d.id), pages });
}

/** GET /api/certs/{id}: details and the PEM of the certificate (not of its key). */
export async function getCert(c: Ctx): Promise<Reply> {
  const d = await c.deps.store.get(callerOf(c).org, 'certs', c.params[0] ?? '');
  return d === undefined ? notFound() : json({ ...details(d), pem: d.body.pem });
}

/** A certificate as a gateway loads it: its PEM, and its private key sealed under the node secret. */
export interface NodeCert {
  id: string;
  org_id: string;
  /** The certificate then its chain, PEM. */
  pem: string;
  /** The PKCS#8 PEM private key, sealed (lib/seal.ts, CERT_KEY_TO_NODE) under the node secret. */
  private_key?: string;
}

/**
 * `/system/certs/{id}`: the certificate `id` of one of the organisations, for a gateway. Its key
 * is opened with the admin secret and sealed again under the node secret; a key that no longer
 * opens (the admin secret changed) is left out, as if it had none.
 */
export async function nodeCert(
  store: Store,
  orgs: readonly string[],
  id: string,
  secrets: { admin: string; node: string },
): Promise<NodeCert | undefined> {
  for (const org of await orgIds(store, orgs)) {
    const d = await store.get(org, 'certs', id);
    if (d === undefined) continue;
    const sealed = d.body.private_key;
    const plain = typeof sealed === 'string' ? unseal(sealed, secrets.admin, CERT_KEY_AT_REST) : undefined;
    return {
      id: d.id,
      org_id: org,
      pem: String(d.body.pem),
      ...(plain === undefined ? {} : { private_key: seal(plain, secrets.node, CERT_KEY_TO_NODE) }),
    };
  }
  return undefined;
}

/** DELETE /api/certs/{id} */
export async function deleteCert(c: Ctx): Promise<Reply> {
  return deleteExisting(c, 'certs', notFound, 'Certificate deleted');
}
