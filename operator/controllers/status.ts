/**
 * How every reconciler reports: the `Ready` condition, `latestTransaction` (the outcome of the
 * last call to the gateway), and a Warning event when a failure is new.
 */
import type { Condition, NamespacedRef, Transaction } from '../../schemas/generated/kinds.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition, type SvcObject, type SvcObjects } from '../../lib/k8s/objects.ts';
import { redactUrl } from '../../lib/log.ts';
import { InputError, SvcError, errorMessage } from '../../lib/errors.ts';
import { refKey, refOf, sortedRefs, type ObjectRef } from '../references.ts';

/** Status fields every reconciled kind has. */
export interface ReconcileStatus {
  observedGeneration?: number;
  latestTransaction?: Transaction;
  conditions?: Condition[];
}

/** An object whose status a reconciler writes. */
export type Reported<S extends ReconcileStatus> = SvcObject<unknown, S>;

/** What reporting needs from the reconciler's dependencies. */
export interface ReportDeps<T extends Reported<ReconcileStatus>> {
  objects: Pick<SvcObjects<T>, 'patchStatus'>;
  events: Pick<EventRecorder, 'record'>;
  now: () => Date;
}

/** A `latestTransaction` value, to the second. */
export function transaction(status: Transaction['status'], now: Date, error?: string): Transaction {
  return {
    time: now.toISOString().replace(/\.\d+Z$/, 'Z'),
    status,
    ...(error === undefined ? {} : { error }),
  };
}

/** The condition reason of a failed call to the gateway, and whether to retry it. */
export function gatewayFailure(err: unknown): {
  reason: 'GatewayRejected' | 'GatewayUnauthorized' | 'GatewayUnavailable';
  retry: boolean;
} {
  // A refused object needs a spec change, which queues it again; anything else is retried.
  if (err instanceof InputError) return { reason: 'GatewayRejected', retry: false };
  if (err instanceof SvcError && (err.status === 401 || err.status === 403)) {
    return { reason: 'GatewayUnauthorized', retry: true };
  }
  return { reason: 'GatewayUnavailable', retry: true };
}

/** `conditions` with `Ready` set for the object's generation. */
export function readyConditions(
  obj: Reported<ReconcileStatus>,
  ready: boolean,
  reason: string,
  message: string,
  now: Date,
): Condition[] {
  return setCondition(
    obj.status?.conditions,
    {
      type: 'Ready',
      status: ready ? 'True' : 'False',
      reason,
      message,
      observedGeneration: obj.metadata.generation,
    },
    now,
  );
}

/**
 * Writes `status` with `Ready=False` and records a Warning event, unless the same failure is
 * already reported (a retry loop writes nothing). With `call`, the failure was a call to the
 * gateway and `latestTransaction` says so.
 */
export async function reportFailure<T extends Reported<ReconcileStatus>>(
  obj: T,
  status: NonNullable<T['status']>,
  failure: { reason: string; message: string; call: boolean },
  deps: ReportDeps<T>,
): Promise<void> {
  const { reason, call } = failure;
  // As the condition holds it (setCondition redacts), so that a repeated failure is recognised.
  const message = redactUrl(failure.message);
  const now = deps.now();
  const prev = obj.status?.latestTransaction;
  const next = { ...status, conditions: readyConditions(obj, false, reason, message, now) };
  if (call) {
    next.latestTransaction =
      prev?.status === 'Failed' && prev.error === message ? prev : transaction('Failed', now, message);
  }
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  const repeated = ready?.status === 'False' && ready.reason === reason && ready.message === message;
  await deps.objects.patchStatus(obj, next);
  if (!repeated) await deps.events.record(obj, 'Warning', reason, message);
}

/** Reports a failure of the object being reconciled: `call` when it was a call to the gateway. */
export type Fail = (reason: string, message: string, call: boolean) => Promise<void>;

