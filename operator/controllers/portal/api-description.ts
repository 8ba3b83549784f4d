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
import { portalProduct } from '../../translate/portal.ts';
import type { ControllerEnv } from '../env.ts';
import {
  portalIdOf,
  reconcilePortal,
  referencedId,
  referringController,
  type Desired,
  type PortalDeps,
  type PortalKind,
  type PortalObject,
  type Reference,
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

/** The SecurityPolicy a product names (`policyRef`): its keys are issued from it. */
const POLICY: Reference<APIDescriptionObject, PolicyView> = {
  kind: 'SecurityPolicy',
  reason: 'Policy',
  heldBy: 'the dashboard',
  refsOf: (d) => {
    const ref = resolveRef(d.spec.policyRef, d.metadata.namespace);
    return ref === undefined ? [] : [`${ref.namespace}/${ref.name}`];
  },
  idOf: (p) => p.status?.pol_id,
};

/** The SecurityPolicy a product names, resolved to its ID; or why not yet. */
function productOf(
  obj: APIDescriptionObject,
  id: string,
  deps: Pick<APIDescriptionDeps, 'policy'>,
): Desired<APIDescriptionStatus> {
  const ref = resolveRef(obj.spec.policyRef, obj.metadata.namespace);
  if (ref === undefined)
    return { doc: portalProduct(id, obj.spec, undefined), status: { policyId: undefined } };
  const policy = referencedId(POLICY, deps.policy, ref, 'spec.policyRef', 'the product');
  if (!('id' in policy)) return policy;
  return { doc: portalProduct(id, obj.spec, policy.id), status: { policyId: policy.id } };
}

/** APIDescription, as the shared flow reconciles it. */
const PRODUCT: PortalKind<APIDescriptionObject, APIDescriptionDeps> = {
  kind: 'APIDescription',
  finalizer: API_DESCRIPTION_FINALIZER,
  collection: 'products',
  id: portalIdOf,
  problems: (o) => apiDescriptionProblems(o.spec),
  desired: productOf,
};

/** Makes the dashboard's portal hold the product an APIDescription describes. */
export function reconcileAPIDescription(key: string, deps: APIDescriptionDeps): Promise<WorkResult> {
  return reconcilePortal(key, PRODUCT, deps);
}

/**
 * The APIDescription controller: products are reconciled when they change, when the policy they
 * name appears, gets its ID, becomes Ready or goes, and when their OperatorContext changes.
 */
export function apiDescriptionController(env: ControllerEnv): ControllerSpec {
  return referringController(
    env,
    PRODUCT,
    { name: 'apidescription', workers: 4 },
    POLICY,
    (deps, policy) => ({
      ...deps,
      policy,
    }),
  );
}
