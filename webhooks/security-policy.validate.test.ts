import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateSecurityPolicy, validateSecurityPolicyDelete } from './security-policy.validate.ts';
import { apiDefinition, oasApi, securityPolicy } from './testing.ts';

interface Case {
  name: string;
  spec: Record<string, unknown>;
  cluster?: Record<string, unknown>[];
  /** `some`: refused, whatever the errors say. */
  errors?: FieldError[] | 'some';
  warnings?: string[];
}

const orders = apiDefinition('orders');
const right = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'orders',
  ...extra,
});

const cases: Case[] = [
  { name: 'a policy without limits is valid', spec: {} },
  {
    name: 'the example policy is valid',
    spec: {
      state: 'active',
      rate: 100,
      per: 60,
      throttle_interval: 2,
      throttle_retry_limit: 3,
      quota_max: 10000,
      quota_renewal_rate: 86400,
      access_rights_array: [
        right({ versions: ['Default'], allowed_urls: [{ url: '/orders(.*)', methods: ['GET'] }] }),
      ],
    },
    cluster: [orders],
  },
  { name: 'rate and per both disabled', spec: { rate: -1, per: -1 } },
  {
    name: 'rate without per',
    spec: { rate: 100, per: -1 },
    errors: [
      {
        path: 'spec.per',
        type: 'Invalid',
        message:
          'rate is 100 but per is -1: rate and per go together: set per to the window in seconds (such as 60), or set both to -1 to disable rate limiting',
      },
    ],
  },
  {
    name: 'per without rate',
    spec: { rate: -1, per: 60 },
    errors: [
      {
        path: 'spec.rate',
        type: 'Invalid',
        message:
          'per is 60 but rate is -1: rate and per go together: set rate to the requests allowed per window, or set both to -1 to disable rate limiting',
      },
    ],
  },
  {
    name: 'rate 0',
    spec: { rate: 0, per: 60 },
    errors: [
      {
        path: 'spec.rate',
        type: 'Invalid',
        message:
          'rate 0 allows no requests: set the requests allowed per `per` seconds, or -1 to disable rate limiting',
      },
    ],
  },
  {
    name: 'per 0',
    spec: { rate: 10, per: 0 },
    errors: [
      {
        path: 'spec.per',
        type: 'Invalid',
        message:
          'per 0 is an empty window: set the window in seconds (such as 60), or -1 to disable rate limiting',
      },
    ],
  },
  {
    name: 'rate below -1 is a schema error',
    spec: { rate: -5, per: -1 },
    errors: [{ path: 'spec.rate', type: 'Invalid', message: 'must be >= -1' }],
  },
  { name: 'throttling on', spec: { rate: 10, per: 1, throttle_interval: 1, throttle_retry_limit: 3 } },
  {
    name: 'throttle interval without retries',
    spec: { rate: 10, per: 1, throttle_interval: 1, throttle_retry_limit: -1 },
    errors: [
      {
        path: 'spec.throttle_retry_limit',
        type: 'Invalid',
        message:
          'throttle_interval is 1 but throttle_retry_limit is -1: throttling needs both above 0: set throttle_retry_limit (such as 3), or set both to -1 to disable throttling',
      },
    ],
  },
  {
    name: 'throttle retries without interval',
    spec: { rate: 10, per: 1, throttle_retry_limit: 3 },
    errors: [
      {
        path: 'spec.throttle_interval',
        type: 'Invalid',
        message:
          'throttle_retry_limit is 3 but throttle_interval is -1: throttling needs both above 0: set throttle_interval in seconds (such as 1), or set both to -1 to disable throttling',
      },
    ],
  },
  {
    name: 'throttle values of 0 are legal, with warnings',
    spec: { rate: 10, per: 1, throttle_interval: 0, throttle_retry_limit: 0 },
    warnings: [
      'spec.throttle_interval: 0 retries without waiting (busy waiting): set a positive interval in seconds, or -1 to disable throttling',
      'spec.throttle_retry_limit: 0 turns throttling off: set a positive retry limit, or -1 to say so explicitly',
    ],
  },
  {
    name: 'throttling without a rate limit does nothing (warning)',
    spec: { throttle_interval: 1, throttle_retry_limit: 3 },
    warnings: [
      'spec: throttling applies only to requests over the rate limit, and the rate limit is disabled: set rate and per, or set the throttle values to -1',
    ],
  },
  { name: 'quota disabled', spec: { quota_max: -1, quota_renewal_rate: -1 } },
  {
    name: 'a quota needs a renewal rate',
    spec: { quota_max: 1000 },
    errors: [
      {
        path: 'spec.quota_renewal_rate',
        type: 'Required',
        message:
          'quota_max is 1000 but quota_renewal_rate is -1: set the quota period in seconds (3600 hourly, 86400 daily, 2592000 for 30 days)',
      },
    ],
  },
  {
    name: 'quota_max 0',
    spec: { quota_max: 0, quota_renewal_rate: 3600 },
    errors: [
      {
        path: 'spec.quota_max',
        type: 'Invalid',
        message: 'quota_max 0 allows no requests: set the requests allowed per period, or -1 for no quota',
      },
    ],
  },
  {
    name: 'state outside active, draft and deny',
    spec: { state: 'enabled' },
    errors: [{ path: 'spec.state', type: 'NotSupported', message: '"enabled": use active, draft or deny' }],
  },
  { name: 'state draft', spec: { state: 'draft' } },
  {
    name: 'per-API limits follow the same rules, at their own paths',
    spec: {
      access_rights_array: [right({ limit: { rate: 10, per: -1, quota_max: 5, throttle_interval: 0 } })],
    },
    cluster: [orders],
    errors: [
      {
        path: 'spec.access_rights_array[0].limit.per',
        type: 'Invalid',
        message:
          'rate is 10 but per is -1: rate and per go together: set per to the window in seconds (such as 60), or set both to -1 to disable rate limiting',
      },
      {
        path: 'spec.access_rights_array[0].limit.quota_renewal_rate',
        type: 'Required',
        message:
          'quota_max is 5 but quota_renewal_rate is -1: set the quota period in seconds (3600 hourly, 86400 daily, 2592000 for 30 days)',
      },
    ],
    warnings: [
      'spec.access_rights_array[0].limit.throttle_interval: 0 retries without waiting (busy waiting): set a positive interval in seconds, or -1 to disable throttling',
    ],
  },
  {
    name: 'allowed_urls must compile as regular expressions',
    spec: {
      access_rights_array: [
        right({
          allowed_urls: [
            { url: '/orders(.*)', methods: ['GET'] },
            { url: '/orders/(', methods: ['POST'] },
            { url: '/items[', methods: ['GET'] },
          ],
        }),
      ],
    },
    cluster: [orders],
    errors: [
      {
        path: 'spec.access_rights_array[0].allowed_urls[1].url',
        type: 'Invalid',
        message:
          '"/orders/(" is not a valid regular expression (Invalid regular expression: //orders/(/: Unterminated group): escape special characters such as ( [ ? with a backslash',
      },
      {
        path: 'spec.access_rights_array[0].allowed_urls[2].url',
        type: 'Invalid',
        message:
          '"/items[" is not a valid regular expression (Invalid regular expression: //items[/: Unterminated character class): escape special characters such as ( [ ? with a backslash',
      },
    ],
  },
  {
    name: 'endpoint paths must compile as regular expressions, as the gateway compiles them',
    spec: {
      access_rights_array: [
        right({
          endpoints: [
            { path: '/users', methods: [{ name: 'GET', limit: { rate: 1, per: 1 } }] },
            { path: '/users(', methods: [{ name: 'GET', limit: { rate: 1, per: 1 } }] },
          ],
        }),
      ],
    },
    cluster: [orders],
    errors: [
      {
        path: 'spec.access_rights_array[0].endpoints[1].path',
        type: 'Invalid',
        message:
          '"/users(" is not a valid regular expression (Invalid regular expression: //users(/: Unterminated group): escape special characters such as ( [ ? with a backslash',
      },
    ],
  },
  {
    name: 'an API that does not exist yet is a warning, not an error',
    spec: {
      access_rights_array: [right(), { name: 'pets', namespace: 'shop', kind: 'SvcOasApiDefinition' }],
    },
    warnings: [
      'spec.access_rights_array[0]: ApiDefinition default/orders does not exist yet: the policy covers it once it is created',
      'spec.access_rights_array[1]: SvcOasApiDefinition shop/pets does not exist yet: the policy covers it once it is created',
    ],
  },
  {
    name: 'an existing API of another kind and namespace is found',
    spec: {
      access_rights_array: [{ name: 'pets', namespace: 'shop', kind: 'SvcOasApiDefinition', versions: [''] }],
    },
    cluster: [oasApi('pets', 'pets-oas', 'oas.yaml', 'shop')],
  },
  {
    name: 'the same API twice',
    spec: { access_rights_array: [right(), right({ namespace: 'default', kind: 'ApiDefinition' })] },
    cluster: [orders],
    errors: [
      {
        path: 'spec.access_rights_array[1]',
        type: 'Invalid',
        message: 'duplicates access_rights_array[0] (ApiDefinition default/orders): merge the two entries',
      },
    ],
  },
  {
    name: 'an OAS API with the classic default version (warning)',
    spec: { access_rights_array: [{ name: 'pets', kind: 'SvcOasApiDefinition', versions: ['Default'] }] },
    cluster: [oasApi('pets', 'pets-oas')],
    warnings: [
      'spec.access_rights_array[0].versions: SvcOasApiDefinition APIs name their default version "" (an empty string), not "Default"',
    ],
  },
  {
    name: 'an unknown kind is not supported (schema)',
    spec: { access_rights_array: [right({ kind: 'Api' })] },
    errors: [
      {
        path: 'spec.access_rights_array[0].kind',
        type: 'NotSupported',
        message:
          'must be one of "ApiDefinition", "SvcOasApiDefinition", "SvcStreamsApiDefinition", "HTTPRoute"',
      },
    ],
  },
  {
    name: 'an HTTPRoute with a quota and a rate limit, not created yet: admitted without a warning (the operator waits)',
    spec: {
      access_rights_array: [
        {
          kind: 'HTTPRoute',
          name: 'shop',
          namespace: 'apps',
          versions: ['Default'],
          allowed_urls: [{ url: '/items(.*)', methods: ['GET'] }],
          limit: { rate: 10, per: 60, quota_max: 2, quota_renewal_rate: 3600 },
        },
      ],
    },
  },
  {
    name: 'an HTTPRoute with another version or GraphQL permissions: refused, each at its path',
    spec: {
      access_rights_array: [
        {
          kind: 'HTTPRoute',
          name: 'shop',
          versions: ['v2'],
          restricted_types: [{ name: 'Query', fields: ['x'] }],
        },
      ],
    },
    errors: [
      {
        path: 'spec.access_rights_array[0].restricted_types',
        type: 'Forbidden',
        message:
          'GraphQL field permissions apply to GraphQL APIs; the APIs generated for an HTTPRoute proxy HTTP: remove it',
      },
      {
        path: 'spec.access_rights_array[0].versions',
        type: 'Invalid',
        message:
          'the APIs generated for an HTTPRoute have one version, "Default": write versions: ["Default"] or leave it out',
      },
    ],
  },
  {
    name: 'the same HTTPRoute twice; an ApiDefinition of the same name is another entry',
    spec: {
      access_rights_array: [
        { kind: 'HTTPRoute', name: 'orders' },
        right(),
        { kind: 'HTTPRoute', name: 'orders', namespace: 'default' },
      ],
    },
    cluster: [orders],
    errors: [
      {
        path: 'spec.access_rights_array[2]',
        type: 'Invalid',
        message: 'duplicates access_rights_array[0] (HTTPRoute default/orders): merge the two entries',
      },
    ],
  },
  {
    name: 'an HTTPRoute with an invalid limit and allowed URL: the API rules apply',
    spec: {
      access_rights_array: [
        {
          kind: 'HTTPRoute',
          name: 'shop',
          limit: { quota_max: 2 },
          allowed_urls: [{ url: '/a(', methods: ['GET'] }],
        },
      ],
    },
    errors: 'some',
  },
];

