/**
 * `/svc/apis[/{id}]`: classic API definitions. A write is checked (schema, then what the gateway
 * needs to serve it) and stored at once; it takes effect at the next reload.
 */
import { randomUUID } from 'node:crypto';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { idPattern } from '../../schemas/models/api-definition.ts';
import { checkApi, claimedProtocols, isServed, listenerOf, protocolConflict } from '../routes/compile.ts';
import { readJsonObject, statusBody, writeBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './index.ts';

const notFound = (): AdminResponse => statusBody(404, 'error', 'API not found');
const validId = new RegExp(idPattern);

/** The reasons a definition is refused, or an empty list. */
async function problemsOf(r: AdminRequest, id: string, def: Record<string, unknown>): Promise<string[]> {
  const problems = checkApi(def, r.deps.env);
  if (problems.length > 0) return problems;
  const api = def as unknown as GatewayApiDefinition;
  // The gateway port serves http only (checkApi refuses https there), so only an API on a port
  // of its own can clash with another; the common case needs no read of the whole store.
  if (!isServed(api) || listenerOf(api, r.deps.env) === 'main') return [];
  const others = (await r.deps.store.list('apis')).flatMap((e) =>
    'value' in e && e.id !== id && isServed(e.value as GatewayApiDefinition)
      ? [{ id: e.id, api: e.value as GatewayApiDefinition }]
      : [],
  );
  const conflict = protocolConflict(api, claimedProtocols(others, r.deps.env), r.deps.env);
  return conflict === undefined ? [] : [conflict];
}

function invalid(problems: string[]): AdminResponse {
  return statusBody(400, 'error', `Validation of API Definition failed. Reason: ${problems.join('; ')}`);
}

/** GET /svc/apis */
export async function listApis(r: AdminRequest): Promise<AdminResponse> {
  const entries = await r.deps.store.list('apis');
  const apis: unknown[] = [];
  for (const e of entries) {
    if ('value' in e) apis.push(e.value);
    else r.deps.log.warn('stored API unreadable', { api_id: e.id, problem: e.problem });
  }
  return { status: 200, body: apis };
}

/** GET /svc/apis/{id} */
export async function getApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  if (!validId.test(id)) return notFound();
  const api = await r.deps.store.get('apis', id);
  return api === undefined ? notFound() : { status: 200, body: api };
}

/** POST /svc/apis: an ID is generated when the definition has none. */
export async function createApi(r: AdminRequest): Promise<AdminResponse> {
  const def = await readJsonObject(r.req);
  if (def.api_id === undefined || def.api_id === '') def.api_id = randomUUID().replaceAll('-', '');
  const id = String(def.api_id);
  const problems = await problemsOf(r, id, def);
  if (problems.length > 0) return invalid(problems);
  const outcome = await r.deps.store.put('apis', id, def, 'create');
  if (outcome === 'exists') return statusBody(409, 'error', 'API already exists');
  r.deps.log.info('api stored', { api_id: id, action: 'added' });
  return writeBody(id, 'added');
}

/** PUT /svc/apis/{id}: the body's api_id, when present, must be the path's. */
export async function updateApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const def = await readJsonObject(r.req);
  if (def.api_id !== undefined && def.api_id !== id) {
    return statusBody(
      400,
      'error',
      'Request APIID does not match that in Definition! For Update operations these must match.',
    );
  }
  def.api_id = id;
  const problems = await problemsOf(r, id, def);
  if (problems.length > 0) return invalid(problems);
  const outcome = await r.deps.store.put('apis', id, def, 'update');
  if (outcome === 'missing') return notFound();
  r.deps.log.info('api stored', { api_id: id, action: 'modified' });
  return writeBody(id, 'modified');
}

/** DELETE /svc/apis/{id} */
export async function deleteApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  if (!validId.test(id) || !(await r.deps.store.delete('apis', id))) return notFound();
  r.deps.log.info('api deleted', { api_id: id });
  return writeBody(id, 'deleted');
}
