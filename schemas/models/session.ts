import type { JsonSchema } from '../json-schema.ts';
import { disabledOrPositive } from '../common.ts';
import { ID_PATTERN } from '../rules/ids.ts';
import { limitProperties } from './limits.ts';
import { accessDefinition } from './policy.ts';
import { closedObject, strings } from './builders.ts';

/** A key (session) as the gateway stores it (`/svc/keys`). */
export const sessionModel: JsonSchema = closedObject(
  {
    title: 'GatewaySession',
    description:
      'A key and its session: limits, access rights and counters. The key itself is stored hashed; basic-auth users are keys named by user name.',
  },
  {
    org_id: { type: 'string', description: 'Organization of the key; must match the APIs it is used on.' },
    alias: { type: 'string', description: 'Name of the key, for people and logs.' },
    oauth_client_id: {
      type: 'string',
      description:
        'The OAuth 2.0 client an access token was issued to (`POST {listen_path}oauth/token`); deleting the client revokes its tokens.',
    },
    oauth_api_id: {
      type: 'string',
      description:
        'The API whose OAuth 2.0 client (`oauth_client_id`) an access token was issued to: clients of different APIs may share a client ID, and deleting one revokes its own tokens only.',
    },
    counter_id: {
      type: 'string',
      pattern: ID_PATTERN,
      maxLength: 128,
      description:
        "The name the key's rate-limit and quota counters are kept under, instead of the key's own stored ID: keys that share it count against one allowance (the operator gives both values of a rotated ApiKey the same one, so the old and the new value share the key's limits and its counters outlive the rotation); resetting the quota of one resets it for all. Unset: the key counts on its own.",
    },
    ...limitProperties,
    max_query_depth: disabledOrPositive('Deepest GraphQL query the key may send; deeper queries get 403.'),
    quota_remaining: {
      type: 'integer',
      description: 'Requests left in the current quota period (derived, kept by the gateway).',
    },
    quota_renews: {
      type: 'integer',
      minimum: 0,
      description: 'Unix time at which the current quota period ends (derived, kept by the gateway).',
    },
    expires: { type: 'integer', description: 'Unix time after which the key is refused; 0 or less never.' },
    is_inactive: { type: 'boolean', description: 'A disabled key: requests are refused with 403.' },
    access_rights: {
      type: 'object',
      additionalProperties: accessDefinition,
      description: 'APIs the key may call, by API ID.',
    },
    apply_policies: strings('IDs of the policies merged into the key when it is loaded.'),
    basic_auth_data: closedObject(
      { title: 'BasicAuthData', description: 'Credentials of a basic-auth user.' },
      {
        password: {
          type: 'string',
          description: 'Password: plain on input, stored hashed (never returned in clear).',
        },
        hash_type: {
          type: 'string',
          enum: ['', 'scrypt'],
          description: 'How `password` is stored; set by the gateway.',
        },
      },
    ),
    jwt_data: closedObject(
      { title: 'JwtData', description: 'Per-key JWT secret.' },
      {
        secret: { type: 'string', description: "Secret or public key verifying the key's tokens." },
      },
    ),
    hmac_enabled: {
      type: 'boolean',
      description: 'The key may sign requests (HMAC request signing) with `hmac_string`.',
    },
    hmac_string: {
      type: 'string',
      description:
        'HMAC shared secret: plain on input, stored encrypted with a key derived from the gateway secret, never returned.',
    },
    certificate: {
      type: 'string',
      description: 'Fingerprint of the client certificate bound to the key (dynamic mTLS).',
    },
    enable_detailed_recording: {
      type: 'boolean',
      description: 'Record request and response bodies in analytics.',
    },
    meta_data: {
      type: 'object',
      description: 'Free-form metadata.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    tags: strings('Labels.'),
    date_created: { type: 'string', format: 'date-time', description: 'When the key was created.' },
    monitor: closedObject(
      {
        title: 'KeyMonitor',
        description:
          "The key's own quota trigger limits (`TriggerExceeded`), instead of the gateway's global one.",
      },
      {
        trigger_limits: {
          type: 'array',
          items: { type: 'number', minimum: 0, maximum: 100 },
          description: 'Percents of the quota whose crossing fires `TriggerExceeded`, such as [80, 90].',
        },
      },
    ),
    last_updated: {
      type: 'string',
      description: 'When the key last changed (classic exports; kept, not used).',
    },
    allowance: {
      type: 'number',
      description:
        "The classic gateway's rate-limiter state, as its exports carry it (ignored: the gateway counts in its store).",
    },
    last_check: {
      type: 'integer',
      description: "The classic gateway's rate-limiter state, as its exports carry it (ignored).",
    },
  },
);
