/**
 * `/svc/apis/oas[/{id}]`: OAS APIs, an OpenAPI 3.x document with the `x-svc-api-gateway`
 * extension. The document is stored as it came, with the API ID in `x-svc-api-gateway.info.id`
 * (generated when absent), in the collection of classic APIs: one ID names one API of either kind,
 * and a create stays atomic in the store. A write is checked as the gateway will serve it (the
 * document's schema, then its classic form: schemas/oas/) and takes effect at the next
 * reload, which compiles it into the same route and chain as a classic API.
 */
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import { OAS_EXTENSION } from '../../schemas/oas/index.ts';
import { checkStoredApi, isOasDocument } from '../routes/check.ts';
import {
  API_ID_MISMATCH,
  invalid,
  newApiId,
  notFound,
  otherKind,
  reservedIdProblem,
  validId,
} from './apis.ts';
import { readJsonObject, statusBody, writeBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';
import { listenerIndex } from './listeners.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

const INFO_ID = `${OAS_EXTENSION}.info.id`;

/** A document, or the answer that stands in for it. */
type Found = { doc: Record<string, unknown> } | { response: AdminResponse };

/** The document of the body, or the answer that refuses it. */
async function readDocument(r: AdminRequest): Promise<Found> {
  const doc = await readJsonObject(r.req);
  if (doc[OAS_EXTENSION] === undefined) {
    return { response: statusBody(400, 'error', `the payload should contain ${OAS_EXTENSION}`) };
  }
  return { doc };
}

/** `x-svc-api-gateway.info` when it is an object. */
function infoOf(doc: Record<string, unknown>): Record<string, unknown> | undefined {
  const info = (doc[OAS_EXTENSION] as Record<string, unknown> | null | undefined)?.info;
  return isPlainObject(info) ? info : undefined;
}

async function problemsOf(r: AdminRequest, id: string, doc: Record<string, unknown>): Promise<string[]> {
  const bad = idProblem(INFO_ID, id);
  if (bad !== undefined) return [formatProblem(bad)];
  const reserved = reservedIdProblem(id);
  if (reserved !== undefined) return [`${INFO_ID}: ${reserved}`];
  const problems = checkStoredApi(doc, r.deps.env).problems;
  if (problems.length > 0) return problems;
  // Streams the gateway can't run are refused, never stored and silently not run.
  return (await r.deps.streamProblems?.(id, doc)) ?? [];
}

/** GET /svc/apis/oas: the stored documents of every OAS API. */
export async function listOasApis(r: AdminRequest): Promise<AdminResponse> {
  const docs: unknown[] = [];
  for (const e of await r.deps.store.list('apis')) {
    if ('value' in e) {
      if (isOasDocument(e.value)) docs.push(e.value);
    } else r.deps.log.warn('stored API unreadable', { api_id: e.id, problem: e.problem });
  }
  return { status: 200, body: docs };
}

/** The stored document `{id}`, or the answer when there is none. */
async function storedDocument(r: AdminRequest, id: string): Promise<Found> {
  const stored = validId(id) ? await r.deps.store.get('apis', id) : undefined;
  if (stored === undefined) return { response: notFound() };
  return isOasDocument(stored) ? { doc: stored } : { response: otherKind(id, false) };
}

/** GET /svc/apis/oas/{id}: the document as stored. */
export async function getOasApi(r: AdminRequest): Promise<AdminResponse> {
  const found = await storedDocument(r, r.params[0] ?? '');
  return 'response' in found ? found.response : { status: 200, body: found.doc };
}

/** POST /svc/apis/oas: the ID is `info.id`, or generated and written there. */
export async function createOasApi(r: AdminRequest): Promise<AdminResponse> {
  const body = await readDocument(r);
  if ('response' in body) return body.response;
  const doc = body.doc;
  const info = infoOf(doc);
  const given = info?.id;
  const id = typeof given === 'string' && given !== '' ? given : newApiId();
  if (info !== undefined && (given === undefined || given === '')) info.id = id;
  const problems = await problemsOf(r, id, doc);
  if (problems.length > 0) return invalid(problems);
  const outcome = await r.deps.store.put('apis', id, doc, 'create');
  if (outcome === 'exists') return statusBody(409, 'error', 'API already exists');
  await listenerIndex(r.deps.store, r.deps.env).stored(id, doc);
  r.deps.log.info('api stored', { api_id: id, action: 'added', kind: 'oas' });
  return writeBody(id, 'added');
}

/** PUT /svc/apis/oas/{id}: `info.id`, when present, must be the path's. */
export async function updateOasApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const body = await readDocument(r);
  if ('response' in body) return body.response;
  const doc = body.doc;
  const info = infoOf(doc);
  if (info?.id !== undefined && info.id !== '' && info.id !== id) {
    return statusBody(400, 'error', API_ID_MISMATCH);
  }
  if (info !== undefined) info.id = id;
  const problems = await problemsOf(r, id, doc);
  if (problems.length > 0) return invalid(problems);
  // Between this read and the write below only a delete and a create under the same ID could
  // change the API's kind.
  const stored = await storedDocument(r, id);
  if ('response' in stored) return stored.response;
  const outcome = await r.deps.store.put('apis', id, doc, 'update');
  if (outcome === 'missing') return notFound();
  await listenerIndex(r.deps.store, r.deps.env).stored(id, doc);
  r.deps.log.info('api stored', { api_id: id, action: 'modified', kind: 'oas' });
  return writeBody(id, 'modified');
}

/** DELETE /svc/apis/oas/{id} */
export async function deleteOasApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const stored = await storedDocument(r, id);
  if ('response' in stored) return stored.response;
  if (!(await r.deps.store.delete('apis', id))) return notFound();
  await listenerIndex(r.deps.store, r.deps.env).stored(id, undefined);
  r.deps.log.info('api deleted', { api_id: id, kind: 'oas' });
  return writeBody(id, 'deleted');
}
