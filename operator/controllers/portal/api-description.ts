/**
 * APIDescription: a product of the dashboard's developer portal, its keys issued from the
 * SecurityPolicy `policyRef` names (resolved like an ApiKey's policies: `PolicyNotFound` until it
 * exists, `PolicyNotReady` until the dashboard holds it).
 */
import type * as k8s from '@kubernetes/client-node';
import type {
  APIDescription,
  APIDescriptionStatus,
  SecurityPolicy,
} from '../../../schemas/generated/kinds.ts';
import { API_DESCRIPTION_FINALIZER } from '../../../schemas/finalizers.ts';
import { apiDescriptionProblems } from '../../../schemas/rules/portal-kinds.ts';
import { resolveRef } from '../../../schemas/rules/references.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { derivedId } from '../../ids.ts';
import { portalProduct } from '../../translate/portal.ts';
import type { ControllerEnv } from '../env.ts';
import {
  contextWatch,
  isReady,
  portalWatch,
  reconcilePortal,
  referenceWatch,
  type Desired,
  type PortalDeps,
  type PortalKind,
  type PortalObject,
} from './reconcile.ts';

/** A stored APIDescription. */
export type APIDescriptionObject = PortalObject<APIDescription['spec'], APIDescriptionStatus>;

/** As much of a SecurityPolicy as a product reads: its ID and readiness. */
export interface PolicyView extends k8s.KubernetesObject {
  status?: Pick<NonNullable<SecurityPolicy['status']>, 'pol_id' | 'conditions'>;
}

/** What reconcileAPIDescription needs besides the shared flow's. */
export interface APIDescriptionDeps extends PortalDeps<APIDescriptionObject> {
  policy: (namespace: string, name: string) => PolicyView | undefined;
}

/** The SecurityPolicy a product names, resolved to its ID; or why not yet. */
function productOf(
  obj: APIDescriptionObject,
  id: string,
  deps: Pick<APIDescriptionDeps, 'policy'>,
): Desired<APIDescriptionStatus> {
  const ref = resolveRef(obj.spec.policyRef, obj.metadata.namespace);
  if (ref === undefined)
    return { doc: portalProduct(id, obj.spec, undefined), status: { policyId: undefined } };
  const p = deps.policy(ref.namespace, ref.name);
  const policy = `SecurityPolicy ${ref.namespace}/${ref.name}`;
  if (p === undefined || p.metadata?.deletionTimestamp !== undefined) {
    return {
      reason: 'PolicyNotFound',
      message: `spec.policyRef: ${policy} does not exist: the product is published once it does`,
    };
  }
  const polId = p.status?.pol_id;
  if (polId === undefined || !isReady(p)) {
    return {
      reason: 'PolicyNotReady',
      message: `spec.policyRef: ${policy} is not Ready yet (not held by the dashboard): the product is published once it is`,
    };
  }
  return { doc: portalProduct(id, obj.spec, polId), status: { policyId: polId } };
}

/** Makes the dashboard's portal hold the product an APIDescription describes. */
export function reconcileAPIDescription(key: string, deps: APIDescriptionDeps): Promise<WorkResult> {
  const kind: PortalKind<APIDescriptionObject> = {
    kind: 'APIDescription',
    finalizer: API_DESCRIPTION_FINALIZER,
    collection: 'products',
    id: (o) => derivedId(o.metadata.namespace, o.metadata.name),
    problems: (o) => apiDescriptionProblems(o.spec),
    desired: (o, id) => productOf(o, id, deps),
  };
  return reconcilePortal(key, kind, deps);
}

/**
 * The APIDescription controller: products are reconciled when they change, when the policy they
 * name appears, gets its ID, becomes Ready or goes, and when their OperatorContext changes.
 */
export function apiDescriptionController(env: ControllerEnv): ControllerSpec {
  const { spec, informer: descriptions, deps } = portalWatch<APIDescriptionObject>(env, 'APIDescription');
  const policies = referenceWatch<APIDescriptionObject, PolicyView>(
    env,
    descriptions,
    'SecurityPolicy',
    (d) => {
      const ref = resolveRef(d.spec.policyRef, d.metadata.namespace);
      return ref === undefined ? [] : [`${ref.namespace}/${ref.name}`];
    },
    (p) => p.status?.pol_id,
  );
  return {
    name: 'apidescription',
    watch: spec,
    workers: 4,
    reconcile: (key) =>
      reconcileAPIDescription(key, {
        ...deps,
        policy: (namespace, name) => policies.informer.get(namespace, name),
      }),
    watches: [policies.watch, contextWatch(env, descriptions)],
  };
}
