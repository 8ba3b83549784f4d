import type { KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  contextRef,
  k8sName,
  pushedTo,
  readyColumn,
  reconcileStatusProperties,
  resourceRef,
} from '../common.ts';
import { accessRight } from './security-policy.ts';
import { closedObject, strings, stringMap } from '../models/builders.ts';

/** The key types an ApiKey may name. */
export const API_KEY_TYPES = ['token', 'basic', 'certificate'] as const;

/** ApiKey: one key or basic-auth user, its value in a Secret. */
export const apiKeyKind: KindDefinition = {
  kind: 'ApiKey',
  plural: 'apikeys',
  singular: 'apikey',
  shortNames: ['svckey'],
  description:
    'A key (or basic-auth user) of the gateway, its value held in a Secret. The gateway stores only its hash; when the Secret does not exist, the operator generates a strong value and writes it there.',
  spec: closedObject(
    { title: 'ApiKeySpec', description: 'Desired state of the key.' },
    {
      type: {
        type: 'string',
        enum: [...API_KEY_TYPES],
        default: 'token',
        description:
          '`token` (the Secret holds the key), `basic` (the Secret holds the password of `username`) or `certificate` (the key is the client certificate of `certificateSecretRef`: dynamic mTLS, mode ce).',
      },
      secretRef: closedObject(
        {
          title: 'ApiKeySecretRef',
          description:
            'The Secret (in the namespace of the ApiKey) and its data key holding the token or password. Missing: the operator generates a value and creates the Secret, owned by the ApiKey. Defaults to a Secret named like the ApiKey, data key `key`.',
        },
        {
          name: { ...k8sName, description: 'Name of the Secret. Defaults to the name of the ApiKey.' },
          key: {
            type: 'string',
            minLength: 1,
            maxLength: 253,
            pattern: '^[-._a-zA-Z0-9]+$',
            default: 'key',
            description: 'Data key of the Secret holding the value.',
          },
        },
      ),
      username: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        pattern: '^[-._@a-zA-Z0-9]+$',
        description: 'User name of a `basic` key (required for it, refused for the others).',
      },
      certificateSecretRef: {
        ...k8sName,
        description:
          'Secret (kubernetes.io/tls, in the namespace of the ApiKey) whose `tls.crt` a `certificate` key is bound to (dynamic mTLS): a client presenting that certificate is the key, with no token. The operator uploads the certificate alone (never `tls.key`); a new certificate in the Secret binds the key to it and unbinds the old one.',
      },
      policies: {
        type: 'array',
        maxItems: 100,
        items: resourceRef('A SecurityPolicy'),
        description: 'SecurityPolicies the key applies; the operator resolves them to policy IDs.',
      },
      accessRights: {
        type: 'array',
        // Bounds the cost of the CEL rules on each entry, as the API server requires.
        maxItems: 1000,
        items: accessRight,
        description:
          'APIs the key covers, in the SecurityPolicy form (versions, allowed_urls, per-API limits); the operator resolves their API IDs. A policy in spec.policies that grants access rights (its partitions.acl on, or no partitions) replaces them: the key is then not Ready, naming it.',
      },
      alias: { type: 'string', maxLength: 1024, description: 'Name of the key, for people and logs.' },
      metaData: stringMap(
        'Metadata of the key (the session `meta_data`), passed on to plugins and templates.',
      ),
      tags: {
        type: 'array',
        items: { type: 'string', maxLength: 1024 },
        maxItems: 100,
        description: 'Tags of the key, copied to its analytics records.',
      },
      expiresAt: {
        type: 'string',
        format: 'date-time',
        description:
          'When the key stops working (RFC 3339). Past it the gateway refuses the key with 401 `Key has expired, please renew`. Absent: never.',
      },
      rotate: {
        type: 'string',
        maxLength: 253,
        description:
          'Any new value makes the operator generate a new key value and write it to the Secret (a rotation).',
      },
      rotation: closedObject(
        { title: 'ApiKeyRotation', description: 'How a new value replaces the old one.' },
        {
          overlapSeconds: {
            type: 'integer',
            minimum: 0,
            maximum: 2592000,
            default: 0,
            description:
              'Seconds the old value keeps working after the Secret changes (0: replaced at once). Token keys only.',
          },
        },
      ),
      contextRef,
    },
  ),
  status: closedObject(
    { title: 'ApiKeyStatus', description: 'Observed state of the key, written by the operator.' },
    {
      keyHash: {
        type: 'string',
        description:
          'SHA-256 (hex) of the token: the ID the gateway stores it under (token keys; certificate keys: of the ID the gateway derives from the certificate).',
      },
      username: { type: 'string', description: 'The basic-auth user the gateway holds (basic keys).' },
      certificateId: {
        type: 'string',
        description: 'ID of the certificate a `certificate` key is bound to, as the gateway holds it.',
      },
      policyIds: strings('IDs of the SecurityPolicies the key applies, resolved from spec.policies.'),
      apiIds: strings(
        'API IDs of spec.accessRights, in order, resolved from the API resources they name (an HTTPRoute: each API generated to serve it).',
      ),
      policies: {
        type: 'string',
        description: 'The policies, as one comma-separated string (for the printer column).',
      },
      expiresAt: { type: 'string', format: 'date-time', description: 'When the key expires, as pushed.' },
      lastRotatedAt: {
        type: 'string',
        format: 'date-time',
        description: 'When the operator last saw the Secret change value (or generated a new one).',
      },
      rotatedFrom: closedObject(
        {
          title: 'ApiKeyRotatedFrom',
          description: 'The previous token, still valid during the rotation overlap.',
        },
        {
          keyHash: { type: 'string', description: 'Hash of the previous token.' },
          until: { type: 'string', format: 'date-time', description: 'When the previous token is deleted.' },
        },
      ),
      rotated: {
        type: 'string',
        description: 'The last spec.rotate value the operator acted on.',
      },
      pushedTo,
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type', description: 'Type of the key.' },
    {
      name: 'Policies',
      type: 'string',
      jsonPath: '.status.policies',
      description: 'IDs of the policies the key applies.',
    },
    { name: 'Expires', type: 'string', jsonPath: '.spec.expiresAt', description: 'When the key expires.' },
    readyColumn,
    ageColumn,
  ],
};
