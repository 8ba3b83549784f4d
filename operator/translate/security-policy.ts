import type { ApiLimit, ApiResourceRef, SecurityPolicySpec } from '../../schemas/generated/kinds.ts';
import type { AccessDefinition, GatewayPolicy } from '../../schemas/generated/models.ts';
import { defaultApiVersion } from '../../schemas/kinds/security-policy.ts';
import { accessRef } from '../references.ts';

/** What translation needs besides the resource: IDs resolved by the reconciler. */
export interface PolicyTranslationContext {
  polId: string;
  orgId: string;
  /** API ID of the API an access right names (its status `api_id`). */
  apiId: (ref: ApiResourceRef) => string;
}

/** A SecurityPolicy resource, as much of it as translation reads. */
export interface SecurityPolicyInput {
  metadata: { name: string; namespace: string };
  spec: SecurityPolicySpec;
}

/** -1 for each limit left out: in the gateway a per-API limit replaces the policy's limits whole. */
function fullLimit(limit: ApiLimit): Required<Omit<ApiLimit, 'max_query_depth'>> {
  return {
    rate: limit.rate ?? -1,
    per: limit.per ?? -1,
    throttle_interval: limit.throttle_interval ?? -1,
    throttle_retry_limit: limit.throttle_retry_limit ?? -1,
    quota_max: limit.quota_max ?? -1,
    quota_renewal_rate: limit.quota_renewal_rate ?? -1,
  };
}

/**
 * SecurityPolicy resource -> the gateway's policy. Pure: the same input gives the same output,
 * so its hash tells whether the gateway needs an update.
 *
 * Cluster-only fields (`id`, `contextRef`) are dropped; `access_rights_array` becomes
 * `access_rights` keyed by API ID; the defaults users rely on are made explicit (state `active`,
 * limits -1 when left out, the default version of the API's kind).
 */
export function translateSecurityPolicy(
  cr: SecurityPolicyInput,
  ctx: PolicyTranslationContext,
): GatewayPolicy {
  const { id: _id, contextRef: _ctx, access_rights_array, ...rest } = cr.spec;
  const access: Record<string, AccessDefinition> = {};
  for (const right of access_rights_array ?? []) {
    const ref = accessRef(right, cr.metadata.namespace);
    const apiId = ctx.apiId(ref);
    access[apiId] = {
      api_id: apiId,
      versions: right.versions ?? [defaultApiVersion[ref.kind]],
      ...(right.allowed_urls === undefined ? {} : { allowed_urls: right.allowed_urls }),
      ...(right.limit === undefined
        ? {}
        : { limit: { ...fullLimit(right.limit), max_query_depth: right.limit.max_query_depth ?? -1 } }),
      ...(right.endpoints === undefined ? {} : { endpoints: right.endpoints }),
      ...(right.restricted_types === undefined ? {} : { restricted_types: right.restricted_types }),
      ...(right.allowed_types === undefined ? {} : { allowed_types: right.allowed_types }),
    };
  }
  return {
    id: ctx.polId,
    org_id: ctx.orgId,
    ...rest,
    state: rest.state ?? 'active',
    active: rest.active ?? true,
    ...fullLimit(rest),
    access_rights: access,
  };
}
