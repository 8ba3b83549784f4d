/**
 * What the gateways in mode pro serve, for the operator: each gateway reports the revision of
 * every API and policy it serves (`POST /system/applied`, node secret and node ID: in full after
 * it registers, then what changed), and a user who may read them asks which of the gateways
 * connected for the organisation serve which revision of one (`GET /api/nodes/apis/{id}`,
 * `GET /api/nodes/policies/{id}`). The operator writes `Programmed` when every one serves the
 * revision it pushed.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { callerOf, fail, json, type Handler, type Reply } from '../api/http.ts';
import type { AppliedRevision, Nodes } from './nodes.ts';

/** The revisions of a report's `apis` or `policies`, or why they can't be read. */
function revisions(value: unknown, field: string): Record<string, AppliedRevision | null> | string {
  if (value === undefined) return {};
  if (!isPlainObject(value)) return `${field}: must be an object of ID -> {revision, applied_at} or null`;
  const out: Record<string, AppliedRevision | null> = {};
  for (const [id, v] of Object.entries(value)) {
    if (v === null) {
      out[id] = null;
      continue;
    }
    if (!isPlainObject(v) || typeof v.revision !== 'string' || typeof v.applied_at !== 'string')
      return `${field}.${id}: must be {revision, applied_at} (strings) or null`;
    out[id] = { revision: v.revision, applied_at: v.applied_at };
  }
  return out;
}

/** A report's `left_out` (API ID -> why the node does not serve it), or why it can't be read. */
function leftOutOf(value: unknown): Record<string, string> | string | undefined {
  if (value === undefined) return undefined;
  const bad = 'left_out: must be an object of API ID -> the reason (a string)';
  if (!isPlainObject(value)) return bad;
  const out: Record<string, string> = {};
  for (const [id, why] of Object.entries(value)) {
    if (typeof why !== 'string') return bad;
    out[id] = why.slice(0, 4000);
  }
  return out;
}

/**
 * `POST /system/applied`: a node's report, `{"name", "full", "apis", "policies", "left_out"}`
 * (`left_out`, whole when given: the APIs its last reload left out, and why). 404 when the
 * node is not registered here (it registers again when its notification stream reconnects), 409
 * when a change comes without the full report before it (the node then sends it in full).
 */
export function reportApplied(nodes: Nodes, nodeId: string | string[] | undefined, body: unknown): Reply {
  if (!isPlainObject(body)) return fail(400, 'body: must be a JSON object');
  const apis = revisions(body.apis, 'apis');
  if (typeof apis === 'string') return fail(400, apis);
  const policies = revisions(body.policies, 'policies');
  if (typeof policies === 'string') return fail(400, policies);
  const name = typeof body.name === 'string' ? body.name : '';
  const leftOut = leftOutOf(body.left_out);
  if (typeof leftOut === 'string') return fail(400, leftOut);
  const outcome = nodes.report(nodeId, {
    name,
    full: body.full === true,
    apis,
    policies,
    ...(leftOut === undefined ? {} : { leftOut }),
  });
  if (outcome === 'unknown')
    return fail(404, 'Node not registered: register first (POST /system/nodes), then send x-svc-node-id');
  if (outcome === 'incomplete')
    return fail(409, 'No full report of this node yet: send every revision with "full": true');
  return json({ Status: 'OK', Message: 'Applied revisions recorded' });
}

/**
 * `GET /api/nodes/{kind}/{id}`: the gateways connected now that load the caller's organisation,
 * each with the revision of the API (`api`) or policy (`policy`) `{id}` it serves; the same shape
 * as a gateway's `GET /svc/nodes/{kind}/{id}`. A node that left the API out says why (`left_out`):
 * what only the gateway can check (its plugin files) is not checked when the API is written.
 */
export function appliedBy(nodes: Nodes, kind: 'apis' | 'policies'): Handler {
  return (c) => Promise.resolve(json(nodes.appliedBy(callerOf(c).org, kind, c.params[0] ?? '')));
}
