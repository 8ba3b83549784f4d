import type { JsonSchema } from '../json-schema.ts';
import { disabledOrPositive } from '../common.ts';
import {
  allowedUrls,
  apiLimit,
  endpoints,
  graphqlFieldPermissions,
  limitProperties,
  partitions,
} from './limits.ts';
import { idPattern } from './api-definition/index.ts';
import { objectIdSchema } from '../rules/ids.ts';
import { closedObject, nonEmptyString, strings, stringMap } from './builders.ts';

/** Policy states: what happens to the keys of a policy in each. */
export const policyState: JsonSchema = {
  type: 'string',
  enum: ['active', 'draft', 'deny'],
  default: 'active',
  description:
    '`active`: keys of the policy work and new keys can be created. `draft`: keys are refused and none can be created. `deny`: the policy is not published to the gateway.',
};

/** Fields a policy has both in the gateway and in the SecurityPolicy resource. */
export const policyProperties: Record<string, JsonSchema> = {
  name: nonEmptyString('Descriptive name.'),
  state: policyState,
  active: { type: 'boolean', default: true, description: 'Marks the policy active.' },
  tags: strings('Labels added to keys of the policy.'),
  meta_data: stringMap('Extra metadata added to keys of the policy.'),
  ...limitProperties,
  partitions,
  max_query_depth: disabledOrPositive(
    'Deepest GraphQL query the keys of the policy may send (the `complexity` partition); deeper queries get 403.',
  ),
  key_expires_in: {
    type: 'integer',
    minimum: 0,
    description: 'Seconds a key created with this policy lives; 0 never expires.',
  },
};

/** An API a key or policy grants access to, as the gateway stores it. */
export const accessDefinition: JsonSchema = closedObject(
  {
    title: 'AccessDefinition',
    description: 'Access to one API: versions, allowed URLs and limits.',
    required: ['api_id'],
  },
  {
    api_id: { type: 'string', pattern: idPattern, description: 'ID of the API.' },
    api_name: { type: 'string', description: 'Name of the API, for people.' },
    versions: strings('Versions covered (`Default` for classic APIs, `""` for OAS APIs).'),
    allowed_urls: allowedUrls,
    limit: apiLimit,
    endpoints,
    ...graphqlFieldPermissions,
  },
);

/** A security policy as the gateway stores it (`/svc/policies`). */
export const policyModel: JsonSchema = closedObject(
  {
    title: 'GatewayPolicy',
    description: 'A security policy as stored by the gateway (`/svc/policies`).',
    required: ['name'],
  },
  {
    id: objectIdSchema('Policy ID; generated when absent.'),
    _id: {
      type: 'string',
      description: "The dashboard's record ID of the policy, as classic exports carry it (kept, not used).",
    },
    org_id: { type: 'string', description: 'Organization the policy belongs to.' },
    ...policyProperties,
    is_inactive: {
      type: 'boolean',
      description: 'Disables the keys of the policy, as a draft state does.',
    },
    hmac_enabled: {
      type: 'boolean',
      description: 'Keys of the policy that hold an `hmac_string` may sign requests (HMAC request signing).',
    },
    last_updated: { type: 'string', description: 'When the policy last changed (kept, not used).' },
    access_rights: {
      type: 'object',
      additionalProperties: accessDefinition,
      description: 'APIs covered, by API ID.',
    },
  },
);
