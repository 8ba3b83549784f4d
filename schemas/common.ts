import type { JsonSchema, PrinterColumn } from './json-schema.ts';
import { strings, closedObject } from './models/builders.ts';

/** API group of every svc custom resource. */
export const GROUP = 'svc.svc.io';
/** The served and stored version. */
export const VERSION = 'v1alpha1';
/** `apiVersion` value of every svc custom resource. */
export const API_VERSION = `${GROUP}/${VERSION}`;

/** The three API kinds. */
export const API_KINDS = ['ApiDefinition', 'SvcOasApiDefinition', 'SvcStreamsApiDefinition'] as const;
/** One of API_KINDS. */
export type ApiKind = (typeof API_KINDS)[number];
/** The category `kubectl get svc` lists. */
export const CATEGORY = 'svc';

/** Names of Kubernetes objects (RFC 1123 subdomain). */
export const k8sName: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
};

/** A Secret an API names, in the API's namespace. */
export const apiSecretName: JsonSchema = {
  ...k8sName,
  description: 'Name of a Secret in the namespace of the API.',
};

/** Namespaces (RFC 1123 label). */
export const k8sNamespace: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
};

/** A name plus an optional namespace that defaults to the referring resource's. */
export const namespacedRef = (what: string): JsonSchema =>
  closedObject(
    {
      title: 'NamespacedRef',
      description: `Reference to ${what} by name and namespace.`,
      required: ['name'],
    },
    {
      name: { ...k8sName, description: 'Name of the referenced object.' },
      namespace: {
        ...k8sNamespace,
        description:
          'Namespace of the referenced object. Defaults to the namespace of the referring resource.',
      },
    },
  );

/** `"namespace/name"`, or `"name"` in the referring resource's namespace. */
export const REF_TEXT_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/**
 * A reference to another resource in either form the reference's manifests use: the string
 * `"namespace/name"` (or `"name"`: the referring resource's namespace), or `{name, namespace}`.
 * `schemas/rules/references.ts` reads both.
 */
export const resourceRef = (what: string): JsonSchema => ({
  description: `${what}: "namespace/name" (or "name", in the namespace of this resource), or {name, namespace}.`,
  anyOf: [
    {
      type: 'string',
      pattern: REF_TEXT_PATTERN,
      maxLength: 317,
      description: `${what} as "namespace/name", or "name" in the namespace of this resource.`,
    },
    namespacedRef(what),
  ],
});

/** `contextRef`: the OperatorContext whose connection settings apply to a resource. */
export const contextRef: JsonSchema = {
  ...namespacedRef('an OperatorContext'),
  description:
    'OperatorContext whose connection settings (gateway or dashboard URL, credentials, organization) the operator uses for this resource. Without it the operator uses its own settings from the svc-operator-conf secret or its environment.',
};

/**
 * `context`: the reference operator's earlier name of `contextRef` (ApiDefinition and
 * SecurityPolicy had it); the mutating webhook moves it to `contextRef` (schemas/rules/earlier-names.ts).
 */
export const contextAlias: JsonSchema = {
  ...namespacedRef('an OperatorContext'),
  description:
    "Deprecated: the reference operator's earlier name of contextRef, read the same way. The mutating webhook moves it to contextRef with a warning; set beside a contextRef naming another OperatorContext, it is refused.",
};

/** An API resource of any of the three API kinds, as listed in statuses. */
export const apiResourceRef: JsonSchema = closedObject(
  {
    title: 'ApiResourceRef',
    description: 'An API resource of the cluster.',
    required: ['kind', 'name', 'namespace'],
  },
  {
    kind: {
      type: 'string',
      enum: ['ApiDefinition', 'SvcOasApiDefinition', 'SvcStreamsApiDefinition'],
      description: 'Kind of the API resource.',
    },
    name: { ...k8sName, description: 'Name of the API resource.' },
    namespace: { ...k8sNamespace, description: 'Namespace of the API resource.' },
  },
);

/**
 * Where the operator last wrote a resource. When `contextRef` moves the resource to another
 * gateway, the operator deletes it from the one recorded here.
 */
export const pushedTo: JsonSchema = closedObject(
  {
    title: 'PushedTo',
    description:
      "Where the operator last wrote the resource: the management URL, and the OperatorContext it was reached through (none: the operator's own settings). When contextRef moves the resource to another gateway, it is deleted from this one.",
    required: ['url'],
  },
  {
    url: { type: 'string', description: 'Management URL of the gateway or dashboard.' },
    contextRef: namespacedRef('the OperatorContext the gateway was reached through'),
  },
);

/** What differs between the conditions of the kinds: their names, the fields they need, their words. */
export interface ConditionWords {
  title: string;
  description: string;
  required: string[];
  /** The descriptions of type, reason and message. */
  type: string;
  reason: string;
  message: string;
}

/** A standard Kubernetes condition (metav1.Condition) described in a kind's words. */
export function conditionSchema(w: ConditionWords): JsonSchema {
  return closedObject(
    { title: w.title, description: w.description, required: w.required },
    {
      type: { type: 'string', maxLength: 316, description: w.type },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'], description: 'Status of the condition.' },
      observedGeneration: {
        type: 'integer',
        minimum: 0,
        description: 'The metadata.generation the condition was set for.',
      },
      lastTransitionTime: {
        type: 'string',
        format: 'date-time',
        description: 'Last time the condition changed from one status to another.',
      },
      reason: { type: 'string', maxLength: 1024, description: w.reason },
      message: { type: 'string', maxLength: 32768, description: w.message },
    },
  );
}

