/**
 * The conditions kstatus reads (sigs.k8s.io/cli-utils/pkg/kstatus, which Flux's health checks
 * use), derived from `Ready`. kstatus decides on the generic rules alone when an object has them:
 * `Reconciling=True` is InProgress, `Stalled=True` is Failed, and neither (with
 * `status.observedGeneration` equal to `metadata.generation`) is Current. Both follow the
 * "abnormal-true" convention: absent when all is well, never False.
 *
 * - `Ready=True`: neither.
 * - `Ready=False` while the operator is still working on the object: it waits for an object it
 *   references (a reason ending in `NotFound` or `NotReady`), for gateways to serve it
 *   (`Pending`), for its users to go (`InUse`), or retries a gateway or dashboard that did not
 *   answer or refused its credentials: `Reconciling=True`, same reason and message.
 * - Any other `Ready=False` (a spec refused by the operator or the gateway, a conflict): nothing
 *   happens until the object or what it references changes: `Stalled=True`.
 */
import type { Condition } from '../../schemas/generated/kinds.ts';

/** The reasons of `Ready=False` that the operator gets past by itself (waiting or retrying). */
const RETRIED = new Set(['Pending', 'InUse', 'GatewayUnavailable', 'GatewayUnauthorized']);

/** Whether a `Ready=False` reason means the operator is still making progress. */
export function isProgressing(reason: string): boolean {
  return RETRIED.has(reason) || reason.endsWith('NotFound') || reason.endsWith('NotReady');
}

/** kstatus's condition types. */
export const RECONCILING = 'Reconciling';
export const STALLED = 'Stalled';

/**
 * `conditions` with `Reconciling` and `Stalled` set from `ready` (the Ready condition just set).
 * A condition already true keeps its transition time.
 */
export function withKstatus(conditions: readonly Condition[], ready: Condition, now: Date): Condition[] {
  const rest = conditions.filter((c) => c.type !== RECONCILING && c.type !== STALLED);
  if (ready.status === 'True') return rest;
  const type = ready.status === 'False' && !isProgressing(ready.reason) ? STALLED : RECONCILING;
  const prev = conditions.find((c) => c.type === type);
  const { reason, message, observedGeneration } = ready;
  const derived: Condition = {
    type,
    status: 'True',
    reason,
    message,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    lastTransitionTime:
      prev?.status === 'True' ? prev.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  return [...rest, derived];
}
