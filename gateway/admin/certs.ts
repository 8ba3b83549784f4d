/**
 * `/svc/certs[/{id}]`: certificates (gateway/certs/). `POST /svc/certs?org_id=` takes a PEM body
 * (certificate, optionally its chain and private key) and answers
 * `{"id":"<org><sha256>","status":"ok","message":"Certificate added"}`; the same certificate
 * again is 409 naming its ID; an unparsable or expired one is 400. `GET /svc/certs?org_id=`
 * lists IDs (`?mode=detailed`: their details); `GET /svc/certs/{id}[,{id}...]` shows details;
 * `DELETE /svc/certs/{id}` removes one. Private keys are never returned.
 */
import { CERTS, CertInputError, detailsOf, parseUpload, type StoredCert } from '../certs/certs.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { MalformedBody, MAX_BODY_BYTES, statusBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';

function queryOf(r: AdminRequest): URLSearchParams {
  const url = r.req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}

async function readText(r: AdminRequest): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of r.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new MalformedBody('Request body too large', 413);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function stored(r: AdminRequest): Promise<StoredCert[]> {
  const entries = await r.deps.store.list(CERTS);
  return entries.flatMap((e) => ('value' in e ? [e.value as StoredCert] : []));
}

/** POST /svc/certs?org_id= */
export async function addCert(r: AdminRequest): Promise<AdminResponse> {
  const orgId = queryOf(r).get('org_id') ?? '';
  // The organisation's ID starts the certificate's, which names it in /svc/certs/{id}.
  const bad = orgId === '' ? undefined : idProblem('org_id', orgId);
  if (bad !== undefined) return statusBody(400, 'error', formatProblem(bad));
  const pem = await readText(r);
  let cert: StoredCert;
  try {
    cert = await parseUpload(pem, orgId, r.deps.secret, r.deps.now());
  } catch (err) {
    if (err instanceof CertInputError) return statusBody(400, 'error', err.message);
    throw err;
  }
  if ((await r.deps.store.put(CERTS, cert.id, cert, 'create')) === 'exists') {
    return statusBody(409, 'error', `Certificate with ID ${cert.id} already exists`);
  }
  r.deps.log.info('certificate stored', {
    cert_id: cert.id,
    has_private_key: cert.private_key !== undefined,
  });
  return { status: 200, body: { id: cert.id, status: 'ok', message: 'Certificate added' } };
}

/** GET /svc/certs?org_id=[&mode=detailed] */
export async function listCerts(r: AdminRequest): Promise<AdminResponse> {
  const q = queryOf(r);
  const orgId = q.get('org_id');
  const certs = (await stored(r)).filter((c) => orgId === null || c.org_id === orgId);
  if (q.get('mode') === 'detailed') return { status: 200, body: { certs: certs.map(detailsOf) } };
  return { status: 200, body: { certs: certs.map((c) => c.id) } };
}

/** GET /svc/certs/{id}[,{id}...]: one certificate's details, or a list for several IDs. */
export async function getCerts(r: AdminRequest): Promise<AdminResponse> {
  const ids = (r.params[0] ?? '').split(',').filter((id) => id !== '');
  const found: StoredCert[] = [];
  for (const id of ids) {
    const c = (await r.deps.store.get(CERTS, id)) as StoredCert | undefined;
    if (c !== undefined) found.push(c);
  }
  if (ids.length === 1) {
    const one = found[0];
    return one === undefined
      ? statusBody(404, 'error', 'Certificate not found')
      : { status: 200, body: detailsOf(one) };
  }
  return { status: 200, body: found.map(detailsOf) };
}

/** DELETE /svc/certs/{id} */
export async function deleteCert(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  if (id === '' || !(await r.deps.store.delete(CERTS, id))) {
    return statusBody(404, 'error', 'Certificate not found');
  }
  r.deps.log.info('certificate deleted', { cert_id: id });
  return { status: 200, body: { id, status: 'ok', message: 'removed' } };
}
