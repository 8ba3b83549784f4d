/**
 * kstatus's `Compute` (sigs.k8s.io/cli-utils/pkg/kstatus/status, generic.go and status.go) for
 * a custom resource, as Flux's health checks run it: being deleted is Terminating; a
 * `status.observedGeneration` other than `metadata.generation` is InProgress; then the first
 * `Reconciling=True` is InProgress and the first `Stalled=True` Failed; a custom resource with
 * neither is Current. Tests hold the operator's statuses to it.
 */

/** kstatus's result: the status and the message it gives. */
export interface KstatusResult {
  status: 'InProgress' | 'Failed' | 'Current' | 'Terminating';
  message: string;
}

/** An object as kstatus reads it. */
export interface KstatusObject {
  kind?: string;
  metadata: { generation?: number; deletionTimestamp?: unknown };
  status?: {
    observedGeneration?: number;
    conditions?: readonly { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** The status kstatus computes for `obj`. */
export function kstatusOf(obj: KstatusObject): KstatusResult {
  if (obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== '') {
    return { status: 'Terminating', message: 'Resource scheduled for deletion' };
  }
  const generation = obj.metadata.generation;
  const observed = obj.status?.observedGeneration;
  if (generation !== undefined && observed !== undefined && observed !== generation) {
    return {
      status: 'InProgress',
      message: `${obj.kind ?? ''} generation is ${String(generation)}, but latest observed generation is ${String(observed)}`,
    };
  }
  for (const c of obj.status?.conditions ?? []) {
    if (c.type === 'Reconciling' && c.status === 'True')
      return { status: 'InProgress', message: c.message ?? '' };
    if (c.type === 'Stalled' && c.status === 'True') return { status: 'Failed', message: c.message ?? '' };
  }
  return { status: 'Current', message: 'Resource is current' };
}
