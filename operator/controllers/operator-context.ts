import type * as k8s from '@kubernetes/client-node';
import type { OperatorContext, OperatorContextStatus } from '../../schemas/generated/kinds.ts';
import type { EventRecorder } from '../../lib/k8s/events.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition, type SvcObject, type SvcObjects } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import type { Connections } from '../connections.ts';
import { contextKeyOf, secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { byContext } from './indexes.ts';
import { CONTEXT_FINALIZER } from '../../schemas/finalizers.ts';
import { effectiveSecretRef } from '../../schemas/rules/earlier-names.ts';

/** The finalizer names live in schemas/, which the webhook reads too. */
export { CONTEXT_FINALIZER };

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
  objects: Pick<SvcObjects<ContextObject>, 'get' | 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'contextConnection'>;
  events: Pick<EventRecorder, 'record'>;
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
  // The Secret's watch queues the context when it appears or changes; a Secret outside the
  // watched namespaces is not seen, so a broken context is also checked again now and then.
  return conn.ok ? {} : { requeueAfterMs: 60_000 };
}

/** Keys of the contexts whose `secretRef` names this Secret. */
export function contextsOfSecret(
  contexts: readonly k8s.KubernetesObject[],
  secret: k8s.KubernetesObject | undefined,
): string[] {
  if (!secret?.metadata) return [];
  const key = objectKey(secret);
  return contexts
    .filter((c) => {
      const ref = effectiveSecretRef((c as ContextObject).spec);
      return ref !== undefined && `${ref.namespace ?? c.metadata?.namespace ?? ''}/${ref.name}` === key;
    })
    .map((c) => objectKey(c));
}

/**
 * The OperatorContext controller: a context is reconciled when it changes, when a resource
 * starts or stops naming it in `contextRef` (or goes), and when the Secret of its `secretRef`
 * appears, changes or goes. `objects` is shared with the connections,
 * which read contexts too.
 */
export function operatorContextController(
  env: ControllerEnv,
  objects: SvcObjects<ContextObject>,
): ControllerSpec {
  const users = (
    ['ApiDefinition', 'SvcOasApiDefinition', 'SvcStreamsApiDefinition', 'SecurityPolicy'] as const
  ).map((kind) => {
    const informer = env.manager.informer(watchOf(env, kind));
    return { kind, watch: watchOf(env, kind), informer, ofContext: byContext(informer) };
  });
  const contexts = env.manager.informer(watchOf(env, 'OperatorContext'));
  return {
    name: 'operatorcontext',
    watch: watchOf(env, 'OperatorContext'),
    reconcile: (key) =>
      reconcileOperatorContext(key, {
        objects,
        connections: env.connections,
        events: env.events,
        usersOf: (namespace, name): ContextUser[] =>
          users.flatMap(({ kind, ofContext }) =>
            ofContext(`${namespace}/${name}`).map((o) => ({
              kind,
              name: o.metadata?.name ?? '',
              namespace: o.metadata?.namespace ?? '',
            })),
          ),
        now: env.now,
        log: env.log,
      }),
    watches: [
      ...users.map(({ watch }) => ({
        watch,
        map: (obj: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, obj, old, contextKeyOf)
            ? [...new Set([...contextKeyOf(obj), ...contextKeyOf(old)])]
            : [],
      })),
      {
        // A Secret that appears, changes or goes queues the contexts that read it.
        watch: secretWatch(env),
        map: (secret: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, secret, old, (s) => (s as k8s.V1Secret).data)
            ? contextsOfSecret(contexts.list(), secret)
            : [],
      },
    ],
  };
}
