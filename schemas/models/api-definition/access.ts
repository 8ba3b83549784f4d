/**
 * Who may call a classic API and how often: client IP allow and block lists, the API-wide rate
 * limit, and the switches of keys' limits and quotas on this API.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { enforced, closedObject } from '../builders.ts';

const ipList = (what: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: `${what} IPv4 or IPv6 addresses and CIDR ranges, listed explicitly (no wildcards).`,
});

/** The access and limit fields of a classic API. */
export const accessProperties: Record<string, JsonSchema> = {
  enable_ip_whitelisting: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'When true, only requests from `allowed_ips` pass.',
  },
  allowed_ips: enforced(ipList('Client addresses allowed when `enable_ip_whitelisting` is true:')),
  enable_ip_blacklisting: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'When true, requests from `blacklisted_ips` are refused with 403.',
  },
  blacklisted_ips: enforced(ipList('Client addresses refused when `enable_ip_blacklisting` is true:')),
  global_rate_limit: closedObject(
    {
      'x-svc-support': 'supported',
      title: 'GlobalRateLimit',
      description: 'Rate limit of the whole API, for all clients together (keyless APIs too).',
    },
    {
      disabled: { type: 'boolean', description: 'Turns the API-wide limit off.' },
      rate: { type: 'integer', minimum: 0, description: 'Requests allowed per `per` seconds; 0 is off.' },
      per: { type: 'integer', minimum: 0, description: 'Window in seconds.' },
    },
  ),
  disable_rate_limit: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Skip key rate limits on this API.',
  },
  disable_quota: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Skip quota checks on this API (OAS: `skipQuota`).',
  },
  dont_set_quota_on_create: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: "Keep keys' quota counters when keys are created or updated (OAS: `skipQuotaReset`).",
  },
  enforce_org_quotas: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      "Count every key of the API's organisation together against the organisation's quota (`/svc/org/keys/{org_id}`), whatever the keys' own quotas.",
  },
};
