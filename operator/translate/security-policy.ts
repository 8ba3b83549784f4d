import type { ApiResourceRef, SecurityPolicySpec } from '../../schemas/generated/kinds.ts';
import type { GatewayPolicy } from '../../schemas/generated/models.ts';
import { fullLimit, translateAccessRights } from './access-rights.ts';

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
  const { id: _id, contextRef: _ctx, context: _oldCtx, access_rights_array, ...rest } = cr.spec;
  const access = translateAccessRights(access_rights_array, cr.metadata.namespace, ctx.apiId);
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
