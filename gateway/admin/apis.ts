/**
 * `/svc/apis[/{id}]`: classic API definitions. A write is checked (schema, then what the gateway
 * needs to serve it) and stored at once; it takes effect at the next reload. OAS APIs
 * (`/svc/apis/oas`, ./oas.ts) share the collection, so one ID names one API of either kind: they
 * are listed and read here in their classic form (`is_oas: true`), deleted here too, and
 * updated only through `/svc/apis/oas/{id}`.
 */
import { randomUUID } from 'node:crypto';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem, isValidId } from '../../schemas/rules/ids.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import { checkApi, classicOf, isOasDocument } from '../routes/check.ts';
import { idFromPath, readJsonObject, statusBody, writeBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';
import { listenerIndex } from './listeners.ts';

/** 404 `API not found`. */
export const notFound = (): AdminResponse => statusBody(404, 'error', 'API not found');
/** Whether a path parameter can be an API ID. */
export const validId = (id: string): boolean => isValidId(id);

/** A new API ID: 32 lower-case hex characters. */
export const newApiId = (): string => randomUUID().replaceAll('-', '');

/** The ID `/svc/apis/oas` would shadow; refused for APIs of both kinds. */
export const RESERVED_ID = 'oas';
/** Why an API can't have the ID `id`, or undefined. */
export function reservedIdProblem(id: string): string | undefined {
  return id === RESERVED_ID
    ? `${JSON.stringify(id)} is reserved (the path /svc/apis/oas lists OAS APIs): choose another ID`
    : undefined;
}

/** 400: the stored API `id` is of the other kind, and where to call instead. */
export function otherKind(id: string, oas: boolean): AdminResponse {
  const what = oas ? 'an OAS API: use /svc/apis/oas/' : 'a classic API: use /svc/apis/';
  return statusBody(400, 'error', `API ${id} is ${what}${id}`);
}

/** 400 `Validation of API Definition failed. Reason: ...` */
export function invalid(problems: string[]): AdminResponse {
  return statusBody(400, 'error', `Validation of API Definition failed. Reason: ${problems.join('; ')}`);
}

/** The reasons a definition is refused, or an empty list. */
async function problemsOf(r: AdminRequest, id: unknown, def: Record<string, unknown>): Promise<string[]> {
  const bad = idProblem('api_id', id);
  if (bad !== undefined) return [formatProblem(bad)];
  const reserved = reservedIdProblem(String(id));
  if (reserved !== undefined) return [`api_id: ${reserved}`];
  if (def.is_oas !== undefined) {
    return [
      'is_oas: set by the gateway on the classic form of OAS APIs: remove it, or write the API to /svc/apis/oas',
    ];
  }
  // A TCP or TLS API is reached on its port, an internal API through svc:// targets, not by a
  // path: stored with the model's empty one (schemas/rules/api-definition.ts).
  const proxy = def.proxy;
  if ((isTcpApi(def) || def.internal === true) && isPlainObject(proxy) && proxy.listen_path === undefined)
    proxy.listen_path = '';
  const problems = checkApi(def, r.deps.env);
  if (problems.length > 0) return problems;
  // Plugin files the gateway would refuse to load are refused now, never stored and not served.
  const plugins = (await r.deps.pluginProblems?.(def as unknown as GatewayApiDefinition)) ?? [];
  if (plugins.length > 0) return plugins;
  // The gateway port serves http only (checkApi refuses https there), so only an API on a port
  // of its own can clash with another: compared with the index of claimed ports, not the store.
  const conflict = await listenerIndex(r.deps.store, r.deps.env).conflict(
    String(id),
    def as unknown as GatewayApiDefinition,
  );
  return conflict === undefined ? [] : [conflict];
}

/** GET /svc/apis: classic definitions, and OAS APIs in their classic form. */
export async function listApis(r: AdminRequest): Promise<AdminResponse> {
  const entries = await r.deps.store.list('apis');
  const apis: unknown[] = [];
  for (const e of entries) {
    if ('value' in e) apis.push(classicOf(e.value));
    else r.deps.log.warn('stored API unreadable', { api_id: e.id, problem: e.problem });
  }
  return { status: 200, body: apis };
}

/** GET /svc/apis/{id}: an OAS API in its classic form. */
export async function getApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  if (!validId(id)) return notFound();
  const api = await r.deps.store.get('apis', id);
  return api === undefined ? notFound() : { status: 200, body: classicOf(api) };
}

/** POST /svc/apis: an ID is generated when the definition has none. */
export async function createApi(r: AdminRequest): Promise<AdminResponse> {
  const def = await readJsonObject(r.req);
  if (def.api_id === undefined || def.api_id === '') def.api_id = newApiId();
  const problems = await problemsOf(r, def.api_id, def);
  if (problems.length > 0) return invalid(problems);
  const id = String(def.api_id);
  const outcome = await r.deps.store.put('apis', id, def, 'create');
  if (outcome === 'exists') return statusBody(409, 'error', 'API already exists');
  await listenerIndex(r.deps.store, r.deps.env).stored(id, def);
  r.deps.log.info('api stored', { api_id: id, action: 'added' });
  return writeBody(id, 'added');
}

/** The answer's message to an update whose body names another API than its path (the reference's words). */
export const API_ID_MISMATCH =
  'Request APIID does not match that in Definition! For Update operations these must match.';

/** PUT /svc/apis/{id}: the body's api_id, when present, must be the path's. */
export async function updateApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  const def = await readJsonObject(r.req);
  const other = idFromPath(def, 'api_id', id, API_ID_MISMATCH);
  if (other !== undefined) return other;
  const problems = await problemsOf(r, id, def);
  if (problems.length > 0) return invalid(problems);
  // An OAS API is updated as its document; between this read and the write below only a delete
  // and a create under the same ID could change its kind.
  if (isOasDocument(await r.deps.store.get('apis', id))) return otherKind(id, true);
  const outcome = await r.deps.store.put('apis', id, def, 'update');
  if (outcome === 'missing') return notFound();
  await listenerIndex(r.deps.store, r.deps.env).stored(id, def);
  r.deps.log.info('api stored', { api_id: id, action: 'modified' });
  return writeBody(id, 'modified');
}

/** DELETE /svc/apis/{id}: an API of either kind. */
export async function deleteApi(r: AdminRequest): Promise<AdminResponse> {
  const id = r.params[0] ?? '';
  if (!validId(id) || !(await r.deps.store.delete('apis', id))) return notFound();
  await listenerIndex(r.deps.store, r.deps.env).stored(id, undefined);
  r.deps.log.info('api deleted', { api_id: id });
  return writeBody(id, 'deleted');
}
