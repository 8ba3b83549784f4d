import type * as k8s from '@kubernetes/client-node';
import type { SuperGraphStatus } from '../../schemas/generated/kinds.ts';
import { SUPERGRAPH_FINALIZER } from '../../schemas/finalizers.ts';
import {
  composeGraph,
  graphRefOf,
  subgraphProblems,
  subgraphRefsOf,
  subgraphSdlOf,
  supergraphProblems,
  type ComposedSubgraph,
  type GraphError,
} from '../../schemas/rules/graphs.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import { refKey, refOf, sortedRefs, type ObjectRef } from '../references.ts';
import { viewChanged, type ControllerEnv } from './env.ts';
import { apiGraphWatch, going, graphInformers } from './graph-watches.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';
import { HELD_RECHECK_MS, reportFailure, reportSuccess, type ReportDeps } from './status.ts';

export { SUPERGRAPH_FINALIZER };

/** What the reconciler needs; tests pass their own. */
export interface SuperGraphDeps extends ReportDeps<SuperGraphObject> {
  read: (namespace: string, name: string) => Promise<SuperGraphObject | undefined>;
  objects: Pick<SvcObjects<SuperGraphObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  subGraph: (namespace: string, name: string) => SubGraphObject | undefined;
  /** ApiDefinitions whose graph_ref names the SuperGraph (a superset will do: the informer's index). */
  apis: (supergraph: ObjectRef) => readonly Pick<ApiObject, 'metadata' | 'spec'>[];
  log: Logger;
}

/** `Type.field: message (SubGraph s)`: one composition error as a line of a message. */
const errorText = (e: GraphError): string =>
  `${e.field === undefined || e.message.startsWith(`${e.field}:`) ? '' : `${e.field}: `}${e.message}${e.subgraph === undefined ? '' : ` (SubGraph ${e.subgraph})`}`;

/**
 * Composes a SuperGraph's SubGraphs (schemas/rules/graphs.ts, the composition the gateway's
 * supergraph serves) and writes the result to its status: the schema and the SubGraphs with the
 * SDL each had (what the supergraph APIs plan with), or, when they do not compose, every reason
 * field by field in `composition_errors`, while the last good composition stays in the status,
 * still served (`Ready` False, `CompositionFailed`, saying so). A SubGraph not there yet waits
 * (`SubGraphNotFound`); the SubGraph watch queues the SuperGraph when it appears or changes. The
 * finalizer holds the SuperGraph while APIs serve it (`InUse`).
 */
