/**
 * The two gateway operations every reconciler does the same way: push a translated document
 * (create, update on a new translation or on drift) and, in the finalizer, delete it.
 */
import { redactUrl, type Logger } from '../../lib/log.ts';
import type { SvcObjects } from '../../lib/k8s/objects.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { TransientError, errorMessage } from '../../lib/errors.ts';
import type { NamespacedRef, PushedTo } from '../../schemas/generated/kinds.ts';
import type { ManagementClient } from '../clients/management.ts';
import type { Connections, Resolved } from '../connections.ts';
import { hashOf } from '../ids.ts';
import {
  gatewayFailure,
  reportFailure,
  type Fail,
  type ReconcileStatus,
  type ReportDeps,
  type Reported,
} from './status.ts';

/** The gateway calls on one document. */
export interface DocumentOps<T> {
  get: () => Promise<T | undefined>;
  create: (doc: T) => Promise<void>;
  update: (doc: T) => Promise<void>;
  /** Replaces the document when the peer has it; false when it has none (then `create`). */
  updateIfExists?: (doc: T) => Promise<boolean>;
}

/** The hashes a status keeps of the last push. */
export interface PushHashes {
  /** Hash of the translation last pushed. */
  latestCRDSpecHash?: string;
  /** Hash of what the gateway held right after that push. */
  latestSvcSpecHash?: string;
}

/**
 * The hashes of the last push of each object (by uid) this process made, and under which
 * document ID. A reconcile reads its object from the informer cache, which may not hold yet the
 * status the previous reconcile of the same object wrote: a second reconcile queued while the
 * first ran (a SecurityPolicy that covers the API appearing, a Secret, a context) starts as soon
 * as the first ends, sees no or old `latestCRDSpecHash` and would push the same document again
 * (docs/design/operator-pushes.md). This process is the only writer of the status (the leader),
 * so what it remembers is never older than the status in its cache; after a restart the memory is
 * empty and the status on the API server is the truth. A stale entry cannot skip a needed push:
 * a push is skipped only when the gateway still holds exactly what it held after the push.
 */
export class PushMemory {
  readonly #last = new Map<string, { id: string; hashes: Required<PushHashes> }>();

  /** The hashes of the last push of the object's document `id`; undefined when none is known. */
  last(uid: string | undefined, id: string): Required<PushHashes> | undefined {
    if (uid === undefined) return undefined;
    const entry = this.#last.get(uid);
    return entry?.id === id ? entry.hashes : undefined;
  }

  /** Records a push (or a check that found the gateway up to date). */
  record(uid: string | undefined, id: string, hashes: Required<PushHashes>): void {
    if (uid !== undefined) this.#last.set(uid, { id, hashes });
  }

  /** Forgets an object whose document is being deleted. */
  forget(uid: string | undefined): void {
    if (uid !== undefined) this.#last.delete(uid);
  }

  /** Objects remembered (for tests). */
  get size(): number {
    return this.#last.size;
  }
}

/**
 * Makes the gateway hold `desired`: CREATE when absent; UPDATE when the translation's hash
 * differs from the last one pushed, or the gateway's copy differs from what it held right after
 * that push (drift detection, whatever the gateway adds to what it stores). A translation that
 * differs from the last one pushed is written without reading the gateway's copy first when the
 * peer can update only what exists (`updateIfExists`). The last push is
 * what `memory` remembers of the object, else what its `status` says. `afterWrite` runs after a
 * write (APIs need a reload), before the gateway's copy is read back. Returns what was done and
 * the hashes to record.
 */
