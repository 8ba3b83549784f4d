import { authMethodsOf } from '../../schemas/rules/auth.ts';
import { resolveRef } from '../../schemas/rules/references.ts';
import type { ApiDefinitionSpec, NamespacedRef } from '../../schemas/generated/kinds.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';

/** What translation needs besides the resource: IDs resolved by the reconciler. */
export interface ApiTranslationContext {
  apiId: string;
  orgId: string;
  /** Policy ID of a SecurityPolicy reference (explicit `spec.id`, else derived). */
  policyId: (ref: Required<NamespacedRef>) => string;
  /**
   * Gateway ID of the certificate uploaded from a Secret of `certificate_secret_names` (in the
   * API's namespace); the reconciler uploads them before translating.
   */
  certificateId: (secretName: string) => string;
}

/** An ApiDefinition resource, as much of it as translation reads. */
export interface ApiDefinitionInput {
  metadata: { name: string; namespace: string };
  spec: ApiDefinitionSpec;
}

/**
 * ApiDefinition resource -> the gateway's classic API definition. Pure: the same input gives
 * the same output, so its hash tells whether the gateway needs an update.
 *
 * Cluster-only fields are dropped (`contextRef`) or become IDs (`certificate_secret_names` the
 * `certificates` uploaded from them, `jwt_default_policies` policy IDs); implicit defaults users rely on are made explicit (a new API without any auth method
 * uses auth tokens; an unversioned API has the version `Default`).
 */
export function translateApiDefinition(
  cr: ApiDefinitionInput,
  ctx: ApiTranslationContext,
): GatewayApiDefinition {
  const {
    contextRef: _ctx,
    certificate_secret_names,
    jwt_default_policies,
    api_id: _id,
    org_id: _org,
    certificates: _certs,
    ...rest
  } = cr.spec;
  const out: GatewayApiDefinition = {
    ...rest,
    // Only a template has no listen path, and a template is never pushed (the webhook requires it
    // of every other ApiDefinition; without webhooks the gateway refuses the empty one by name).
    proxy: { ...rest.proxy, listen_path: rest.proxy.listen_path ?? '' },
    api_id: ctx.apiId,
    org_id: ctx.orgId,
    active: rest.active ?? true,
    use_keyless: rest.use_keyless ?? false,
  };
  // The seed: a keyed API that names no method uses auth tokens. Which methods run is the
  // gateway's one rule (schemas/rules/auth.ts), so an HMAC- or plugin-only API gets no token.
  const methods = authMethodsOf(out);
  if (
    !out.use_standard_auth &&
    !out.use_mutual_tls_auth &&
    methods.length === 1 &&
    methods[0] === 'auth_token'
  ) {
    out.use_standard_auth = true;
  }
  if (jwt_default_policies && jwt_default_policies.length > 0) {
    out.jwt_default_policies = jwt_default_policies.flatMap((ref) => {
      const resolved = resolveRef(ref, cr.metadata.namespace);
      return resolved === undefined ? [] : [ctx.policyId(resolved)];
    });
  }
  if (certificate_secret_names && certificate_secret_names.length > 0) {
    out.certificates = [...new Set(certificate_secret_names.map((n) => ctx.certificateId(n)))];
  }
  if (!out.version_data?.versions || Object.keys(out.version_data.versions).length === 0) {
    out.version_data = {
      not_versioned: true,
      default_version: 'Default',
      ...out.version_data,
      versions: { Default: { name: 'Default' } },
    };
  }
  return out;
}
