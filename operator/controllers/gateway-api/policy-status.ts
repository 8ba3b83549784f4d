/**
 * The status of an SvcRoutePolicy (the Gateway API PolicyStatus, GEP-2648): its `ancestors`, per
 * Gateway of ours it reaches, Accepted or Conflicted or Invalid, and per target not there,
 * TargetNotFound, computed by translate/gateway-api/policies.ts, the same module that decides
 * which policy the Gateway controller writes into the generated APIs. Entries of other
 * controllers are kept.
 */
import * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION, GROUP, VERSION } from '../../../schemas/common.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { splitKey } from '../../../lib/k8s/informer.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import type { Logger } from '../../../lib/log.ts';
import { GATEWAY_CONTROLLER, type RoutePolicyInput } from '../../translate/gateway-api.ts';
import {
  policyAncestors,
  type AncestorRef,
  type PolicyStatusContext,
} from '../../translate/gateway-api/policies.ts';
import type { ControllerEnv } from '../env.ts';
import { stamp } from './reconcile.ts';
import type { StoredCondition } from './types.ts';

/** An ancestor entry as stored. */
export interface StoredAncestor {
  ancestorRef: AncestorRef;
  controllerName: string;
  conditions: StoredCondition[];
}

/** An SvcRoutePolicy as read. */
export type RoutePolicyObject = RoutePolicyInput & {
  apiVersion?: string;
  kind?: string;
  metadata: RoutePolicyInput['metadata'] & { resourceVersion?: string };
  status?: { ancestors?: StoredAncestor[] };
};

/** What the policy reconciler needs; tests pass their own. */
export interface RoutePolicyDeps {
  read: (namespace: string, name: string) => RoutePolicyObject | undefined;
  context: () => PolicyStatusContext;
  /** Replaces the policy's `status.ancestors` (with its resourceVersion: a 409 retries). */
  patchAncestors: (policy: RoutePolicyObject, ancestors: StoredAncestor[]) => Promise<void>;
  now: () => Date;
  log: Logger;
}

const strip = (list: readonly StoredAncestor[]) =>
  list.map((a) => ({ ...a, conditions: a.conditions.map(({ lastTransitionTime: _t, ...c }) => c) }));

/** One policy: its ancestors as the translation sees them, written when they changed. */
export async function reconcileRoutePolicy(key: string, deps: RoutePolicyDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const policy = deps.read(namespace, name);
  if (!policy) return {};
  const old = policy.status?.ancestors ?? [];
  const others = old.filter((a) => a.controllerName !== GATEWAY_CONTROLLER);
  const now = deps.now();
  const mine: StoredAncestor[] = policyAncestors(policy, deps.context()).map((a) => ({
    ancestorRef: a.ancestorRef,
    controllerName: GATEWAY_CONTROLLER,
    conditions: stamp(
      a.conditions,
      old.find(
        (o) => o.controllerName === GATEWAY_CONTROLLER && isDeepStrictEqual(o.ancestorRef, a.ancestorRef),
      )?.conditions,
      policy.metadata.generation,
      now,
    ),
  }));
  const ancestors = [...others, ...mine].slice(0, 16);
  if (isDeepStrictEqual(strip(old), strip(ancestors))) return {};
  try {
    await deps.patchAncestors(policy, ancestors);
  } catch (err) {
    if (statusOf(err) === 409) return { requeueAfterMs: 250 };
    if (statusOf(err) === 404) return {};
    throw err;
  }
  deps.log.info('route policy status written', {
    kind: 'SvcRoutePolicy',
    object: key,
    accepted: mine.filter((a) => a.conditions[0]?.status === 'True').length,
    ancestors: mine.length,
  });
  return {};
}

/** The writer of `status.ancestors` over the API server. */
export function routePolicyWriter(env: Pick<ControllerEnv, 'kc'>): RoutePolicyDeps['patchAncestors'] {
  const custom = env.kc.makeApiClient(k8s.CustomObjectsApi);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  return async (policy, ancestors) => {
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: 'svcroutepolicies',
        namespace: policy.metadata.namespace,
        name: policy.metadata.name,
        body: {
          apiVersion: API_VERSION,
          kind: 'SvcRoutePolicy',
          metadata: { resourceVersion: policy.metadata.resourceVersion },
          status: { ancestors },
        },
        fieldManager: 'svc-operator',
      },
      merge,
    );
  };
}
