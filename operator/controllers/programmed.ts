/**
 * `Programmed` in the Gateway API sense: an object (an API, a policy) written through a
 * management client is served by every gateway that must serve it. The gateways say which
 * revision of it each one serves (their registry: `GET /svc/nodes/{apis|policies}/{id}` on a
 * gateway, the dashboard's node registry in mode pro); the object is `Ready` and `Programmed`
 * only when every one serves the revision pushed (`status.latestSvcSpecHash`), `Pending` naming
 * the others until then. One report for every kind.
 */
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition } from '../../lib/k8s/objects.ts';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayRevision } from '../../schemas/generated/kinds.ts';
import type { AppliedBy, AppliedOf, ManagementClient } from '../clients/management.ts';
import type { Convergence } from './convergence.ts';
import {
  readyConditions,
  reportFailure,
  reportSuccess,
  transaction,
  type ReconcileStatus,
  type ReportDeps,
  type Reported,
} from './status.ts';

/** How many gateways a status names before it counts the rest. */
const NAMED = 5;
/** How soon an object no gateway serves yet is looked at again, so its status catches up. */
export const UNSERVED_RECHECK_MS = 30_000;
/** How soon an object some gateway does not serve yet is looked at again. */
export const PENDING_RECHECK_MS = 1_000;
/** Pending for longer than this, an object is looked at again every {@link UNSERVED_RECHECK_MS}. */
const LONG_PENDING_MS = 60_000;
/**
 * How long a reconcile that pushed waits for the other gateways to take the change (they reload
 * on the group message the push sent, or forget the policy they cached) before it reports
 * `Pending` and looks again later.
 */
const SETTLE_MS = 2_000;
const SETTLE_POLL_MS = 25;

/** The status fields {@link reportProgrammed} reads and writes. */
export interface ProgrammedStatus extends ReconcileStatus {
  latestSvcSpecHash?: string;
  gateways?: GatewayRevision[];
}

/** What {@link reportProgrammed} needs of the reconciler's dependencies. */
export type ProgrammedDeps<T extends Reported<ProgrammedStatus>> = ReportDeps<T> & {
  convergence?: Convergence | undefined;
  log?: Pick<Logger, 'warn'>;
};

/** The gateways that do not serve `revision`. */
const missing = (gateways: readonly AppliedBy[], revision: string): AppliedBy[] =>
  gateways.filter((g) => g.revision !== revision);

/** Names for a message: `a, b and 3 more`. */
function named(names: readonly string[]): string {
  const sorted = [...names].sort();
  return sorted.length > NAMED
    ? `${sorted.slice(0, NAMED).join(', ')} and ${String(sorted.length - NAMED)} more`
    : sorted.join(', ');
}

/**
 * The gateways that must serve `of` and the revision of it each serves; right after a push
 * (`settle`), waits a little for them all to serve `revision`. Undefined when the peer does not
 * say (an older gateway or dashboard) or could not be asked: the object is then reported as
 * before, held by the peer written to.
 */
async function gatewaysOf(
  client: ManagementClient,
  of: AppliedOf,
  revision: string,
  settle: boolean,
): Promise<AppliedBy[] | undefined> {
  if (client.appliedBy === undefined) return undefined;
  const ask = (): Promise<AppliedBy[] | undefined> => client.appliedBy?.(of) ?? Promise.resolve(undefined);
  let gateways = await ask();
  const deadline = Date.now() + SETTLE_MS;
  while (
    settle &&
    gateways !== undefined &&
    missing(gateways, revision).length > 0 &&
    Date.now() < deadline
  ) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    gateways = await ask();
  }
  return gateways;
}

/**
 * Reports an object written through `client`, once synced: whether every gateway that must serve
 * it serves the revision pushed (`status.latestSvcSpecHash`). When all do: `Ready=True` (the
 * `synced` reason and message, the gateways named) and `Programmed=True`, `status.gateways`
 * listing them; otherwise `Ready=False` and `Programmed=False` with reason `Pending` naming the
 * gateways that do not yet, looked at again soon. A gateway listed before and gone from the
 * registry (stopped, or silent past its timeout) gets a Warning event `GatewayDropped`. The time
 * from the change to the last gateway serving it is observed in `svc_config_convergence_seconds`.
 * A peer that does not say which gateways serve what: `Ready=True` as `synced` says. A peer that
 * cannot be asked (the call fails): `Ready=False`, `GatewayUnavailable`, and the error is thrown
 * for the queue to retry.
 */
