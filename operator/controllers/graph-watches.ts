/**
 * What the SubGraph and SuperGraph controllers both watch: the two graph kinds and the
 * ApiDefinitions serving them, with the indexes that find who names a graph.
 */
import type * as k8s from '@kubernetes/client-node';
import { graphRefOf } from '../../schemas/rules/graphs.ts';
import type { Informer, InformerEvent, WatchSpec } from '../../lib/k8s/informer.ts';
import { refKey, type ObjectRef } from '../references.ts';
import { viewChanged, watchOf, type ControllerEnv, type ControllerWatch } from './env.ts';
import { byGraphRef, bySubgraphRef } from './indexes.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';

/** Whether an object is being deleted. */
export const going = (o: { metadata?: { deletionTimestamp?: unknown } }): boolean =>
  o.metadata?.deletionTimestamp !== undefined;

/** The informers of the graph kinds and of ApiDefinitions, with the lookups over their indexes. */
export interface GraphInformers {
  specs: { subGraph: WatchSpec; superGraph: WatchSpec; api: WatchSpec };
  subGraphs: Informer<SubGraphObject>;
  superGraphs: Informer<SuperGraphObject>;
  /** ApiDefinitions whose graph_ref names the graph. */
  apisServing: (kind: 'SubGraph' | 'SuperGraph', graph: ObjectRef) => ApiObject[];
  /** SuperGraphs that list the SubGraph. */
  listing: (subgraph: ObjectRef) => SuperGraphObject[];
}

/** The informers a graph controller reads. */
export function graphInformers(env: ControllerEnv): GraphInformers {
  const specs = {
    subGraph: watchOf(env, 'SubGraph'),
    superGraph: watchOf(env, 'SuperGraph'),
    api: watchOf(env, 'ApiDefinition'),
  };
  const superGraphs = env.manager.informer<SuperGraphObject>(specs.superGraph);
  return {
    specs,
    subGraphs: env.manager.informer<SubGraphObject>(specs.subGraph),
    superGraphs,
    apisServing: byGraphRef(env.manager.informer<ApiObject>(specs.api)),
    listing: bySubgraphRef(superGraphs),
  };
}

/**
 * The watch of ApiDefinitions for the controller of `kind`: an API that starts or stops serving
 * a graph of that kind (or is being deleted) queues the graph, the one named before and after.
 */
export function apiGraphWatch(graphs: GraphInformers, kind: 'SubGraph' | 'SuperGraph'): ControllerWatch {
  const apiGraph = (o: k8s.KubernetesObject | undefined): string[] => {
    const g = graphRefOf((o as Partial<ApiObject> | undefined)?.spec?.graphql, o?.metadata?.namespace ?? '');
    return g?.kind === kind ? [refKey(g.ref)] : [];
  };
  return {
    watch: graphs.specs.api,
    map: (api: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
      viewChanged(event, api, old, (a) => ({ g: apiGraph(a), d: going(a) }))
        ? [...new Set([...apiGraph(api), ...apiGraph(old)])]
        : [],
  };
}
