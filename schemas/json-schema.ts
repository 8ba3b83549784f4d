/**
 * The subset of JSON Schema 2020-12 that svc's schemas are written in.
 *
 * Everything in schemas/ is plain data typed by this interface, so that one object can be fed
 * to ajv (full validation), to the CRD generator (structural subset plus CEL rules) and to the
 * TypeScript type generator.
 */
export interface JsonSchema {
  /** Names the schema: the type generator emits a named type for every titled schema. */
  title?: string;
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  /** `false` closes the object (ajv refuses unknown keys); a schema describes a map's values. */
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: readonly (string | number | boolean)[];
  const?: string | number | boolean;
  default?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  examples?: readonly unknown[];
  /** The value matches at least one of these (ajv only: the CRD keeps the node open). */
  anyOf?: readonly JsonSchema[];
  /** Keeps fields the schema does not list (an open object); honoured by ajv and the API server. */
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  /** CEL rules the API server evaluates for this node (single-object rules a schema can't say). */
  'x-kubernetes-validations'?: readonly CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: readonly string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  /** Integer or string (a port name, a percentage): Kubernetes' IntOrString. */
  'x-kubernetes-int-or-string'?: boolean;
  /**
   * Whether svc enforces the field (`supported`) or refuses a value that changes behaviour
   * (`not-supported`): read by `schemas/support.ts` (webhooks, gateway) and by the generator of
   * docs/compatibility.md. A field without the flag shares its parent's.
   */
  'x-svc-support'?: SvcSupport;
  /**
   * On a `not-supported` object: the boolean field that turns it on. The object is neutral (and
   * accepted) while that field is not true, whatever its other fields say.
   */
  'x-svc-switch'?: string;
  /**
   * On a `not-supported` field: why svc does not enforce it yet and what to use instead, shown in
   * docs/compatibility.md and appended to the refusal. A field without one shares its parent's.
   */
  'x-svc-reason'?: string;
}

/** The two states of a field of the classic API model. */
export type SvcSupport = 'supported' | 'not-supported';

/** svc's own keywords: data for the support check and the docs generator, never in a CRD. */
export const SVC_EXTENSIONS = ['x-svc-support', 'x-svc-switch', 'x-svc-reason'] as const;

/** The Kubernetes extension keywords a schema may carry (kept in CRDs, ignored by ajv). */
export const KUBERNETES_EXTENSIONS = [
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-int-or-string',
] as const;

/** A CRD validation rule (`x-kubernetes-validations` entry). */
export interface CelRule {
  rule: string;
  message: string;
  /** JSONPath (relative to the node) of the field the message is about. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

/** How a custom resource kind is named and shown; the generators turn it into a CRD. */
export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  description: string;
  spec: JsonSchema;
  status: JsonSchema;
  printerColumns: readonly PrinterColumn[];
  /**
   * Labels of the CRD besides svc's own: the Gateway API policy class of a policy kind
   * (`gateway.networking.k8s.io/policy`, GEP-713), which tools read to find policies.
   */
  crdLabels?: Readonly<Record<string, string>>;
}

/** An `additionalPrinterColumns` entry of the CRD. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  priority?: number;
}
