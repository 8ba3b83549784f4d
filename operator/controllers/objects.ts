/**
 * The stored objects the controllers share, as they read them. Apart from the controllers so
 * that template.ts, ingress.ts and the API controllers import it rather than each other (no
 * import circle: docs/design/imports.md).
 */
import type * as k8s from '@kubernetes/client-node';
import type {
  ApiDefinition,
  ApiStatus,
  OasApiStatus,
  SecurityPolicySpec,
  SubGraph,
  SubGraphStatus,
  SuperGraph,
  SuperGraphStatus,
  SvcOasApiDefinition,
  SvcStreamsApiDefinition,
} from '../../schemas/generated/kinds.ts';
import type { SvcObject } from '../../lib/k8s/objects.ts';

/** An ApiDefinition with the metadata every stored object has. */
export type ApiObject = ApiDefinition & SvcObject<ApiDefinition['spec'], ApiStatus>;

/** A SecurityPolicy, as much of it as the API controllers read. */
export interface PolicyView extends k8s.KubernetesObject {
  spec?: Pick<SecurityPolicySpec, 'id' | 'access_rights_array'>;
}

/**
 * An SvcOasApiDefinition or an SvcStreamsApiDefinition (one reconciler serves both), with the
 * metadata every stored object has.
 */
export type OasApiObject =
  | (SvcOasApiDefinition & SvcObject<SvcOasApiDefinition['spec'], OasApiStatus>)
  | (SvcStreamsApiDefinition & SvcObject<SvcStreamsApiDefinition['spec'], OasApiStatus>);

/** A SubGraph with the metadata every stored object has. */
export type SubGraphObject = SubGraph & SvcObject<SubGraph['spec'], SubGraphStatus>;

/** A SuperGraph with the metadata every stored object has. */
export type SuperGraphObject = SuperGraph & SvcObject<SuperGraph['spec'], SuperGraphStatus>;
