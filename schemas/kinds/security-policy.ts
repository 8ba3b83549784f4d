import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  apiResourceRef,
  contextAlias,
  contextRef,
  gatewaysStatus,
  k8sName,
  k8sNamespace,
  pushedTo,
  readyColumn,
  reconcileStatusProperties,
} from '../common.ts';
import { objectIdSchema } from '../rules/ids.ts';
import { allowedUrls, apiLimit, endpoints, graphqlFieldPermissions } from '../models/limits.ts';
import { policyProperties } from '../models/policy.ts';
import { closedObject, strings } from '../models/builders.ts';

/** Rules shared by the policy root and per-API limits (rate/per and quota pairs). */
const limitRules: JsonSchema['x-kubernetes-validations'] = [
  {
    rule: '(!has(self.rate) || self.rate <= 0) == (!has(self.per) || self.per <= 0)',
    message: 'rate and per go together: both -1 (disabled) or both positive',
    fieldPath: '.per',
    reason: 'FieldValueInvalid',
  },
  {
    rule: '!has(self.quota_max) || self.quota_max <= 0 || (has(self.quota_renewal_rate) && self.quota_renewal_rate > 0)',
    message: 'a positive quota_max needs a positive quota_renewal_rate (seconds)',
    fieldPath: '.quota_renewal_rate',
    reason: 'FieldValueRequired',
  },
];

/**
 * The version an access right covers when it names none: classic APIs call their only version
 * `Default`, OAS and streams APIs `""`. The webhooks default it; the operator applies it too, for
 * clusters without webhooks.
 */
export const defaultApiVersion: Readonly<
  Record<'ApiDefinition' | 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition', string>
> = {
  ApiDefinition: 'Default',
  SvcOasApiDefinition: '',
  SvcStreamsApiDefinition: '',
};

/**
 * An API a policy (or an ApiKey, in `spec.accessRights`) covers, referenced by its cluster name:
 * one schema for both, so a key's rights read and check like a policy's.
 */
export const accessRight: JsonSchema = closedObject(
  {
    title: 'AccessRight',
    description:
      'An API the policy or key covers, referenced by its cluster name (or an HTTPRoute, for the APIs generated to serve it); the operator resolves its API ID.',
    required: ['name'],
  },
  {
    name: { ...k8sName, description: 'Name of the API resource (or of the HTTPRoute).' },
    namespace: {
      ...k8sNamespace,
      description:
        'Namespace of the API resource (or of the HTTPRoute). Defaults to the namespace of the policy or key.',
    },
    kind: {
      type: 'string',
      enum: ['ApiDefinition', 'SvcOasApiDefinition', 'SvcStreamsApiDefinition', 'HTTPRoute'],
      default: 'ApiDefinition',
      description:
        "Kind of the API resource. `HTTPRoute` (Gateway API): every ApiDefinition the operator generated to serve the route (the public API of each port, host and path its matches land on, shared with the other routes of that group, and the internal API of each of its rules where the path dispatches by method, headers or query), each with the entry's versions, allowed_urls, limit and endpoints; the policy or key waits until the route is served.",
    },
    versions: strings(
      'Versions covered. Defaults to `Default` for classic APIs (and HTTPRoutes, whose generated APIs have that one version) and `""` for OAS and streams APIs.',
    ),
    limit: { ...apiLimit, 'x-kubernetes-validations': limitRules },
    endpoints,
    allowed_urls: allowedUrls,
    ...graphqlFieldPermissions,
  },
);

/** SecurityPolicy: access rights, rate limits, throttling and quotas for keys. */
export const securityPolicyKind: KindDefinition = {
  kind: 'SecurityPolicy',
  plural: 'securitypolicies',
  singular: 'securitypolicy',
  shortNames: ['svcpol', 'secpol'],
  description:
    'Access, rate-limit, throttle and quota rules for APIs, applied to the keys that use the policy.',
  spec: closedObject(
    {
      title: 'SecurityPolicySpec',
      description: 'Desired state of the policy.',
      required: ['name'],
      'x-kubernetes-validations': limitRules,
    },
    {
      id: objectIdSchema(
        'Links to an existing policy ID so its keys keep working; the resource then overwrites that policy. When omitted the ID is derived from the namespaced name.',
      ),
      contextRef,
      context: contextAlias,
      ...policyProperties,
      rate: { ...policyProperties.rate, default: -1 },
      per: { ...policyProperties.per, default: -1 },
      throttle_interval: { ...policyProperties.throttle_interval, default: -1 },
      throttle_retry_limit: { ...policyProperties.throttle_retry_limit, default: -1 },
      quota_max: { ...policyProperties.quota_max, default: -1 },
      quota_renewal_rate: { ...policyProperties.quota_renewal_rate, default: -1 },
      access_rights_array: {
        type: 'array',
        // Bounds the cost of the CEL rules on each entry, as the API server requires.
        maxItems: 1000,
        items: accessRight,
        description: 'APIs the policy covers.',
      },
    },
  ),
  status: closedObject(
    { title: 'SecurityPolicyStatus', description: 'Observed state of the policy, written by the operator.' },
    {
      pol_id: { type: 'string', description: 'ID of the policy in the gateway or dashboard.' },
      linked_apis: {
        type: 'array',
        items: apiResourceRef,
        description:
          'API resources the policy covers (its access_rights_array; for an HTTPRoute, the ApiDefinitions generated to serve it), and ApiDefinitions that name it in jwt_default_policies.',
      },
      pushedTo,
      gateways: gatewaysStatus('policy'),
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    {
      name: 'Policy ID',
      type: 'string',
      jsonPath: '.status.pol_id',
      description: 'ID of the policy in the gateway.',
    },
    { name: 'State', type: 'string', jsonPath: '.spec.state', description: 'State of the policy.' },
    readyColumn,
    ageColumn,
  ],
};