export async function reportProgrammed<T extends Reported<ProgrammedStatus>>(
  obj: T,
  status: NonNullable<T['status']>,
  push: {
    /** The document the gateways are asked about. */
    of: AppliedOf;
    /** `API <id>`, `policy <id>`: for messages. */
    what: string;
    client: ManagementClient;
    /** The `Ready` reason and message once synced, and when to look again. */
    synced: { reason?: string; message: string; requeueAfterMs?: number | undefined };
    action: 'Created' | 'Updated' | undefined;
    /** When the reconcile that pushed started: the start of the convergence it measures. */
    since?: Date;
    /** The kind, for the convergence metric. */
    kind: string;
  },
  deps: ProgrammedDeps<T>,
): Promise<WorkResult> {
  const { what, client, action } = push;
  const { message, requeueAfterMs } = push.synced;
  const again = requeueAfterMs === undefined ? {} : { requeueAfterMs };
  const synced = { reason: push.synced.reason ?? 'Synced', message, action, what, where: client.url };
  const revision = status.latestSvcSpecHash;
  let gateways: AppliedBy[] | undefined;
  try {
    gateways =
      revision === undefined ? undefined : await gatewaysOf(client, push.of, revision, action !== undefined);
  } catch (err) {
    // Written, but whether the gateways serve it is unknown: not Ready (a peer that cannot be
    // asked is not one that does not say), retried with the queue's backoff.
    deps.log?.warn('cannot read which gateways serve the object', { what, error: errorMessage(err) });
    const failure = `${what} was written to ${client.url}, but which gateways serve it cannot be read: ${errorMessage(err)}`;
    await reportFailure(obj, status, { reason: 'GatewayUnavailable', message: failure, call: true }, deps);
    throw err;
  }
  if (gateways === undefined || revision === undefined) {
    delete status.gateways;
    await reportSuccess(obj, status, synced, deps);
    return again;
  }

  const uid = obj.metadata.uid;
  if (action !== undefined && push.since !== undefined) deps.convergence?.pushed(uid, revision, push.since);
  status.gateways = [...gateways]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((g) => ({
      name: g.name,
      ...(g.revision === undefined ? {} : { revision: g.revision }),
      ...(g.appliedAt === undefined ? {} : { appliedAt: g.appliedAt }),
    }));
  const present = new Set(gateways.map((g) => g.name));
  const pro = client.servingGateways !== undefined;
  const registry = pro
    ? `the gateways connected to the dashboard ${client.url} (stopped, or disconnected)`
    : `the gateways sharing the store of ${client.url} (stopped, or no heartbeat for longer than its timeout)`;
  for (const gone of (obj.status?.gateways ?? []).filter((g) => !present.has(g.name))) {
    await deps.events.record(
      obj,
      'Warning',
      'GatewayDropped',
      `gateway ${gone.name} left the registry of ${registry}: ${what} no longer waits for it`,
    );
  }
  // Mode pro: a dashboard holds objects for gateways that may connect later; none connected is
  // what the synced message says (not served yet), not a push waiting to land.
  if (pro && gateways.length === 0) {
    delete status.gateways;
    await reportSuccess(obj, status, synced, deps);
    return again;
  }

  const waiting = missing(gateways, revision);
  if (gateways.length > 0 && waiting.length === 0) {
    const last = Math.max(...gateways.map((g) => Date.parse(g.appliedAt ?? '') || 0));
    deps.convergence?.served(uid, push.kind, revision, last);
    const all = gateways.length === 1 ? 'its one gateway' : `all ${String(gateways.length)} gateways`;
    const programmed = `revision ${revision.slice(0, 12)} served by ${all}: ${named([...present])}`;
    await reportSuccess(
      obj,
      status,
      {
        ...synced,
        message: `${message}; ${programmed}`,
        conditions: [{ type: 'Programmed', status: 'True', reason: 'Programmed', message: programmed }],
      },
      deps,
    );
    return again;
  }

  // Pending: written, not yet served everywhere. No Warning: it is expected to pass.
  const pending =
    gateways.length === 0
      ? `${what} is written to ${client.url}, but no gateway is registered in its store to serve it`
      : `${what} is written to ${client.url}; waiting for ${String(waiting.length)} of ${String(gateways.length)} gateways to serve revision ${revision.slice(0, 12)}: ${named(waiting.map((g) => g.name))}`;
  const now = deps.now();
  if (action || obj.status?.latestTransaction?.status === 'Failed') {
    status.latestTransaction = transaction('Successful', now);
  }
  status.conditions = setCondition(
    readyConditions(obj, false, 'Pending', pending, now),
    {
      type: 'Programmed',
      status: 'False',
      reason: 'Pending',
      message: pending,
      observedGeneration: obj.metadata.generation,
    },
    now,
  );
  await deps.objects.patchStatus(obj, status);
  if (action) {
    await deps.events.record(obj, 'Normal', action, `${what} ${action.toLowerCase()} in ${client.url}`);
  }
  // Pending for long (a gateway that leaves the object out, one hung but still renewing its
  // entry): looked at less often.
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  const pendingFor = ready?.reason === 'Pending' ? now.getTime() - Date.parse(ready.lastTransitionTime) : 0;
  return { requeueAfterMs: pendingFor > LONG_PENDING_MS ? UNSERVED_RECHECK_MS : PENDING_RECHECK_MS };
}
