import type { AccessRight, ApiLimit, ApiResourceRef } from '../../schemas/generated/kinds.ts';
import type { AccessDefinition } from '../../schemas/generated/models.ts';
import { defaultApiVersion } from '../../schemas/kinds/security-policy.ts';
import { accessRef, apiRights } from '../references.ts';

/** -1 for each limit left out: in the gateway a per-API limit replaces the policy's limits whole. */
export function fullLimit(limit: ApiLimit): Required<Omit<ApiLimit, 'max_query_depth'>> {
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
 * Access rights in the SecurityPolicy form (a policy's `access_rights_array`, a key's
 * `accessRights`) -> the gateway's `access_rights`, keyed by API ID. One translation for both, so
 * a key's rights mean what a policy's mean: the default version of the API's kind, limits -1
 * when left out.
 */
export function translateAccessRights(
  rights: readonly AccessRight[] | undefined,
  namespace: string,
  apiId: (ref: ApiResourceRef) => string,
): Record<string, AccessDefinition> {
  const access: Record<string, AccessDefinition> = {};
  // HTTPRoute entries were expanded to the APIs generated for them (route-rights.ts) before this.
  for (const right of apiRights(rights)) {
    const ref = accessRef(right, namespace);
    const id = apiId(ref);
    access[id] = {
      api_id: id,
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
  return access;
}
