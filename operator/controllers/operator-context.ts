import type { OperatorContext, OperatorContextStatus } from '../../schemas/generated/kinds.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition, type SvcObject, type SvcObjects } from '../../lib/k8s/objects.ts';
import { splitKey } from '../../lib/k8s/informer.ts';
import type { Connections } from '../connections.ts';

/** The finalizer that keeps an OperatorContext while resources still use it. */
export const CONTEXT_FINALIZER = 'finalizers.svc.svc.io/operatorcontext';

/** An OperatorContext with the metadata every stored object has. */
export type ContextObject = OperatorContext & SvcObject<OperatorContext['spec'], OperatorContextStatus>;

/** A resource that uses a context. */
export interface ContextUser {
  kind: 'ApiDefinition' | 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition' | 'SecurityPolicy';
  name: string;
  namespace: string;
}

/** What the reconciler needs. */
export interface OperatorContextDeps {
  objects: SvcObjects<ContextObject>;
  connections: Connections;
  events: EventRecorder;
  /** Resources whose contextRef names this context, from the informer caches. */
  usersOf: (namespace: string, name: string) => ContextUser[];
  now: () => Date;
  log: Logger;
}

/**
 * Keeps an OperatorContext's status listing the resources that use it, checks that its
 * settings resolve (Secret included), and, through its finalizer, refuses to let it go while
 * any resource still refers to it.
 */
export async function reconcileOperatorContext(key: string, deps: OperatorContextDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.objects.get(namespace, name);
  if (!obj) return {};
  const users = deps.usersOf(namespace, name);
  const status: OperatorContextStatus = {
    ...obj.status,
    linked_apis: users
      .filter((u) => u.kind !== 'SecurityPolicy')
      .map((u) => ({
        kind: u.kind as Exclude<ContextUser['kind'], 'SecurityPolicy'>,
        name: u.name,
        namespace: u.namespace,
      })),
    linked_security_policies: users
      .filter((u) => u.kind === 'SecurityPolicy')
      .map((u) => ({ name: u.name, namespace: u.namespace })),
    observedGeneration: obj.metadata.generation,
  };

  if (obj.metadata.deletionTimestamp) {
    if (!obj.metadata.finalizers?.includes(CONTEXT_FINALIZER)) return {};
    if (users.length > 0) {
      const list = users.map((u) => `${u.kind} ${u.namespace}/${u.name}`).join(', ');
      const message = `still used by ${list}; remove their contextRef or delete them first`;
      status.conditions = setCondition(
        obj.status?.conditions,
        {
          type: 'Ready',
          status: 'False',
          reason: 'InUse',
          message,
          observedGeneration: obj.metadata.generation,
        },
        deps.now(),
      );
      if (await deps.objects.patchStatus(obj, status))
        await deps.events.record(obj, 'Warning', 'InUse', message);
      // A user that goes away queues this context again (the API informers map to it).
      return {};
    }
    await deps.objects.removeFinalizer(obj, CONTEXT_FINALIZER);
    return {};
  }

  const current = await deps.objects.ensureFinalizer(obj, CONTEXT_FINALIZER);
  const conn = await deps.connections.contextConnection(current);
  status.conditions = setCondition(
    current.status?.conditions,
    conn.ok
      ? {
          type: 'Ready',
          status: 'True',
          reason: 'Resolved',
          message: `mode ${conn.conn.mode} at ${conn.conn.url}`,
          observedGeneration: current.metadata.generation,
        }
      : {
          type: 'Ready',
          status: 'False',
          reason: conn.reason,
          message: conn.message,
          observedGeneration: current.metadata.generation,
        },
    deps.now(),
  );
  if ((await deps.objects.patchStatus(current, status)) && !conn.ok) {
    await deps.events.record(current, 'Warning', conn.reason, conn.message);
  }
  // The Secret is not watched: check it again now and then.
  return conn.ok ? {} : { requeueAfterMs: 60_000 };
}