export async function reconcileSuperGraph(key: string, deps: SuperGraphDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const self = { namespace, name };
  const apis = sortedRefs(
    deps
      .apis(self)
      .filter((a) => {
        const g = graphRefOf(a.spec.graphql, a.metadata.namespace);
        return !going(a) && g?.kind === 'SuperGraph' && refKey(g.ref) === key;
      })
      .map(refOf),
  );
  const refs = subgraphRefsOf(obj.spec, namespace);
  const status: SuperGraphStatus = { ...obj.status, observedGeneration: obj.metadata.generation };
  if (apis.length > 0) status.linked_apis = apis.map((r) => ({ kind: 'ApiDefinition' as const, ...r }));
  else delete status.linked_apis;
  const listed = sortedRefs(refs.flatMap((r) => r.ref ?? []));
  if (listed.length > 0) status.linked_subgraphs = listed;
  else delete status.linked_subgraphs;

  if (going(obj)) {
    if (!obj.metadata.finalizers?.includes(SUPERGRAPH_FINALIZER)) return {};
    if (apis.length > 0) {
      const list = apis.map((r) => `ApiDefinition ${refKey(r)}`).join(', ');
      const message = `still used by ${list}: remove it from their graph_ref (or delete them) first`;
      await reportFailure(obj, status, { reason: 'InUse', message, call: false }, deps);
      return { requeueAfterMs: HELD_RECHECK_MS };
    }
    await deps.objects.removeFinalizer(obj, SUPERGRAPH_FINALIZER);
    return {};
  }
  const current = await deps.objects.ensureFinalizer(obj, SUPERGRAPH_FINALIZER);
  const served =
    status.schema === undefined
      ? 'nothing is served until they do'
      : `the composition of generation ${String(status.composedGeneration ?? '?')} is still served`;
  const fail = (reason: string, message: string): Promise<void> =>
    reportFailure(current, status, { reason, message, call: false }, deps);

  const problems = supergraphProblems(current.spec, namespace);
  if (problems.length > 0) {
    await fail('SpecInvalid', `${problems.map((p) => `spec.${p.path}: ${p.message}`).join('; ')}; ${served}`);
    return {};
  }
  const subgraphs: ComposedSubgraph[] = [];
  const errors: GraphError[] = [];
  for (const { path, ref } of refs) {
    if (ref === undefined) continue;
    const sub = deps.subGraph(ref.namespace, ref.name);
    if (sub === undefined || going(sub)) {
      await fail(
        'SubGraphNotFound',
        `spec.${path}: SubGraph ${refKey(ref)} does not exist: the SuperGraph is composed once it does; ${served}`,
      );
      return {};
    }
    for (const p of subgraphProblems(sub.spec))
      errors.push({ subgraph: ref.name, message: `spec.${p.path} of the SubGraph: ${p.message}` });
    subgraphs.push({ name: ref.name, namespace: ref.namespace, sdl: subgraphSdlOf(sub.spec).sdl });
  }
  // The schema the spec gives (schema, else merged_sdl, the reference's two names), if any.
  const given =
    [current.spec.schema, current.spec.merged_sdl].find((v) => v !== undefined && v.trim() !== '') ?? '';
  const composed = errors.length > 0 ? { errors } : composeGraph(subgraphs, given);
  if ('errors' in composed) {
    status.composition_errors = composed.errors;
    const first = composed.errors[0];
    const more =
      composed.errors.length > 1
        ? ` (and ${String(composed.errors.length - 1)} more: composition_errors)`
        : '';
    await fail(
      'CompositionFailed',
      `the SubGraphs do not compose: ${first === undefined ? '' : errorText(first)}${more}; ${served}`,
    );
    return {};
  }
  delete status.composition_errors;
  status.schema = composed.schema;
  status.subgraphs = subgraphs;
  status.composedGeneration = current.metadata.generation;
  const names = subgraphs.map((s) => (s.namespace === namespace ? s.name : `${s.namespace}/${s.name}`));
  await reportSuccess(
    current,
    status,
    {
      reason: 'Composed',
      message: `composed from SubGraphs ${names.join(', ')}${given.trim() === '' ? '' : ' (serving the schema the spec gives)'}`,
      what: `SuperGraph ${key}`,
      where: '',
    },
    deps,
  );
  return {};
}

/**
 * The SuperGraph controller: SuperGraphs are composed again when they change, when a SubGraph
 * they list appears, changes its SDL or goes, and when an ApiDefinition starts or stops serving
 * them.
 */
export function superGraphController(env: ControllerEnv): ControllerSpec {
  const graphs = graphInformers(env);
  const { specs, superGraphs, subGraphs } = graphs;
  const objects = new SvcObjects<SuperGraphObject>(env.kc, specs.superGraph.plural);

  return {
    name: 'supergraph',
    watch: specs.superGraph,
    workers: 8,
    reconcile: (key) =>
      reconcileSuperGraph(key, {
        read: (namespace, name) => Promise.resolve(superGraphs.get(namespace, name)),
        objects,
        events: env.events,
        subGraph: (namespace, name) => subGraphs.get(namespace, name),
        apis: (ref) => graphs.apisServing('SuperGraph', ref),
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        watch: specs.subGraph,
        map: (sub: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, sub, old, (s) => ({ spec: (s as Partial<SubGraphObject>).spec, d: going(s) }))
            ? graphs.listing(refOf(sub)).map((s) => objectKey(s))
            : [],
      },
      apiGraphWatch(graphs, 'SuperGraph'),
    ],
  };
}