export async function pushDocument<T>(
  ops: DocumentOps<T>,
  desired: T,
  status: PushHashes,
  afterWrite?: () => Promise<void>,
  memory?: { pushes: PushMemory; uid: string | undefined; id: string },
): Promise<{ action?: 'Created' | 'Updated'; hashes: Required<PushHashes> }> {
  const desiredHash = hashOf(desired);
  const last = memory?.pushes.last(memory.uid, memory.id) ?? status;
  let held: T | undefined;
  let action: 'Created' | 'Updated' | undefined;
  if (
    ops.updateIfExists !== undefined &&
    last.latestCRDSpecHash !== undefined &&
    desiredHash !== last.latestCRDSpecHash
  ) {
    // A change of what was pushed before is written whatever the peer holds: not read first (one
    // call less between a change and its reload, issue 33 item 2).
    if (await ops.updateIfExists(desired)) action = 'Updated';
    else {
      await ops.create(desired);
      action = 'Created';
    }
  } else {
    held = await ops.get();
    if (!held) {
      await ops.create(desired);
      action = 'Created';
    } else if (desiredHash !== last.latestCRDSpecHash || hashOf(held) !== last.latestSvcSpecHash) {
      await ops.update(desired);
      action = 'Updated';
    }
  }
  if (action) {
    // Read back after the reload, not before: a gateway of several processes (`--workers`)
    // answers a read from a process that has not seen the write yet with its copy from before
    // (none after a create) until they all reload. Read before, that copy's hash became
    // latestSvcSpecHash, and the next reconcile (a resync, a new leader) took the difference for
    // drift and wrote the same document again (docs/design/operator-pushes.md).
    await afterWrite?.();
    held = await ops.get();
    // Retried (and written again): there is no copy to remember.
    if (!held) {
      throw new TransientError(
        'OP_ERR_GATEWAY_UNAVAILABLE',
        'the gateway answered 404 when reading back the document it had just stored',
      );
    }
  }
  const hashes = { latestCRDSpecHash: desiredHash, latestSvcSpecHash: hashOf(held) };
  memory?.pushes.record(memory.uid, memory.id, hashes);
  return { action, hashes };
}

/** What {@link finalizeInGateway} needs. */
export interface FinalizeDeps<T extends Reported<ReconcileStatus>> extends ReportDeps<T> {
  objects: Pick<SvcObjects<T>, 'patchStatus' | 'removeFinalizer'>;
  /** The controller's memory of pushes: the object is forgotten once its document is deleted. */
  pushes?: PushMemory;
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
  deps.pushes?.forget(obj.metadata.uid);
  await deps.objects.removeFinalizer(obj, opts.finalizer);
  return {};
}

/**
 * Where a document is being pushed: `status.pushedTo` once it is there. The URL is written as a
 * log line would be (`redactUrl`: a password in it is not), and compared in that form.
 */
export function pushedTo(
  client: ManagementClient,
  ref: NamespacedRef | undefined,
  namespace: string,
): PushedTo {
  return {
    url: redactUrl(client.url),
    ...(ref ? { contextRef: { name: ref.name, namespace: ref.namespace ?? namespace } } : {}),
  };
}

/**
 * When `contextRef` moved a document to another gateway, deletes it from the one it was pushed
 * to before (`before`, the `status.pushedTo` of then). That gateway is reached through the
 * context recorded then; when the context is gone or now points elsewhere, the document can't be
 * reached: a Warning event says so and it is left. A failed call is reported and thrown, to be
 * retried with backoff (the status keeps pointing at the former gateway until it is done).
 */
export async function leaveFormerGateway<T extends Reported<ReconcileStatus>>(
  obj: T,
  move: {
    before: PushedTo | undefined;
    here: PushedTo;
    /** `API <id>`, `policy <id>`: for messages. */
    what: string;
    /** Deletes the document from a gateway. */
    remove: (client: ManagementClient) => Promise<unknown>;
  },
  deps: Pick<ReportDeps<T>, 'events'> & { connections: Pick<Connections, 'resolve'>; log: Logger },
  fail: Fail,
): Promise<void> {
  const { before, here, what } = move;
  // A status written before URLs were redacted holds the URL as it was: compared redacted too.
  if (!before || redactUrl(before.url) === here.url) return;
  const there = await deps.connections.resolve(before.contextRef, obj.metadata.namespace);
  if (!there.ok || redactUrl(there.client.url) !== redactUrl(before.url)) {
    const why = there.ok ? `its OperatorContext now points at ${there.client.url}` : there.message;
    await deps.events.record(
      obj,
      'Warning',
      'LeftBehind',
      `${what} could not be deleted from ${before.url}, where it was pushed before: ${why}; delete it there by hand`,
    );
    return;
  }
  try {
    await move.remove(there.client);
  } catch (err) {
    await fail(
      gatewayFailure(err).reason,
      `${what} moved to ${here.url}, but deleting it from ${before.url} failed: ${errorMessage(err)}`,
      true,
    );
    throw err;
  }
  deps.log.info('deleted from its former gateway', { what, gateway: before.url });
}
