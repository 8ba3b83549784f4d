import type { ApiDefinition, ApiStatus, NamespacedRef } from '../../schemas/generated/kinds.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition, type SvcObject, type SvcObjects } from '../../lib/k8s/objects.ts';
import { splitKey } from '../../lib/k8s/informer.ts';
import { InputError, SvcError, errorMessage } from '../../lib/errors.ts';
import { derivedId, hashOf } from '../ids.ts';
import type { Connections, Resolved } from '../connections.ts';
import { translateApiDefinition } from '../translate/api-definition.ts';

/** The finalizer that keeps an ApiDefinition until its API is gone from the gateway. */
export const API_FINALIZER = 'finalizers.svc.svc.io/apidefinition';

/** An ApiDefinition with the metadata every stored object has. */
export type ApiObject = ApiDefinition & SvcObject<ApiDefinition['spec'], ApiStatus>;

/** What the reconciler needs; tests pass their own. */
export interface ApiDefinitionDeps {
  /** Reads the object; the informer cache in production (a write that raced it gets a 409 and a retry). */
  read: (namespace: string, name: string) => Promise<ApiObject | undefined>;
  objects: SvcObjects<ApiObject>;
  connections: Connections;
  events: EventRecorder;
  /** Policy ID of a SecurityPolicy reference. */
  policyId: (ref: Required<NamespacedRef>) => string;
  now: () => Date;
  log: Logger;
}

type Transaction = NonNullable<ApiStatus['latestTransaction']>;

/**
 * Makes the gateway hold the API an ApiDefinition describes: CREATE when absent, UPDATE when
 * the translation's hash differs from the last push or the gateway's copy differs from what it
 * held after that push (drift), DELETE through the finalizer. Writes status once, at the end,
 * only when it changed.
 */
export async function reconcileApiDefinition(key: string, deps: ApiDefinitionDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const apiId = obj.spec.api_id ?? derivedId(namespace, name);
  const log = deps.log.child({ kind: 'ApiDefinition', key, apiId });
  const resolved = await deps.connections.resolve(obj.spec.contextRef, namespace);

  if (obj.metadata.deletionTimestamp) return finalize(obj, apiId, resolved, deps, log);
  const current = await deps.objects.ensureFinalizer(obj, API_FINALIZER);
  const old = current.status ?? {};
  const status: ApiStatus = {
    ...old,
    api_id: apiId,
    listen_path: current.spec.proxy.listen_path,
    observedGeneration: current.metadata.generation,
  };

  if (!resolved.ok) {
    await fail(current, status, resolved.reason, resolved.message, deps);
    // A missing context is queued again when it appears; a broken one may be fixed in its Secret.
    return resolved.reason === 'ContextNotFound' ? {} : { requeueAfterMs: 60_000 };
  }

  const desired = translateApiDefinition(current, {
    apiId,
    orgId: resolved.conn.org,
    policyId: deps.policyId,
  });
  const desiredHash = hashOf(desired);
  const client = resolved.client;
  let action: 'Created' | 'Updated' | undefined;
  try {
    let held = await client.getApi(apiId);
    if (!held) {
      await client.createApi(desired);
      action = 'Created';
    } else if (desiredHash !== old.latestCRDSpecHash || hashOf(held) !== old.latestSvcSpecHash) {
      await client.updateApi(apiId, desired);
      action = 'Updated';
    }
    if (action) {
      held = await client.getApi(apiId);
      await client.reload();
      log.info(action === 'Created' ? 'api created' : 'api updated', { gateway: client.url });
    }
    status.latestCRDSpecHash = desiredHash;
    status.latestSvcSpecHash = hashOf(held);
  } catch (err) {
    const rejected = err instanceof InputError;
    const unauthorized = err instanceof SvcError && (err.status === 401 || err.status === 403);
    const reason = rejected ? 'GatewayRejected' : unauthorized ? 'GatewayUnauthorized' : 'GatewayUnavailable';
    await fail(current, status, reason, errorMessage(err), deps);
    // A refused definition needs a spec change, which queues the object again; anything else is retried.
    if (rejected) return {};
    throw err;
  }

  if (action || old.latestTransaction?.status === 'Failed') {
    status.latestTransaction = transaction('Successful', deps.now());
  }
  status.conditions = setCondition(
    old.conditions,
    {
      type: 'Ready',
      status: 'True',
      reason: 'Synced',
      message: `API ${apiId} is served by ${client.url}`,
      observedGeneration: current.metadata.generation,
    },
    deps.now(),
  );
  await deps.objects.patchStatus(current, status);
  if (action)
    await deps.events.record(
      current,
      'Normal',
      action,
      `API ${apiId} ${action.toLowerCase()} in ${client.url}`,
    );
  return {};
}

async function finalize(
  obj: ApiObject,
  apiId: string,
  resolved: Resolved,
  deps: ApiDefinitionDeps,
  log: Logger,
): Promise<WorkResult> {
  if (!obj.metadata.finalizers?.includes(API_FINALIZER)) return {};
  if (!resolved.ok) {
    // Without a connection the API can't be deleted; keep the finalizer and say why.
    await fail(
      obj,
      { ...obj.status },
      resolved.reason,
      `cannot delete API ${apiId}: ${resolved.message}`,
      deps,
    );
    return { requeueAfterMs: 30_000 };
  }
  try {
    if (await resolved.client.deleteApi(apiId)) await resolved.client.reload();
  } catch (err) {
    await fail(
      obj,
      { ...obj.status },
      'GatewayUnavailable',
      `cannot delete API ${apiId}: ${errorMessage(err)}`,
      deps,
    );
    throw err;
  }
  log.info('api deleted', { gateway: resolved.client.url });
  await deps.events.record(obj, 'Normal', 'Deleted', `API ${apiId} deleted from ${resolved.client.url}`);
  await deps.objects.removeFinalizer(obj, API_FINALIZER);
  return {};
}

async function fail(
  obj: ApiObject,
  status: ApiStatus,
  reason: string,
  message: string,
  deps: ApiDefinitionDeps,
): Promise<void> {
  const repeated = obj.status?.latestTransaction?.error === message;
  const next: ApiStatus = {
    ...status,
    latestTransaction:
      repeated && obj.status?.latestTransaction
        ? obj.status.latestTransaction
        : transaction('Failed', deps.now(), message),
    conditions: setCondition(
      obj.status?.conditions,
      { type: 'Ready', status: 'False', reason, message, observedGeneration: obj.metadata.generation },
      deps.now(),
    ),
  };
  await deps.objects.patchStatus(obj, next);
  if (!repeated) void deps.events.record(obj, 'Warning', reason, message);
}

function transaction(status: Transaction['status'], now: Date, error?: string): Transaction {
  return {
    time: now.toISOString().replace(/\.\d+Z$/, 'Z'),
    status,
    ...(error === undefined ? {} : { error }),
  };
}
