/**
 * The two gateway operations every reconciler does the same way: push a translated document
 * (create, update on a new translation or on drift) and, in the finalizer, delete it.
 */
import type { Logger } from '../../lib/log.ts';
import type { SvcObjects } from '../../lib/k8s/objects.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { errorMessage } from '../../lib/errors.ts';
import type { ManagementClient } from '../clients/management.ts';
import type { Resolved } from '../connections.ts';
import { hashOf } from '../ids.ts';
import { reportFailure, type ReconcileStatus, type ReportDeps, type Reported } from './status.ts';

/** The gateway calls on one document. */
export interface DocumentOps<T> {
  get: () => Promise<T | undefined>;
  create: (doc: T) => Promise<void>;
  update: (doc: T) => Promise<void>;
}

/** The hashes a status keeps of the last push. */
export interface PushHashes {
  /** Hash of the translation last pushed. */
  latestCRDSpecHash?: string;
  /** Hash of what the gateway held right after that push. */
  latestSvcSpecHash?: string;
}

/**
 * Makes the gateway hold `desired`: CREATE when absent; UPDATE when the translation's hash
 * differs from the last one pushed, or the gateway's copy differs from what it held right after
 * that push (drift detection, whatever the gateway adds to what it stores). `afterWrite` runs
 * after a write (APIs need a reload). Returns what was done and the hashes to record.
 */
export async function pushDocument<T>(
  ops: DocumentOps<T>,
  desired: T,
  last: PushHashes,
  afterWrite?: () => Promise<void>,
): Promise<{ action?: 'Created' | 'Updated'; hashes: Required<PushHashes> }> {
  const desiredHash = hashOf(desired);
  let held = await ops.get();
  let action: 'Created' | 'Updated' | undefined;
  if (!held) {
    await ops.create(desired);
    action = 'Created';
  } else if (desiredHash !== last.latestCRDSpecHash || hashOf(held) !== last.latestSvcSpecHash) {
    await ops.update(desired);
    action = 'Updated';
  }
  if (action) {
    held = await ops.get();
    await afterWrite?.();
  }
  return { action, hashes: { latestCRDSpecHash: desiredHash, latestSvcSpecHash: hashOf(held) } };
}

/** What {@link finalizeInGateway} needs. */
export interface FinalizeDeps<T extends Reported<ReconcileStatus>> extends ReportDeps<T> {
  objects: Pick<SvcObjects<T>, 'patchStatus' | 'removeFinalizer'>;
}

/**
 * A finalizer's work: delete the document from the gateway (nothing there counts as done), then
 * drop the finalizer. Without a connection, or when the call fails, the finalizer stays and the
 * status says why.
 */
export async function finalizeInGateway<T extends Reported<ReconcileStatus>>(
  obj: T,
  opts: {
    finalizer: string;
    /** `API <id>`, `policy <id>`: for messages. */
    what: string;
    resolved: Resolved;
    /** Deletes the document; false when there was none. */
    remove: (client: ManagementClient) => Promise<boolean>;
  },
  deps: FinalizeDeps<T>,
  log: Logger,
): Promise<WorkResult> {
  const { resolved, what } = opts;
  const status = { ...obj.status } as NonNullable<T['status']>;
  if (!resolved.ok) {
    const message = `cannot delete ${what}: ${resolved.message}`;
    await reportFailure(obj, status, { reason: resolved.reason, message, call: false }, deps);
    return { requeueAfterMs: 30_000 };
  }
  let removed: boolean;
  try {
    removed = await opts.remove(resolved.client);
  } catch (err) {
    const message = `cannot delete ${what}: ${errorMessage(err)}`;
    await reportFailure(obj, status, { reason: 'GatewayUnavailable', message, call: true }, deps);
    throw err;
  }
  log.info('deleted from the gateway', { what, gateway: resolved.client.url, removed });
  if (removed)
    await deps.events.record(obj, 'Normal', 'Deleted', `${what} deleted from ${resolved.client.url}`);
  await deps.objects.removeFinalizer(obj, opts.finalizer);
  return {};
}