describe('validateSecurityPolicy', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateSecurityPolicy(
        securityPolicy('plan', c.spec),
        undefined,
        memoryLookups(c.cluster ?? []),
      );
      if (c.errors === 'some') {
        assert.ok(got.errors.length >= 2, JSON.stringify(got.errors));
        return;
      }
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }
});

describe('validateSecurityPolicyDelete', () => {
  const deleting = (obj: Record<string, unknown>): Record<string, unknown> => ({
    ...obj,
    metadata: { ...(obj.metadata as object), deletionTimestamp: '2025-01-01T00:00:00Z' },
  });
  const cases: { name: string; cluster: Record<string, unknown>[]; refused?: string }[] = [
    {
      name: 'refused while ApiDefinitions name it in jwt_default_policies, listing them',
      cluster: [
        apiDefinition('a', { jwt_default_policies: [{ name: 'plan' }] }),
        apiDefinition(
          'b',
          { jwt_default_policies: [{ name: 'other' }, { name: 'plan', namespace: 'default' }] },
          'team',
        ),
        apiDefinition('c', { jwt_default_policies: [{ name: 'plan' }] }, 'team'),
      ],
      refused:
        'SecurityPolicy default/plan is still used by ApiDefinition default/a, ApiDefinition team/b: remove it from the jwt_default_policies of these APIs (or delete them) first',
    },
    {
      name: 'admitted when the only API naming it is being deleted too',
      cluster: [deleting(apiDefinition('a', { jwt_default_policies: [{ name: 'plan' }] }))],
    },
    {
      name: 'admitted when only covering APIs: the policy does not hold the APIs it lists',
      cluster: [apiDefinition('a'), securityPolicy('plan', { access_rights_array: [{ name: 'a' }] })],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateSecurityPolicyDelete(securityPolicy('plan'), memoryLookups(c.cluster));
      assert.deepEqual(
        got.errors,
        c.refused === undefined ? [] : [{ path: 'metadata.name', type: 'Forbidden', message: c.refused }],
      );
    });
  }
});
