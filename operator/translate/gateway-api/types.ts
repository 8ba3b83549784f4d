/**
 * The Gateway API objects as translation reads them (gateway.networking.k8s.io/v1, standard
 * channel), the cluster state they are translated against, and what translation gives back:
 * the ApiDefinitions that serve a Gateway and the status conditions of the Gateway, its
 * listeners and each route's parent.
 */
import type { ApiDefinitionSpec } from '../../../schemas/generated/kinds.ts';
import type { RoutePolicySpecInput } from '../../../schemas/rules/route-policy.ts';

/** The API group of the Gateway API kinds. */
export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** `spec.controllerName` of the GatewayClasses svc serves. */
export const GATEWAY_CONTROLLER = 'svc.io/gateway-controller';
/** Label naming the Gateway a generated ApiDefinition belongs to (the admission rule's too). */
export { GATEWAY_LABEL } from '../../../schemas/rules/secret-refs.ts';

/** Object metadata translation reads. */
export interface Meta {
  name: string;
  namespace: string;
  generation?: number;
  creationTimestamp?: string | Date;
  labels?: Record<string, string>;
}

/** A listener of a Gateway. */
export interface ListenerInput {
  name: string;
  hostname?: string;
  port: number;
  protocol: string;
  tls?: {
    mode?: string;
    certificateRefs?: { group?: string; kind?: string; name: string; namespace?: string }[];
  };
  allowedRoutes?: {
    namespaces?: {
      from?: 'All' | 'Same' | 'Selector';
      selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    };
    kinds?: { group?: string; kind: string }[];
  };
}

/** A Gateway. */
export interface GatewayInput {
  metadata: Meta;
  spec: { gatewayClassName: string; listeners: ListenerInput[]; addresses?: unknown[] };
}

/** A reference from a route to its parent. */
export interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

/** A string match of a header or query parameter. */
export interface ValueMatch {
  type?: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

/** A match of an HTTPRoute rule. */
export interface RouteMatch {
  path?: { type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; value?: string };
  headers?: ValueMatch[];
  queryParams?: ValueMatch[];
  method?: string;
}

/** A header modifier filter. */
export interface HeaderModifier {
  set?: { name: string; value: string }[];
  add?: { name: string; value: string }[];
  remove?: string[];
}

/** A path modifier of a redirect or rewrite. */
export interface PathModifier {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}

/** A filter of a rule or a backend. */
export interface RouteFilter {
  type: string;
  requestHeaderModifier?: HeaderModifier;
  responseHeaderModifier?: HeaderModifier;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    path?: PathModifier;
    port?: number;
    statusCode?: number;
  };
  urlRewrite?: { hostname?: string; path?: PathModifier };
  requestMirror?: {
    backendRef: BackendRef;
    /** The share of requests mirrored (extended, experimental channel). */
    percent?: number;
    fraction?: { numerator: number; denominator?: number };
  };
  extensionRef?: unknown;
}

/** A backend of a rule. */
export interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
  filters?: RouteFilter[];
}

/** A rule of an HTTPRoute. */
export interface RouteRule {
  name?: string;
  matches?: RouteMatch[];
  filters?: RouteFilter[];
  backendRefs?: BackendRef[];
  timeouts?: { request?: string; backendRequest?: string };
}

/** An HTTPRoute. */
export interface HttpRouteInput {
  metadata: Meta;
  spec: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: RouteRule[] };
}

/** A ReferenceGrant. */
export interface ReferenceGrantInput {
  metadata: Meta;
  spec: {
    from: { group: string; kind: string; namespace: string }[];
    to: { group: string; kind: string; name?: string }[];
  };
}

/** A target of a policy. */
export interface PolicyTargetRef {
  group: string;
  /** HTTPRoute or Gateway (others are TargetNotFound: read without the webhook). */
  kind: string;
  name: string;
  sectionName?: string;
}

