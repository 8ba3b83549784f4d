/**
 * Whether an ApiDefinition may serve the certificate of a Secret of another namespace
 * (`certificate_secret_names: [namespace/name]`): only an API generated for a Gateway (its
 * `svc.io/gateway` label, a Gateway of the API's namespace) one of whose listeners names that
 * Secret, allowed by a ReferenceGrant in the Secret's namespace (translate/gateway-api/grants.ts,
 * the rule the Gateway controller applies). Read from the API server when asked: the
 * ApiDefinition controller does not wait for the Gateway API CRDs, and a cluster without them
 * has no such grant.
 */
import * as k8s from '@kubernetes/client-node';
import { statusOf } from '../../../lib/k8s/client.ts';
import {
  GATEWAY_GROUP,
  GATEWAY_LABEL,
  gatewayServesSecret,
  type GatewayInput,
  type ReferenceGrantInput,
} from '../../translate/gateway-api.ts';
import { OTHER_NAMESPACE_REFUSAL } from '../../../schemas/rules/secret-refs.ts';
import type { OtherNamespaceSecret } from '../certificate-secrets.ts';
import type { ControllerEnv } from '../env.ts';

/** The reads the check needs: a Gateway, and the ReferenceGrants of a namespace. */
export interface SecretGrantReads {
  gateway: (namespace: string, name: string) => Promise<GatewayInput | undefined>;
  grants: (namespace: string) => Promise<readonly ReferenceGrantInput[]>;
}

/** The check for one API (its namespace and labels). */
export function otherNamespaceSecretOf(
  api: { metadata: { namespace: string; labels?: Record<string, string> } },
  reads: SecretGrantReads,
): OtherNamespaceSecret {
  return async ({ namespace, name }) => {
    const owner = api.metadata.labels?.[GATEWAY_LABEL];
    if (owner === undefined || owner === '') {
      return OTHER_NAMESPACE_REFUSAL;
    }
    const gateway = await reads.gateway(api.metadata.namespace, owner);
    if (gateway === undefined) return `Gateway ${api.metadata.namespace}/${owner} does not exist`;
    const secret = { namespace, name };
    return gatewayServesSecret(gateway, await reads.grants(namespace), secret)
      ? undefined
      : `no listener of Gateway ${api.metadata.namespace}/${owner} that a ReferenceGrant in namespace ${namespace} allows names it`;
  };
}

/** The reads over the API server (404: none, the CRD not installed included). */
export function secretGrantReads(env: Pick<ControllerEnv, 'kc'>): SecretGrantReads {
  const custom = env.kc.makeApiClient(k8s.CustomObjectsApi);
  const absent =
    <T>(fallback: T) =>
    (err: unknown): T => {
      if (statusOf(err) === 404) return fallback;
      throw err;
    };
  return {
    gateway: (namespace, name) =>
      (
        custom.getNamespacedCustomObject({
          group: GATEWAY_GROUP,
          version: 'v1',
          plural: 'gateways',
          namespace,
          name,
        }) as Promise<GatewayInput>
      ).catch(absent(undefined)),
    grants: async (namespace) =>
      (
        (await custom
          .listNamespacedCustomObject({
            group: GATEWAY_GROUP,
            version: 'v1beta1',
            plural: 'referencegrants',
            namespace,
          })
          .catch(absent({ items: [] }))) as { items: ReferenceGrantInput[] }
      ).items,
  };
}
