/**
 * The ingress controller's writes to the cluster: generated ApiDefinitions (create, replace,
 * delete) and Ingresses (finalizer and API list in one merge patch, the finalizer's removal,
 * the load balancer status). Each tolerates what a concurrent writer leaves: 409 on create,
 * 404 on delete.
 */
import * as k8s from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../../schemas/common.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import type { ControllerEnv } from '../env.ts';
import { patchOutFinalizer } from '../finalizer-patch.ts';
import {
  APIS_ANNOTATION,
  INGRESS_FINALIZER,
  type GeneratedApiWriter,
  type IngressObject,
  type IngressWriter,
} from './types.ts';

/** The writers over the API server, for ApiDefinitions of resource `plural`. */
export function clusterWriters(
  env: Pick<ControllerEnv, 'kc'>,
  plural: string,
): { apis: GeneratedApiWriter; ingresses: IngressWriter } {
  const networking = env.kc.makeApiClient(k8s.NetworkingV1Api);
  const custom = env.kc.makeApiClient(k8s.CustomObjectsApi);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const collection = (namespace: string) => ({ group: GROUP, version: VERSION, plural, namespace });
  const ref = (namespace: string, name: string) => ({ ...collection(namespace), name });
  const patchIngress = async (obj: IngressObject, body: object): Promise<IngressObject> =>
    (await networking.patchNamespacedIngress(
      { namespace: obj.metadata.namespace, name: obj.metadata.name, body, fieldManager: 'svc-operator' },
      merge,
    )) as IngressObject;
  return {
    apis: {
      create: async (obj) => {
        try {
          await custom.createNamespacedCustomObject({
            ...collection(obj.metadata.namespace),
            body: obj,
            fieldManager: 'svc-operator',
          });
          return true;
        } catch (err) {
          if (statusOf(err) === 409) return false;
          throw err;
        }
      },
      replace: async (obj) => {
        await custom.replaceNamespacedCustomObject({
          ...ref(obj.metadata.namespace, obj.metadata.name),
          body: obj,
          fieldManager: 'svc-operator',
        });
      },
      delete: async (namespace, name) => {
        try {
          await custom.deleteNamespacedCustomObject(ref(namespace, name));
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
        }
      },
    },
    ingresses: {
      prepare: async (obj, list) => {
        const current = obj.metadata.finalizers ?? [];
        return patchIngress(obj, {
          metadata: {
            ...(current.includes(INGRESS_FINALIZER) ? {} : { finalizers: [...current, INGRESS_FINALIZER] }),
            annotations: { [APIS_ANNOTATION]: list ?? null },
            resourceVersion: obj.metadata.resourceVersion,
          },
        });
      },
      removeFinalizer: (obj) => patchOutFinalizer(obj, INGRESS_FINALIZER, patchIngress),
      patchLoadBalancer: async (obj, ingress) => {
        await networking.patchNamespacedIngressStatus(
          {
            namespace: obj.metadata.namespace,
            name: obj.metadata.name,
            body: { status: { loadBalancer: { ingress } } },
            fieldManager: 'svc-operator',
          },
          merge,
        );
      },
    },
  };
}
