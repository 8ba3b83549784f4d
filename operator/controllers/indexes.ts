/**
 * The informers' secondary indexes, one definition each (controllers share informers): "which
 * objects refer to X" is a map lookup instead of a scan of every object, so that a change among
 * 10,000 objects costs the same as among 10 (docs/design/operator-scale.md). Each function adds
 * its index once and returns the lookup.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../lib/k8s/informer.ts';
import type { ApiResourceRef, NamespacedRef } from '../../schemas/generated/kinds.ts';
import { accessRefs, apiRefText, jwtPolicyRefs, refKey, type ObjectRef } from '../references.ts';
import { internalRefsOf } from '../translate/api-definition.ts';
import type { ApiDefinitionSpec } from '../../schemas/generated/kinds.ts';
import { certificateSecretKeys } from '../../schemas/rules/secret-refs.ts';
import { contextKeyOf } from './env.ts';
import { graphRefOf, subgraphRefsOf } from '../../schemas/rules/graphs.ts';
import { subgraphApiRefsOf } from '../../schemas/rules/subgraph-apis.ts';

/** Objects whose `contextRef` names the OperatorContext `namespace/name`. */
export function byContext<T extends k8s.KubernetesObject>(inf: Informer<T>): (contextKey: string) => T[] {
  inf.addIndex('context', contextKeyOf);
  return (contextKey) => inf.byIndex('context', contextKey);
}

/**
 * Objects whose access rights name an API: SecurityPolicies (`access_rights_array`) by default,
 * or what `refsOf` reads (an ApiKey's `spec.accessRights`).
 */
export function byAccessRight<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
  refsOf: (obj: T) => ApiResourceRef[] = (p) => accessRefs(p),
): (api: ApiResourceRef) => T[] {
  inf.addIndex('access-right', (p) => refsOf(p).map(apiRefText));
  return (api) => inf.byIndex('access-right', apiRefText(api));
}

/** ApiDefinitions that name a SecurityPolicy in `jwt_default_policies`. */
export function byJwtPolicy<T extends k8s.KubernetesObject>(inf: Informer<T>): (policy: ObjectRef) => T[] {
  inf.addIndex('jwt-policy', (api) => jwtPolicyRefs(api as Parameters<typeof jwtPolicyRefs>[0]).map(refKey));
  return (policy) => inf.byIndex('jwt-policy', refKey(policy));
}

/**
 * ApiDefinitions whose internal targets (`proxy.target_internal`, `rewrite_to_internal`) name an
 * ApiDefinition.
 */
export function byInternalTarget<T extends k8s.KubernetesObject>(inf: Informer<T>): (api: ObjectRef) => T[] {
  inf.addIndex('internal-target', (api) => {
    const spec = (api as { spec?: ApiDefinitionSpec }).spec;
    if (spec === undefined) return [];
    const refs = internalRefsOf(spec, api.metadata?.namespace ?? '').flatMap((r) => r.ref ?? []);
    return [...new Set(refs.map(refKey))];
  });
  return (api) => inf.byIndex('internal-target', refKey(api));
}

/**
 * ApiDefinitions that name a Secret for certificates: served (`certificate_secret_names`, whose
 * entries may be of another namespace), client, upstream or pinned (schemas/rules/secret-refs.ts).
 */
export function byCertificateSecret<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
): (secret: ObjectRef) => T[] {
  inf.addIndex('certificate-secret', (api) => {
    return certificateSecretKeys((api as { spec?: ApiDefinitionSpec }).spec, api.metadata?.namespace ?? '');
  });
  return (secret) => inf.byIndex('certificate-secret', refKey(secret));
}

/** Objects indexed by one reference each (the ConfigMap of an OAS API, say). */
export function byRef<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
  name: string,
  refOf: (obj: T) => Required<NamespacedRef> | undefined,
): (ref: ObjectRef) => T[] {
  inf.addIndex(name, (obj) => {
    const ref = refOf(obj);
    return ref === undefined ? [] : [refKey(ref)];
  });
  return (ref) => inf.byIndex(name, refKey(ref));
}

/** ApiDefinitions whose `graphql.graph_ref` names a SubGraph (mode subgraph) or a SuperGraph (mode supergraph). */
export function byGraphRef<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
): (kind: 'SubGraph' | 'SuperGraph', graph: ObjectRef) => T[] {
  inf.addIndex('graph-ref', (api) => {
    const graph = graphRefOf(
      (api as { spec?: ApiDefinitionSpec }).spec?.graphql,
      api.metadata?.namespace ?? '',
    );
    return graph === undefined ? [] : [`${graph.kind} ${refKey(graph.ref)}`];
  });
  return (kind, graph) => inf.byIndex('graph-ref', `${kind} ${refKey(graph)}`);
}

/** SuperGraphs whose `subgraph_refs` (or `subgraphs_refs`) list a SubGraph. */
export function bySubgraphRef<T extends k8s.KubernetesObject>(
  inf: Informer<T>,
): (subgraph: ObjectRef) => T[] {
  inf.addIndex('subgraph-ref', (sg) => {
    const spec = (sg as { spec?: Parameters<typeof subgraphRefsOf>[0] }).spec;
    const refs = subgraphRefsOf(spec, sg.metadata?.namespace ?? '').flatMap((r) => r.ref ?? []);
    return [...new Set(refs.map(refKey))];
  });
  return (subgraph) => inf.byIndex('subgraph-ref', refKey(subgraph));
}

/** ApiDefinitions whose `graphql.supergraph.subgraphs_refs` name an ApiDefinition (a subgraph API). */
export function bySubgraphApiRef<T extends k8s.KubernetesObject>(inf: Informer<T>): (api: ObjectRef) => T[] {
  inf.addIndex('subgraph-api-ref', (api) => {
    const graphql = (api as { spec?: ApiDefinitionSpec }).spec?.graphql;
    const refs = (subgraphApiRefsOf(graphql, api.metadata?.namespace ?? '') ?? []).flatMap(
      (r) => r.ref ?? [],
    );
    return [...new Set(refs.map(refKey))];
  });
  return (api) => inf.byIndex('subgraph-api-ref', refKey(api));
}
