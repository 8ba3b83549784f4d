/**
 * What the gateways serve (gateway/nodes/): `GET /svc/applied` is this process and the revision
 * of each API and policy it serves, and the APIs its last reload left out with the reason
 * (`left_out`: ID -> the problems, field by field); `GET /svc/nodes` every gateway process sharing the store (the
 * ones whose heartbeat is older than `node_timeout_ms` are dropped); `GET /svc/nodes/apis/{id}`
 * and `GET /svc/nodes/policies/{id}` the same, each with the revision of that API (`api`) or
 * policy (`policy`) it serves (none: it does not serve it).
 */
import { statusBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';

const unavailable = (): AdminResponse => statusBody(404, 'error', 'Not found');

/** GET /svc/applied */
export function appliedHere(r: AdminRequest): Promise<AdminResponse> {
  const applied = r.deps.applied?.();
  return Promise.resolve(applied === undefined ? unavailable() : { status: 200, body: applied });
}

/** GET /svc/nodes */
export async function listNodes(r: AdminRequest): Promise<AdminResponse> {
  if (r.deps.nodes === undefined) return unavailable();
  return { status: 200, body: await r.deps.nodes() };
}

/** GET /svc/nodes/apis/{id}, GET /svc/nodes/policies/{id} */
export async function nodesOf(r: AdminRequest): Promise<AdminResponse> {
  if (r.deps.nodes === undefined) return unavailable();
  const kind = r.params[0] === 'policies' ? 'policies' : 'apis';
  return { status: 200, body: await r.deps.nodes({ kind, id: r.params[1] ?? '' }) };
}
