import type { ApiKeySpec, ApiResourceRef } from '../../schemas/generated/kinds.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { translateAccessRights } from './access-rights.ts';

/** What translation needs besides the resource: values resolved by the reconciler. */
export interface KeyTranslationContext {
  orgId: string;
  /** IDs of `spec.policies`, in order. */
  policyIds: readonly string[];
  /**
   * What the key's counters are kept under (the gateway's `counter_id`): one per ApiKey, so
   * that the values a rotation leaves working count against one allowance and the counters
   * outlive the rotation.
   */
  counterId: string;
  /** Namespace of the ApiKey: the default namespace of the APIs `spec.accessRights` names. */
  namespace: string;
  /** API ID of the API an access right names (its status `api_id`). */
  apiId: (ref: ApiResourceRef) => string;
  /** The ID of the certificate a `certificate` key is bound to (the gateway's `certificate`). */
  certificateId?: string;
}

/**
 * ApiKey spec -> the gateway's key (session), without its credential: the token is the key's
 * name (the gateway hashes it), a basic password is added by the reconciler when it changes.
 * `spec.accessRights` translate as a SecurityPolicy's access rights do (access-rights.ts).
 * Pure: every field the operator owns is written, empty when the spec leaves it out, so that a
 * change made behind the operator's back (drift) shows as a difference.
 */
export function translateApiKey(spec: ApiKeySpec, ctx: KeyTranslationContext): GatewaySession {
  const expires = spec.expiresAt === undefined ? 0 : Math.floor(Date.parse(spec.expiresAt) / 1000);
  return {
    org_id: ctx.orgId,
    counter_id: ctx.counterId,
    alias: spec.alias ?? '',
    apply_policies: [...ctx.policyIds],
    access_rights: translateAccessRights(spec.accessRights, ctx.namespace, ctx.apiId),
    meta_data: { ...spec.metaData },
    tags: [...(spec.tags ?? [])],
    expires,
    ...(ctx.certificateId === undefined ? {} : { certificate: ctx.certificateId }),
  };
}
