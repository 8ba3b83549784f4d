/**
 * The developer portal's kinds as the dashboard's portal admin API takes them (docs/portal.md):
 * pure functions of the spec and what the reconciler resolved (policy and product IDs).
 */
import type { APIDescriptionSpec, PortalConfigSpec } from '../../schemas/generated/kinds.ts';

/** A portal document, as sent. */
export type PortalDocument = Record<string, unknown>;

/**
 * An APIDescription as a portal product. `show` absent is false, as in the reference; the two
 * descriptions are shown one after the other; `swagger` documentation is held by the dashboard,
 * `swagger_custom_url` read by it from the URL when a developer asks.
 */
export function portalProduct(
  id: string,
  spec: APIDescriptionSpec,
  policyId: string | undefined,
): PortalDocument {
  const description = [spec.short_description, spec.long_description]
    .filter((d): d is string => d !== undefined && d.trim() !== '')
    .join('\n\n');
  const out: PortalDocument = {
    id,
    name: spec.name,
    show: spec.show === true,
    auth_type: spec.auth_type === 'keyless' ? 'keyless' : 'authToken',
    key_approval: spec.key_approval ?? 'manual',
    subscribable_events: [...(spec.subscribable_events ?? [])],
  };
  if (description !== '') out.description = description;
  if (policyId !== undefined) out.policy_id = policyId;
  const docs = spec.docs;
  if (docs?.documentation !== undefined && docs.documentation.trim() !== '') {
    out.docs =
      docs.doc_type === 'swagger_custom_url'
        ? { doc_type: 'oas', url: docs.documentation.trim() }
        : { doc_type: 'oas', documentation: docs.documentation };
  }
  return out;
}

/** A PortalAPICatalogue as a portal catalogue: its products by their portal IDs, in order. */
export function portalCatalogue(id: string, name: string, productIds: readonly string[]): PortalDocument {
  return { id, name, apis: [...productIds] };
}

/** A PortalConfig as the portal's settings; absent fields keep the dashboard's defaults. */
export function portalSettings(spec: PortalConfigSpec): PortalDocument {
  const out: PortalDocument = {};
  if (spec.disable_signup !== undefined) out.signup_enabled = !spec.disable_signup;
  if (spec.developer_approval !== undefined) out.developer_approval = spec.developer_approval;
  if (spec.session_lifetime_s !== undefined) out.session_lifetime_s = spec.session_lifetime_s;
  return out;
}
