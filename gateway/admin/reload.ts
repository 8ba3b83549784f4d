/**
 * `/svc/reload` reloads every process of this node; `/svc/reload/group` every node sharing the
 * store. Both answer once this node has reloaded. A failed reload keeps the previous routes and
 * says why.
 */
import { statusBody, type AdminResponse } from './http.ts';
import type { AdminRequest, ReloadReport } from './types.ts';

function answer(report: ReloadReport): AdminResponse {
  // An API left out doesn't fail the reload (every other API loaded): the message names it.
  return report.ok
    ? statusBody(200, 'ok', report.message)
    : statusBody(500, 'error', `reload failed, the previous routes keep serving: ${report.message}`);
}

/** GET /svc/reload */
export async function reloadNode(r: AdminRequest): Promise<AdminResponse> {
  return answer(await r.deps.reloadNode());
}

/** GET /svc/reload/group */
export async function reloadGroup(r: AdminRequest): Promise<AdminResponse> {
  return answer(await r.deps.reloadGroup());
}
