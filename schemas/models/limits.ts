import type { JsonSchema } from '../json-schema.ts';
import { disabledOrPositive, httpMethod } from '../common.ts';
import { closedObject, nonEmptyString, strings } from './builders.ts';

/** Rate, throttle and quota fields, shared by policies, their per-API limits and keys. */
export const limitProperties: Record<string, JsonSchema> = {
  rate: disabledOrPositive('Requests allowed per `per` seconds.'),
  per: disabledOrPositive('Rate-limit window in seconds.'),
  throttle_interval: disabledOrPositive(
    'Seconds a request over the rate limit waits before it is retried. Throttling applies only when both throttle values are above 0.',
  ),
  throttle_retry_limit: disabledOrPositive(
    'How many times a request over the rate limit is retried before it gets 429.',
  ),
  quota_max: disabledOrPositive('Requests allowed per quota period; -1 means unlimited.'),
  quota_renewal_rate: disabledOrPositive(
    'Length of the quota period in seconds (3600 hourly, 86400 daily, 2592000 thirty days).',
  ),
};

/** Per-API limit of a policy or key: without it the API inherits the root limits. */
export const apiLimit: JsonSchema = closedObject(
  {
    title: 'ApiLimit',
    description:
      'Rate, throttle, quota and GraphQL depth limits for this API only. Without it the global limits apply; with it, they replace the global limits whole for this API.',
  },
  {
    ...limitProperties,
    max_query_depth: disabledOrPositive(
      'Deepest GraphQL query allowed on this API (instead of the root `max_query_depth`); deeper queries get 403.',
    ),
  },
);

/** Per-endpoint rate limits. */
export const endpointLimit: JsonSchema = closedObject(
  {
    title: 'EndpointRateLimit',
    description: 'Rate limit of one method on one path.',
    required: ['name', 'limit'],
  },
  {
    name: httpMethod,
    limit: closedObject(
      { title: 'RateLimit', description: 'Requests allowed per window.', required: ['rate', 'per'] },
      {
        rate: { type: 'integer', minimum: 1, description: 'Requests allowed per `per` seconds.' },
        per: { type: 'integer', minimum: 1, description: 'Window in seconds.' },
      },
    ),
  },
);

/** Endpoint list of an access right. */
export const endpoints: JsonSchema = {
  type: 'array',
  description: 'Per-endpoint rate limits.',
  items: closedObject(
    {
      title: 'Endpoint',
      description: 'A path and the rate limits of its methods.',
      required: ['path', 'methods'],
    },
    {
      path: nonEmptyString('Path of the endpoint, relative to the listen path.'),
      methods: {
        type: 'array',
        items: endpointLimit,
        description: 'Methods of the endpoint and their limits.',
      },
    },
  ),
};

/** Allowed URLs of an access right. */
export const allowedUrls: JsonSchema = {
  type: 'array',
  description: 'When set, only these method and path pairs are allowed (403 otherwise).',
  items: closedObject(
    { title: 'AllowedUrl', description: 'A path pattern and the methods allowed on it.', required: ['url'] },
    {
      url: nonEmptyString('Path as a regular expression, for example `/users(.*)`.'),
      methods: { type: 'array', items: httpMethod, description: 'Allowed methods; empty allows none.' },
    },
  ),
};

/** GraphQL types and fields of an access right (`restricted_types`, `allowed_types`). */
export const graphqlTypeFields = (description: string): JsonSchema => ({
  type: 'array',
  description,
  items: closedObject(
    { title: 'GraphqlTypeFields', description: 'Fields of one GraphQL type.', required: ['name', 'fields'] },
    {
      name: nonEmptyString('Name of the GraphQL type, such as `User`.'),
      fields: strings('Field names of the type.'),
    },
  ),
});

/** Field-based permissions of an access right to a GraphQL API. */
export const graphqlFieldPermissions: Record<string, JsonSchema> = {
  restricted_types: graphqlTypeFields(
    'GraphQL fields the key may not query: a query selecting one is refused with 403, naming it.',
  ),
  allowed_types: graphqlTypeFields(
    'When set, the only GraphQL fields the key may query (introspection fields aside); it wins over restricted_types.',
  ),
};

/** Partitions of a policy. */
export const partitions: JsonSchema = closedObject(
  {
    title: 'PolicyPartitions',
    description:
      'Which parts of the policy apply. When any is true, only the true parts are applied to keys (the rest come from the key or other policies).',
  },
  {
    quota: { type: 'boolean', description: 'Apply the request quota.' },
    rate_limit: { type: 'boolean', description: 'Apply the rate limit and throttling.' },
    acl: { type: 'boolean', description: 'Apply the access rights.' },
    complexity: { type: 'boolean', description: 'Apply the GraphQL complexity limits.' },
  },
);
