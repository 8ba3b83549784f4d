/**
 * What an ApiDefinition's `graphql.graph_ref` resolves to (schemas/rules/graphs.ts): a SubGraph's
 * SDL, or a SuperGraph's last good composition with the subgraph API serving each of its
 * SubGraphs (an ApiDefinition of the SubGraph's namespace with execution_mode subgraph naming it),
 * called through the gateway as `svc://<its api_id>/`. Until each exists the API waits, with a
 * reason ending in NotFound or NotReady; the watches of the ApiDefinition controller queue it
 * again when one appears or changes.
 */
import { graphRefOf, subgraphSdlOf, type ResolvedGraph } from '../../schemas/rules/graphs.ts';
import { derivedId } from '../ids.ts';
import { refKey, refOf, type ObjectRef } from '../references.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';

/** The cluster as graph resolution reads it: the informer caches in production. */
export interface GraphLookups {
  subGraph: (namespace: string, name: string) => SubGraphObject | undefined;
  superGraph: (namespace: string, name: string) => SuperGraphObject | undefined;
  /** ApiDefinitions whose graph_ref names the SubGraph (execution_mode subgraph). */
  subgraphApis: (subgraph: ObjectRef) => readonly ApiObject[];
}

/** Why an API's graph can't be resolved yet. */
export interface GraphWait {
  reason: 'SubGraphNotFound' | 'SuperGraphNotFound' | 'SuperGraphNotReady' | 'SubGraphApiNotFound';
  message: string;
}

/** The graph an API names, resolved; undefined when it names none. */
export function resolveGraph(
  api: ApiObject,
  graphs: GraphLookups,
): { graph: ResolvedGraph } | GraphWait | undefined {
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
