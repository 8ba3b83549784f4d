/**
 * The references of GraphQL federation, as the webhooks read them: which SuperGraphs list a
 * SubGraph, and which ApiDefinitions name a SubGraph or SuperGraph in `graphql.graph_ref`.
 */
import type { ApiDefinition, SuperGraph } from '../schemas/generated/kinds.ts';
import { graphRefOf, subgraphRefsOf } from '../schemas/rules/graphs.ts';
import { metadataOf, metaOf, specOf } from './access.ts';
import type { Lookups } from './lookups.ts';
import { matching } from './references.ts';

/** SuperGraphs (not being deleted) whose subgraph_refs list the SubGraph `namespace/name`. */
export async function supergraphsListing(
  lookups: Lookups,
  namespace: string,
  name: string,
): Promise<string[]> {
  const listing = await matching(lookups, 'SuperGraph', (sg) => {
    if (metadataOf(sg).deletionTimestamp !== undefined) return false;
    return subgraphRefsOf(specOf<SuperGraph>(sg), metaOf(sg).namespace).some(
      ({ ref }) => ref?.namespace === namespace && ref.name === name,
    );
  });
  return listing.map((sg) => `SuperGraph ${metaOf(sg).namespace}/${metaOf(sg).name}`);
}

/** ApiDefinitions (not being deleted) whose graph_ref names the `kind` `namespace/name`. */
export async function apisServingGraph(
  lookups: Lookups,
  kind: 'SubGraph' | 'SuperGraph',
  namespace: string,
  name: string,
): Promise<string[]> {
  const serving = await matching(lookups, 'ApiDefinition', (api) => {
    if (metadataOf(api).deletionTimestamp !== undefined) return false;
    const graph = graphRefOf(specOf<ApiDefinition>(api).graphql, metaOf(api).namespace);
    return graph?.kind === kind && graph.ref.namespace === namespace && graph.ref.name === name;
  });
  return serving.map((a) => `ApiDefinition ${metaOf(a).namespace}/${metaOf(a).name}`);
}
