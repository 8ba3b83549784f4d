/**
 * The Gateway API controllers' writes to the cluster: a Gateway's finalizer and status, an
 * HTTPRoute's `status.parents`, a GatewayClass's conditions. Merge patches, with the object's
 * resourceVersion where a concurrent writer must not be overwritten.
 */
import * as k8s from '@kubernetes/client-node';
import { GATEWAY_GROUP } from '../../translate/gateway-api.ts';
import type { ControllerEnv } from '../env.ts';
import { patchOutFinalizer } from '../finalizer-patch.ts';
import { GATEWAY_FINALIZER, type GatewayObject, type GatewayWriter } from './types.ts';

/** The writer over the API server. */
export function gatewayWriter(env: Pick<ControllerEnv, 'kc'>): GatewayWriter {
  const custom = env.kc.makeApiClient(k8s.CustomObjectsApi);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const ref = (plural: string, namespace: string, name: string) => ({
    group: GATEWAY_GROUP,
    version: 'v1',
    plural,
    namespace,
    name,
  });
  const patchGateway = async (gw: GatewayObject, body: object): Promise<GatewayObject> =>
    (await custom.patchNamespacedCustomObject(
      { ...ref('gateways', gw.metadata.namespace, gw.metadata.name), body, fieldManager: 'svc-operator' },
      merge,
    )) as GatewayObject;
  return {
    addFinalizer: (gw) =>
      patchGateway(gw, {
        metadata: {
          finalizers: [...(gw.metadata.finalizers ?? []), GATEWAY_FINALIZER],
          resourceVersion: gw.metadata.resourceVersion,
        },
      }),
    removeFinalizer: (gw) => patchOutFinalizer(gw, GATEWAY_FINALIZER, patchGateway),
    patchStatus: async (gw, status) => {
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...ref('gateways', gw.metadata.namespace, gw.metadata.name),
          body: { status },
          fieldManager: 'svc-operator',
        },
        merge,
      );
    },
    patchRouteParents: async (route, parents) => {
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...ref('httproutes', route.metadata.namespace, route.metadata.name),
          body: { metadata: { resourceVersion: route.metadata.resourceVersion }, status: { parents } },
          fieldManager: 'svc-operator',
        },
        merge,
      );
    },
    patchClassStatus: async (cls, conditions) => {
      await custom.patchClusterCustomObjectStatus(
        {
          group: GATEWAY_GROUP,
          version: 'v1',
          plural: 'gatewayclasses',
          name: cls.metadata.name,
          body: { status: { conditions } },
          fieldManager: 'svc-operator',
        },
        merge,
      );
    },
  };
}
