/**
 * `POST /svc/explain` (`kubectl svc explain`): how the gateway would answer a request, without
 * proxying it or changing a counter (server/explain.ts runs the chain in a dry run). Body:
 * `{"method": "GET", "url": "/orders/1", "headers": {"Authorization": "..."}, "client_ip": "10.0.0.1"}`.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { readJsonObject, statusBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';

/** POST /svc/explain */
export async function explainRequest(r: AdminRequest): Promise<AdminResponse> {
  if (r.deps.explain === undefined) return statusBody(404, 'error', 'Not found');
  const body = await readJsonObject(r.req);
  const { method, url, headers, client_ip } = body;
  const problems: string[] = [];
  if (typeof method !== 'string' || !/^[A-Za-z]+$/.test(method))
    problems.push('method: must be an HTTP method');
  if (typeof url !== 'string' || url === '') problems.push('url: must be a path or URL');
  if (
    headers !== undefined &&
    (!isPlainObject(headers) || !Object.values(headers).every((v) => typeof v === 'string'))
  )
    problems.push('headers: must map header names to strings');
  if (client_ip !== undefined && typeof client_ip !== 'string') problems.push('client_ip: must be a string');
  if (problems.length > 0) return statusBody(400, 'error', `Request malformed: ${problems.join('; ')}`);
  const explanation = await r.deps.explain({
    method: method as string,
    url: url as string,
    headers: (headers ?? {}) as Record<string, string>,
    clientIp: client_ip as string | undefined,
  });
  return { status: 200, body: explanation };
}
