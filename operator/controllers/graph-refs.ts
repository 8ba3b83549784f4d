/**
 * What an ApiDefinition's `graphql.graph_ref` resolves to (schemas/rules/graphs.ts): a SubGraph's
 * SDL, or a SuperGraph's last good composition with the subgraph API serving each of its
 * SubGraphs (an ApiDefinition of the SubGraph's namespace with execution_mode subgraph naming it),
 * called through the gateway as `svc://<its api_id>/`. Until each exists the API waits, with a
 * reason ending in NotFound or NotReady; the watches of the ApiDefinition controller queue it
 * again when one appears or changes. A supergraph API naming its subgraph APIs itself
 * (`supergraph.subgraphs_refs`, the reference's earlier form: schemas/rules/subgraph-apis.ts) is
 * composed from them the same way, and waits the same way for each.
 */
import { graphRefOf, subgraphSdlOf, type ResolvedGraph } from '../../schemas/rules/graphs.ts';
import { derivedId } from '../ids.ts';
import { composeSubgraphApis } from '../../schemas/rules/subgraph-apis.ts';
import { refKey, refOf, type ObjectRef } from '../references.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';

/** The cluster as graph resolution reads it: the informer caches in production. */
export interface GraphLookups {
  subGraph: (namespace: string, name: string) => SubGraphObject | undefined;
  superGraph: (namespace: string, name: string) => SuperGraphObject | undefined;
  /** ApiDefinitions whose graph_ref names the SubGraph (execution_mode subgraph). */
  subgraphApis: (subgraph: ObjectRef) => readonly ApiObject[];
  /** An ApiDefinition by name (`supergraph.subgraphs_refs` names subgraph APIs); absent: none. */
  api?: (namespace: string, name: string) => ApiObject | undefined;
}

/** Why an API's graph can't be resolved yet. */
export interface GraphWait {
  reason:
    | 'SubGraphNotFound'
    | 'SuperGraphNotFound'
    | 'SuperGraphNotReady'
    | 'SubGraphApiNotFound'
    | 'SubGraphApiInvalid'
    | 'CompositionFailed';
  message: string;
}

/** The graph an API names, resolved; undefined when it names none. */
export function resolveGraph(
  api: ApiObject,
  graphs: GraphLookups,
): { graph: ResolvedGraph } | GraphWait | undefined {
  // The reference's earlier form: subgraph APIs by name, composed here as a SuperGraph is.
  const live = <T extends { metadata: { deletionTimestamp?: unknown } }>(o: T | undefined): T | undefined =>
    o?.metadata.deletionTimestamp === undefined ? o : undefined;
  const byApis = composeSubgraphApis(api.spec.graphql, api.metadata.namespace, {
    api: (ref) => {
      const found = live(graphs.api?.(ref.namespace, ref.name));
      return found === undefined
        ? undefined
        : { id: found.spec.api_id ?? derivedId(ref.namespace, ref.name), graphql: found.spec.graphql };
    },
    subGraphSdl: (ref) => {
      const sub = live(graphs.subGraph(ref.namespace, ref.name));
      return sub === undefined ? undefined : subgraphSdlOf(sub.spec).sdl;
    },
  });
  if (byApis !== undefined) return byApis;
  const named = graphRefOf(api.spec.graphql, api.metadata.namespace);
  if (named === undefined) return undefined;
  const { kind, ref } = named;
  if (kind === 'SubGraph') {
    const sub = graphs.subGraph(ref.namespace, ref.name);
    if (sub === undefined || sub.metadata.deletionTimestamp !== undefined)
      return {
        reason: 'SubGraphNotFound',
        message: `spec.graphql.graph_ref: SubGraph ${refKey(ref)} does not exist: the API is served once it does`,
      };
    return { graph: { kind, sdl: subgraphSdlOf(sub.spec).sdl } };
  }
  const sup = graphs.superGraph(ref.namespace, ref.name);
  if (sup === undefined || sup.metadata.deletionTimestamp !== undefined)
    return {
      reason: 'SuperGraphNotFound',
      message: `spec.graphql.graph_ref: SuperGraph ${refKey(ref)} does not exist: the API is served once it does`,
    };
  const schema = sup.status?.schema ?? '';
  if (schema === '') {
    const why = sup.status?.conditions?.find((c) => c.type === 'Ready')?.message;
    return {
      reason: 'SuperGraphNotReady',
      message: `spec.graphql.graph_ref: SuperGraph ${refKey(ref)} has no composition yet${why === undefined ? '' : ` (${why})`}: the API is served once it has`,
    };
  }
  const subgraphs: { name: string; url: string; sdl: string }[] = [];
  for (const s of sup.status?.subgraphs ?? []) {
    // One API serves a SubGraph; were there several, the first by namespace/name.
    const found = graphs
      .subgraphApis({ namespace: s.namespace, name: s.name })
      .filter((a) => a.metadata.deletionTimestamp === undefined)
      .sort((a, b) => refKey(refOf(a)).localeCompare(refKey(refOf(b))))[0];
    if (found === undefined)
      return {
        reason: 'SubGraphApiNotFound',
        message: `SuperGraph ${refKey(ref)} composes SubGraph ${s.namespace}/${s.name}, which no ApiDefinition serves (execution_mode subgraph, graph_ref ${s.name}, in namespace ${s.namespace}): the API is served once one does`,
      };
    const id = found.spec.api_id ?? derivedId(found.metadata.namespace, found.metadata.name);
    subgraphs.push({ name: s.name, url: `svc://${id}/`, sdl: s.sdl });
  }
  return { graph: { kind, schema, subgraphs } };
}
