import type { CelRule, JsonSchema, KindDefinition } from '../json-schema.ts';
import { ageColumn, conditionSchema, k8sName } from '../common.ts';
import { KEYED_FLAGS } from '../rules/auth.ts';
import { ROUTE_POLICY_FIELDS } from '../rules/route-policy.ts';
import { apiDefinitionKind } from './api-definition.ts';
import { closedObject } from '../models/builders.ts';

/** The Gateway API group: the only group a policy targets. */
const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

/**
 * A target of the policy: the Gateway API's LocalPolicyTargetReferenceWithSectionName (GEP-713),
 * an HTTPRoute or a Gateway of the policy's namespace.
 */
const targetRef: JsonSchema = closedObject(
  {
    title: 'RoutePolicyTargetRef',
    description: 'An HTTPRoute or a Gateway of the namespace of the policy that the policy applies to.',
    required: ['group', 'kind', 'name'],
  },
  {
    group: {
      type: 'string',
      enum: [GATEWAY_API_GROUP],
      description: 'API group of the target: gateway.networking.k8s.io.',
    },
    kind: {
      type: 'string',
      enum: ['HTTPRoute', 'Gateway'],
      description: 'Kind of the target: HTTPRoute, or Gateway (every route attached to it).',
    },
    name: { ...k8sName, description: 'Name of the target, in the namespace of the policy.' },
    sectionName: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description:
        'A part of the target only: the name of a rule (HTTPRoute `spec.rules[].name`) or of a listener (Gateway `spec.listeners[].name`).',
    },
  },
);

/** The fields of an ApiDefinition the policy carries: the same schemas, so the same rules. */
const apiFields: Record<string, JsonSchema> = Object.fromEntries(
  ROUTE_POLICY_FIELDS.map((f) => {
    const schema = apiDefinitionKind.spec.properties?.[f];
    if (schema === undefined) throw new Error(`SvcRoutePolicy: ApiDefinition has no field ${f}`);
    return [f, schema];
  }),
);

/** The keyed methods a policy can turn on (use_keyless excludes them, as on an ApiDefinition). */
const keyed = KEYED_FLAGS.filter((f) => (ROUTE_POLICY_FIELDS as readonly string[]).includes(f));

/** The CRD rules of an ApiDefinition about the fields a policy carries (keyless, JWT). */
const apiRules: CelRule[] = [
  {
    rule: `!(has(self.use_keyless) && self.use_keyless) || !(${keyed.map((f) => `(has(self.${f}) && self.${f})`).join(' || ')})`,
    message: `use_keyless excludes authentication: set use_keyless to false, or turn off ${keyed.join(', ')}`,
    fieldPath: '.use_keyless',
    reason: 'FieldValueForbidden',
  },
  ...(apiDefinitionKind.spec['x-kubernetes-validations'] ?? []).filter((r) => r.fieldPath === '.jwt_source'),
];

/** A condition of a policy for one ancestor (metav1.Condition). */
const ancestorCondition: JsonSchema = conditionSchema({
  title: 'RoutePolicyCondition',
  description: 'The standard Kubernetes condition.',
  required: ['type', 'status', 'reason', 'message'],
  type: 'Type of the condition: Accepted.',
  reason: 'Accepted, Conflicted, Invalid or TargetNotFound.',
  message: 'Human-readable details.',
});

/**
 * The GEP-713 class of the policy, as its CRD label says: Inherited, not Direct, because a policy
 * on a Gateway (or a listener) reaches every route attached below it, and GEP-713 counts a policy
 * that affects more objects than its target as inherited. Its fields are defaults: the policy of
 * the most specific target applies, whole.
 */
const POLICY_CLASS = 'Inherited';

/**
 * SvcRoutePolicy: svc's API management on Gateway API routes (an inherited policy attachment,
 * GEP-713): the authentication, IP lists and API-wide rate limit of an ApiDefinition, written
 * into every API generated from the routes it reaches.
 */
export const routePolicyKind: KindDefinition = {
  kind: 'SvcRoutePolicy',
  plural: 'svcroutepolicies',
  singular: 'svcroutepolicy',
  shortNames: ['svcrp'],
  description:
    'Authentication, client IP lists and the rate limit of the APIs served for Gateway API HTTPRoutes: attached to HTTPRoutes or Gateways by spec.targetRefs (a Gateway API inherited policy attachment: a Gateway-level policy reaches every route attached to the Gateway). Its settings are defaults: the policy of the most specific target (a rule, a route, a listener, the Gateway) applies, whole.',
  crdLabels: { 'gateway.networking.k8s.io/policy': POLICY_CLASS },
  spec: closedObject(
    {
      title: 'SvcRoutePolicySpec',
      description:
        'The targets, and the settings of an ApiDefinition the APIs serving them get (same names and rules as ApiDefinition).',
      required: ['targetRefs'],
      'x-kubernetes-validations': apiRules,
    },
    {
      targetRefs: {
        type: 'array',
        minItems: 1,
        maxItems: 16,
        items: targetRef,
        description: 'The HTTPRoutes and Gateways (of the namespace of the policy) the policy applies to.',
      },
      ...apiFields,
    },
  ),
  status: closedObject(
    {
      title: 'SvcRoutePolicyStatus',
      description: 'Where the policy applies, written by the operator (the Gateway API PolicyStatus).',
    },
    {
      ancestors: {
        type: 'array',
        maxItems: 16,
        description:
          'Per Gateway the policy applies through (or per target that was not found), whether it is applied there.',
        items: closedObject(
          {
            title: 'RoutePolicyAncestorStatus',
            description: 'The status of the policy for one ancestor.',
            required: ['ancestorRef', 'controllerName', 'conditions'],
          },
          {
            ancestorRef: closedObject(
              {
                title: 'RoutePolicyAncestorRef',
                description: 'The Gateway (or the target not found).',
                required: ['name'],
              },
              {
                group: { type: 'string', description: 'API group.' },
                kind: { type: 'string', description: 'Kind.' },
                namespace: { type: 'string', description: 'Namespace.' },
                name: { type: 'string', description: 'Name.' },
                sectionName: { type: 'string', description: 'Listener or rule name.' },
              },
            ),
            controllerName: {
              type: 'string',
              description: 'The controller that wrote this entry: svc.io/gateway-controller.',
            },
            conditions: {
              type: 'array',
              maxItems: 8,
              items: ancestorCondition,
              description: 'Accepted: True, or False with Conflicted, Invalid or TargetNotFound.',
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['type'],
            },
          },
        ),
      },
    },
  ),
  printerColumns: [
    {
      name: 'Targets',
      type: 'string',
      jsonPath: '.spec.targetRefs[*].name',
      description: 'The HTTPRoutes and Gateways the policy targets.',
    },
    {
      name: 'Accepted',
      type: 'string',
      jsonPath: '.status.ancestors[*].conditions[?(@.type=="Accepted")].reason',
      description: 'Whether the policy applies, per ancestor.',
    },
    ageColumn,
  ],
};