/**
 * Runs the gateway calls of a reconcile. A failure is reported (`Ready=False` with the reason
 * {@link gatewayFailure} gives, a failed `latestTransaction`) and thrown again to be retried with
 * backoff; or, for an object the gateway refused, the result is undefined: the reconcile ends and
 * waits for a spec change.
 */
export async function callGateway<R>(run: () => Promise<R>, fail: Fail): Promise<{ value: R } | undefined> {
  try {
    return { value: await run() };
  } catch (err) {
    const failure = gatewayFailure(err);
    await fail(failure.reason, errorMessage(err), true);
    if (!failure.retry) return undefined;
    throw err;
  }
}

/**
 * Reports a contextRef that does not resolve. A missing context is queued again when it appears
 * (the OperatorContext watch); a broken one is looked at again in a minute, since it may be fixed
 * in its Secret.
 */
export async function reportUnresolved(
  unresolved: { reason: string; message: string },
  fail: Fail,
): Promise<WorkResult> {
  await fail(unresolved.reason, unresolved.message, false);
  return unresolved.reason === 'ContextNotFound' ? {} : { requeueAfterMs: 60_000 };
}

/**
 * Writes the status of a reconcile that succeeded: `Ready=True` with `reason` and `message`, a
 * successful `latestTransaction` when something was written (or the last call had failed), and a
 * Normal event naming what was done to `what` (`API <id>`, `policy <id>`) at `where`.
 */
export async function reportSuccess<T extends Reported<ReconcileStatus>>(
  obj: T,
  status: NonNullable<T['status']>,
  outcome: {
    reason: string;
    message: string;
    action?: 'Created' | 'Updated' | 'Deleted';
    what: string;
    where: string;
    /** Conditions set besides `Ready` (an API's `Programmed`). */
    conditions?: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>[];
  },
  deps: ReportDeps<T>,
): Promise<void> {
  const { action } = outcome;
  const now = deps.now();
  if (action || obj.status?.latestTransaction?.status === 'Failed') {
    status.latestTransaction = transaction('Successful', now);
  }
  status.conditions = readyConditions(obj, true, outcome.reason, outcome.message, now);
  for (const c of outcome.conditions ?? []) {
    status.conditions = setCondition(
      status.conditions,
      { ...c, observedGeneration: obj.metadata.generation },
      now,
    );
  }
  await deps.objects.patchStatus(obj, status);
  if (action) {
    const at = action === 'Deleted' ? 'from' : 'in';
    await deps.events.record(
      obj,
      'Normal',
      action,
      `${outcome.what} ${action.toLowerCase()} ${at} ${outcome.where}`,
    );
  }
}

/**
 * The finalizer of an API being deleted holds it while SecurityPolicies cover it (policies being
 * deleted themselves don't hold it: both can go): `Ready=False` with reason `InUse` naming them.
 * True when the API is held; a policy that stops covering it queues it again (its watch), and
 * a held API is checked again every {@link HELD_RECHECK_MS} besides, so that a policy event lost
 * in a watch reconnect never leaves an API held for good.
 */
/** How often an API held by policies is checked again (a backstop to the policy watch). */
export const HELD_RECHECK_MS = 10_000;

export async function heldByPolicies<
  T extends Reported<ReconcileStatus & { linked_by_policies?: NamespacedRef[] }>,
>(
  obj: T,
  covering: readonly { metadata?: { name?: string; namespace?: string; deletionTimestamp?: unknown } }[],
  linked: ObjectRef[],
  deps: ReportDeps<T>,
): Promise<boolean> {
  const holding = covering.filter((p) => p.metadata?.deletionTimestamp === undefined);
  if (holding.length === 0) return false;
  const list = sortedRefs(holding.map(refOf))
    .map((r) => `SecurityPolicy ${refKey(r)}`)
    .join(', ');
  const message = `still used by ${list}: remove it from the access_rights_array of these policies (or delete them) first`;
  const status = { ...obj.status, linked_by_policies: linked } as NonNullable<T['status']>;
  await reportFailure(obj, status, { reason: 'InUse', message, call: false }, deps);
  return true;
}