/** An SvcRoutePolicy as translation reads it. */
export interface RoutePolicyInput {
  metadata: Meta;
  spec: RoutePolicySpecInput & { targetRefs: PolicyTargetRef[] };
}

/** A Service, as much of it as translation reads. */
export interface ServiceInput {
  spec?: {
    type?: string;
    externalName?: string;
    ports?: {
      name?: string;
      port: number;
      targetPort?: number | string;
      /** The port's application protocol (KEP-3726 `kubernetes.io/h2c`, `kubernetes.io/ws`, ...). */
      appProtocol?: string;
    }[];
  };
}

/** An EndpointSlice of a Service, as much of it as translation reads. */
export interface EndpointSliceInput {
  ports?: { name?: string | null; port?: number | null }[] | null;
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean | null; serving?: boolean | null } }[];
}

/** The cluster state a Gateway is translated against (looked up by the reconciler). */
export interface GatewayTranslationContext {
  /** The Service `namespace/name`; undefined when absent. */
  service: (namespace: string, name: string) => ServiceInput | undefined;
  /** The EndpointSlices of the Service `namespace/name` (empty: none known). */
  endpointSlices: (namespace: string, name: string) => readonly EndpointSliceInput[];
  /** Whether the Secret `namespace/name` exists (listener certificates). */
  secretExists: (namespace: string, name: string) => boolean;
  /** What is wrong with the TLS Secret `namespace/name` (its certificate or key); undefined: nothing. */
  certificateProblem?: (namespace: string, name: string) => string | undefined;
  /** The labels of a namespace (`allowedRoutes.namespaces.from: Selector`). */
  namespaceLabels: (namespace: string) => Record<string, string> | undefined;
  /** Every ReferenceGrant of the cluster (the watched namespaces). */
  grants: readonly ReferenceGrantInput[];
  /** The gateway's own port: an HTTP listener on it needs no `listen_port`. */
  gatewayPort?: number;
  /**
   * Per-Gateway addresses (controllers/gateway-api/addresses.ts): each listener port -> the
   * gateway port allocated to this Gateway, which its APIs listen on (the Gateway's Service leads
   * the listener port there). A listener port without one is not served. Absent: the APIs listen
   * on the listener ports themselves (shared addresses).
   */
  ownPorts?: Readonly<Record<number, number>>;
  /** Every SvcRoutePolicy of the cluster (the watched namespaces); absent: none. */
  policies?: readonly RoutePolicyInput[];
}

/** A status condition as translation says it (the reconciler adds generation and time). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** The status of one listener. */
export interface ListenerStatus {
  name: string;
  supportedKinds: { group: string; kind: string }[];
  attachedRoutes: number;
  conditions: Condition[];
}

/** The status of one route for one of its parentRefs that names this Gateway. */
export interface RouteParentStatus {
  parentRef: ParentRef;
  conditions: Condition[];
}

/**
 * Annotation of a generated ApiDefinition listing the HTTPRoutes it serves (`namespace/name`,
 * comma-separated, sorted): access rights naming an HTTPRoute expand to the APIs that list it.
 */
export const GATEWAY_ROUTES_ANNOTATION = 'svc.io/gateway-routes';

/** One ApiDefinition to write: its resource name, its spec and the routes it serves. */
export interface GeneratedApi {
  name: string;
  spec: ApiDefinitionSpec;
  /**
   * The HTTPRoutes (`namespace/name`, sorted) whose matches this API serves: a group's public API
   * lists every route with a match in the group, a rule's internal API its route.
   */
  routes: string[];
}

/** The translation of a Gateway with the HTTPRoutes attached to it. */
export interface GatewayTranslation {
  apis: GeneratedApi[];
  /** The Gateway's own conditions (Accepted; Programmed is the reconciler's). */
  conditions: Condition[];
  listeners: ListenerStatus[];
  /** Per route (`namespace/name`), its parents naming this Gateway. */
  routes: Record<string, RouteParentStatus[]>;
}
