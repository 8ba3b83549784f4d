import { isTcpApi } from '../../schemas/rules/tcp.ts';
import { authMethodsOf } from '../../schemas/rules/auth.ts';
import { resolveRef, type ResolvedRef } from '../../schemas/rules/references.ts';
import { internalTargetsOf, internalUrl } from '../../schemas/rules/internal-target.ts';
import type { ApiDefinitionSpec, NamespacedRef } from '../../schemas/generated/kinds.ts';
import type {
  GatewayApiDefinition,
  RoutingTrigger,
  URLRewriteMeta,
  VersionData,
} from '../../schemas/generated/models.ts';
import { derivedId } from '../ids.ts';
import { inlineGraph, type ResolvedGraph } from '../../schemas/rules/graphs.ts';

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
  /**
   * Public-key pin (`sha256/<base64>`) of a Secret's `tls.crt`, for `pinned_public_keys_refs`;
   * the reconciler reads the Secrets before translating.
   */
  publicKeyPin?: (secretName: string) => string;
  /**
   * API ID of an ApiDefinition an internal target names (`target_internal`,
   * `rewrite_to_internal`); the reconciler checks first that it exists (`internalRefsOf`).
   * Without it, the ID derived from the namespaced name.
   */
  internalApiId?: (ref: Required<NamespacedRef>) => string;
  /**
   * What `graphql.graph_ref` names, resolved by the reconciler: a SubGraph's SDL, or a
   * SuperGraph's composition and the subgraph API serving each of its SubGraphs.
   */
  graph?: ResolvedGraph;
}

/** The ApiDefinitions an API's internal targets name, each with its field path under `spec.`. */
export function internalRefsOf(
  spec: ApiDefinitionSpec,
  namespace: string,
): { path: string; ref: ResolvedRef | undefined }[] {
  return internalTargetsOf(spec).map(({ path, value }) => ({
    path: `spec.${path}.target`,
    ref: resolveRef(value.target, namespace),
  }));
}

/** An entry or trigger with its `rewrite_to_internal` turned into a `svc://` `rewrite_to`. */
function withInternalRewrite<T extends { rewrite_to?: string; rewrite_to_internal?: object }>(
  e: T,
  url: (t: object) => string | undefined,
): T {
  if (e.rewrite_to_internal === undefined) return e;
  const { rewrite_to_internal, ...rest } = e;
  const to = url(rewrite_to_internal);
  return (to === undefined ? rest : { ...rest, rewrite_to: to }) as T;
}

/** `version_data` with every `rewrite_to_internal` written as a `svc://` `rewrite_to`. */
function internalRewrites(vd: VersionData, url: (t: object) => string | undefined): VersionData {
  const versions = Object.fromEntries(
    Object.entries(vd.versions ?? {}).map(([name, v]) => {
      const list = v.extended_paths?.url_rewrites;
      if (list === undefined) return [name, v];
      const url_rewrites = list.map((e: URLRewriteMeta) => {
        const entry = withInternalRewrite(e, url);
        return entry.triggers === undefined
          ? entry
          : { ...entry, triggers: entry.triggers.map((t: RoutingTrigger) => withInternalRewrite(t, url)) };
      });
      return [name, { ...v, extended_paths: { ...v.extended_paths, url_rewrites } }];
    }),
  );
  return { ...vd, versions };
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
 * `certificates` uploaded from them, `client_certificate_refs` and `upstream_certificate_refs`
 * IDs in `client_certificates` and `upstream_certificates`, `pinned_public_keys_refs` pins in
 * `pinned_public_keys`, `jwt_default_policies` policy IDs); implicit defaults users rely on are made explicit (a new API without any auth method
 * uses auth tokens; an unversioned API has the version `Default`).
 */
export function translateApiDefinition(
  cr: ApiDefinitionInput,
  ctx: ApiTranslationContext,
): GatewayApiDefinition {
  const {
    contextRef: _ctx,
    context: _oldCtx,
    certificate_secret_names,
    client_certificate_refs,
    upstream_certificate_refs,
    pinned_public_keys_refs,
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
  // A TCP or TLS API's connections carry no credentials: it has no auth method (rules/tcp.ts).
  const methods = isTcpApi(out) ? [] : authMethodsOf(out);
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
  // Internal targets: the ApiDefinition named becomes `svc://<its api_id>/<path>?<query>`.
  if (internalTargetsOf(cr.spec).length > 0) {
    const idOf = ctx.internalApiId ?? ((ref: Required<NamespacedRef>) => derivedId(ref.namespace, ref.name));
    const url = (t: object): string | undefined => {
      const ref = resolveRef((t as { target?: unknown }).target, cr.metadata.namespace);
      return ref === undefined ? undefined : internalUrl(t, idOf(ref));
    };
    const { target_internal, ...proxy } = out.proxy;
    const to = target_internal === undefined ? undefined : url(target_internal);
    out.proxy = to === undefined ? proxy : { ...proxy, target_url: to };
    if (out.version_data !== undefined) out.version_data = internalRewrites(out.version_data, url);
  }
  // A SubGraph or SuperGraph by name, or subgraph APIs by name (`supergraph.subgraphs_refs`),
  // become the gateway's inline form (its SDL, or its subgraphs and composition): the gateway knows
  // no graphs by name.
  if (out.graphql?.graph_ref !== undefined || out.graphql?.supergraph?.subgraphs_refs !== undefined) {
    const { graph_ref: _ref, ...graphql } = out.graphql;
    out.graphql = ctx.graph === undefined ? graphql : inlineGraph(out.graphql, ctx.graph);
  }
  if (certificate_secret_names && certificate_secret_names.length > 0) {
    out.certificates = [...new Set(certificate_secret_names.map((n) => ctx.certificateId(n)))];
  }
  // Certificates by Secret join those given by ID (schemas/rules/secret-refs.ts).
  if (client_certificate_refs && client_certificate_refs.length > 0) {
    out.client_certificates = [
      ...new Set([
        ...(out.client_certificates ?? []),
        ...client_certificate_refs.map((n) => ctx.certificateId(n)),
      ]),
    ];
  }
  const upstreamRefs = Object.entries(upstream_certificate_refs ?? {});
  if (upstreamRefs.length > 0) {
    out.upstream_certificates = {
      ...out.upstream_certificates,
      ...Object.fromEntries(upstreamRefs.map(([host, n]) => [host, ctx.certificateId(n)])),
    };
  }
  const pinRefs = Object.entries(pinned_public_keys_refs ?? {});
  if (pinRefs.length > 0) {
    const pins: Record<string, string> = { ...out.pinned_public_keys };
    for (const [host, n] of pinRefs) {
      const pin = ctx.publicKeyPin?.(n) ?? '';
      const own = pins[host]?.trim() ?? '';
      pins[host] = own === '' ? pin : `${own}, ${pin}`;
    }
    out.pinned_public_keys = pins;
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