/** A standard Kubernetes condition (metav1.Condition). */
export const condition: JsonSchema = conditionSchema({
  title: 'Condition',
  description: 'Current state of one aspect of the resource (the standard Kubernetes condition).',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  type: 'Type of the condition, in CamelCase. `Ready` tells whether the gateway holds the resource.',
  reason: 'Machine-readable reason for the last transition, in PascalCase.',
  message: 'Human-readable details of the transition.',
});

/** Conditions list, keyed by type. */
export const conditions: JsonSchema = {
  type: 'array',
  description: 'Standard conditions. `Ready` is True when the gateway or dashboard holds the desired state.',
  items: condition,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
};

/** The outcome of the operator's last call to the gateway or dashboard for a resource. */
export const latestTransaction: JsonSchema = closedObject(
  {
    title: 'Transaction',
    description: "Outcome of the operator's last call to the gateway or dashboard for this resource.",
  },
  {
    time: { type: 'string', format: 'date-time', description: 'When the call finished.' },
    status: { type: 'string', enum: ['Successful', 'Failed'], description: 'Whether the call succeeded.' },
    error: { type: 'string', description: 'Error message when the call failed.' },
  },
);

/** `status.observedGeneration` of every kind the operator reconciles. */
export const observedGeneration: JsonSchema = {
  type: 'integer',
  minimum: 0,
  description: 'The metadata.generation the operator last reconciled.',
};

/** Status fields every kind reconciled onto a gateway or dashboard has. */
export const reconcileStatusProperties: Record<string, JsonSchema> = {
  observedGeneration,
  latestCRDSpecHash: {
    type: 'string',
    description: 'Hash of the translated object the operator last pushed to the gateway or dashboard.',
  },
  latestSvcSpecHash: {
    type: 'string',
    description: 'Hash of the object the gateway or dashboard held after the last push (drift detection).',
  },
  latestTransaction,
  conditions,
};

/** One gateway that must serve a resource, and the revision of it that gateway serves. */
export const gatewayRevision: JsonSchema = closedObject(
  {
    title: 'GatewayRevision',
    description:
      'A gateway process that must serve the resource (a gateway sharing the store, as its registry of gateways lists it), and the revision of the resource it serves.',
    required: ['name'],
  },
  {
    name: {
      type: 'string',
      description: 'The gateway as it names itself: `host:port` (and `/worker-N` with several workers).',
    },
    revision: {
      type: 'string',
      description:
        'Hash of the document the gateway serves (compared with latestSvcSpecHash); absent when it serves none.',
    },
    appliedAt: {
      type: 'string',
      format: 'date-time',
      description: 'When the gateway started serving that revision.',
    },
  },
);

/** `status.gateways` of a kind the gateways serve (`what`: API, policy). */
export function gatewaysStatus(what: string): JsonSchema {
  return {
    type: 'array',
    description: `Every gateway that must serve the ${what} and the revision of it each serves: in mode ce all the gateways sharing the store of the gateway the operator writes to, in mode pro the gateways connected to the dashboard that load the organisation. \`Ready\` and \`Programmed\` are True only when every one serves latestSvcSpecHash; until then they are False with reason \`Pending\`, naming the gateways that do not yet.`,
    items: gatewayRevision,
  };
}

/** Status of the three API kinds. */
export const apiStatus: JsonSchema = closedObject(
  { title: 'ApiStatus', description: 'Observed state of the API, written by the operator.' },
  {
    api_id: { type: 'string', description: 'ID of the API in the gateway or dashboard.' },
    listen_path: { type: 'string', description: 'Listen path the API is served on.' },
    linked_by_policies: {
      type: 'array',
      description: 'SecurityPolicies that grant access to this API.',
      items: namespacedRef('a SecurityPolicy'),
    },
    pushedTo,
    certificates: strings(
      'IDs of the certificates the operator uploaded to the gateway from the Secrets the API names (ApiDefinition: certificate_secret_names, client_certificate_refs, upstream_certificate_refs; SvcOasApiDefinition: clientCertificate, mutualTLS).',
    ),
    gateways: gatewaysStatus('API'),
    ...reconcileStatusProperties,
  },
);

/** Printer columns shared by the API kinds: `listenPath` is where the kind keeps its listen path. */
export const apiPrinterColumns = (listenPath: string): readonly PrinterColumn[] => [
  {
    name: 'API ID',
    type: 'string',
    jsonPath: '.status.api_id',
    description: 'ID of the API in the gateway.',
  },
  { name: 'Listen Path', type: 'string', jsonPath: listenPath, description: 'Listen path of the API.' },
  readyColumn,
  ageColumn,
];

/** `Ready` condition as a column. */
export const readyColumn: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'Whether the gateway or dashboard holds the desired state.',
};

/** The usual age column. */
export const ageColumn: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since creation.',
};

/** HTTP methods a policy or stream may name. */
export const httpMethod: JsonSchema = {
  type: 'string',
  enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'CONNECT', 'TRACE'],
  description: 'HTTP method.',
};

/** A count or a seconds value where -1 disables the feature. */
export const disabledOrPositive = (description: string, dflt?: number): JsonSchema => ({
  type: 'integer',
  minimum: -1,
  description: `${description} -1 disables.`,
  ...(dflt === undefined ? {} : { default: dflt }),
});
