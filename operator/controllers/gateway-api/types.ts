/**
 * What the parts of the Gateway API controllers share: names, the objects as they read them, the
 * reconcilers' dependencies (which tests replace) and the settings.
 */
import type { Logger } from '../../../lib/log.ts';
import type {
  Condition,
  GatewayInput,
  GatewayTranslationContext,
  HttpRouteInput,
  ListenerStatus,
  ParentRef,
} from '../../translate/gateway-api.ts';
import type { GeneratedApiWriter } from '../ingress/types.ts';
import type { ApiObject } from '../objects.ts';

/** The finalizer that keeps a Gateway until its generated ApiDefinitions are deleted. */
export const GATEWAY_FINALIZER = 'finalizers.svc.svc.io/gateway';
/** Annotation on a generated ApiDefinition: the hash of the spec the Gateway controller wrote. */
export const GATEWAY_SPEC_HASH_ANNOTATION = 'svc.io/gateway-spec-hash';

/** A status condition as stored (the spec's metav1.Condition). */
export interface StoredCondition extends Condition {
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/** A route's status for one parent, as stored. */
export interface StoredParentStatus {
  parentRef: ParentRef;
  controllerName: string;
  conditions: StoredCondition[];
}

/** A GatewayClass as read. */
export interface GatewayClassObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: Date | string;
  };
  spec: { controllerName: string };
  status?: { conditions?: StoredCondition[] };
}

/** A Gateway as read. */
export type GatewayObject = GatewayInput & {
  apiVersion?: string;
  kind?: string;
  metadata: GatewayInput['metadata'] & {
    uid?: string;
    resourceVersion?: string;
    finalizers?: string[];
    deletionTimestamp?: Date | string;
  };
  status?: {
    conditions?: StoredCondition[];
    listeners?: (Omit<ListenerStatus, 'conditions'> & { conditions: StoredCondition[] })[];
    addresses?: { type: string; value: string }[];
  };
};

/** An HTTPRoute as read. */
export type HttpRouteObject = HttpRouteInput & {
  metadata: HttpRouteInput['metadata'] & { resourceVersion?: string };
  status?: { parents?: StoredParentStatus[] };
};

/** The cluster writes of the Gateway controller. */
export interface GatewayWriter {
  /** Adds the finalizer (with the object's resourceVersion); returns the updated object. */
  addFinalizer: (gw: GatewayObject) => Promise<GatewayObject>;
  removeFinalizer: (gw: GatewayObject) => Promise<void>;
  patchStatus: (gw: GatewayObject, status: NonNullable<GatewayObject['status']>) => Promise<void>;
  /** Replaces a route's `status.parents` (with its resourceVersion: a 409 retries). */
  patchRouteParents: (route: HttpRouteObject, parents: StoredParentStatus[]) => Promise<void>;
  patchClassStatus: (cls: GatewayClassObject, conditions: StoredCondition[]) => Promise<void>;
}

/** What the Gateway reconciler needs; tests pass their own. */
export interface GatewayDeps {
  read: (namespace: string, name: string) => GatewayObject | undefined;
  gatewayClass: (name: string) => GatewayClassObject | undefined;
  /**
   * The HTTPRoutes whose parentRefs name the Gateway `namespace/name`, and those whose status
   * still holds our parent status for it (a route detached since).
   */
  routes: (gatewayKey: string) => readonly HttpRouteObject[];
  /** The cluster state translation reads. */
  context: () => GatewayTranslationContext;
  /** The ApiDefinitions generated for a Gateway (labelled with its name). */
  generated: (gw: GatewayObject) => readonly ApiObject[];
  apis: GeneratedApiWriter;
  writer: GatewayWriter;
  /** The addresses for `status.addresses` (shared addresses). */
  addresses: () => { type: string; value: string }[];
  /** Per-Gateway addresses (addresses.ts): each Gateway's own Service; absent: shared. */
  ownAddress?: OwnAddresses;
  now: () => Date;
  log: Logger;
}

/** The gateway ports allocated to Gateways (first-last, both in): per-Gateway addresses. */
export interface PortRange {
  first: number;
  last: number;
}

/** What a Gateway's own address gives its reconcile (per-Gateway addresses, own-address.ts). */
export interface OwnAddress {
  /** Listener port -> the gateway port its APIs listen on (translate's `ownPorts`). */
  ports: Record<number, number>;
  /** Listener ports left without a gateway port (the range is full). */
  full: number[];
  /** `status.addresses`: the Service's ClusterIPs (none yet: not Programmed). */
  addresses: { type: string; value: string }[];
  /** Why the Gateway has no Service of its own; undefined: it has. */
  problem?: string;
}

/** A Gateway's own address: made to match (`ensure`), and deleted with it (`release`). */
export interface OwnAddresses {
  ensure: (gw: GatewayObject) => Promise<OwnAddress>;
  release: (gw: GatewayObject) => Promise<void>;
}

/** Settings of the Gateway API controllers (operator/config.ts). */
export interface GatewayApiSettings {
  /** The operator's management URL (`SVC_URL`): its port is the gateway's own. */
  managementUrl: string;
  /** A fixed address for `status.addresses` (IPs or host names, comma-separated); empty: none. */
  address: string;
  /**
   * Per-Gateway addresses (SVC_GATEWAY_API_ADDRESSES=per-gateway): the gateway ports allocated to
   * Gateways, and the gateway's Service whose endpoints each Gateway's Service leads to. Absent:
   * every Gateway shares the gateway's ports and `address`.
   */
  perGateway?: { range: PortRange; gatewayService: { namespace: string; name: string } };
}
