import type * as k8s from '@kubernetes/client-node';
import type { SubGraphStatus } from '../../schemas/generated/kinds.ts';
import { SUBGRAPH_FINALIZER } from '../../schemas/finalizers.ts';
import { graphRefOf, subgraphProblems, subgraphRefsOf } from '../../schemas/rules/graphs.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects } from '../../lib/k8s/objects.ts';
import { splitKey, type InformerEvent } from '../../lib/k8s/informer.ts';
import { refKey, refOf, sortedRefs, type ObjectRef } from '../references.ts';
import { viewChanged, type ControllerEnv } from './env.ts';
import { apiGraphWatch, going, graphInformers } from './graph-watches.ts';
import type { ApiObject, SubGraphObject, SuperGraphObject } from './objects.ts';
import { HELD_RECHECK_MS, reportFailure, reportSuccess, type ReportDeps } from './status.ts';

export { SUBGRAPH_FINALIZER };

/** What the reconciler needs; tests pass their own. */
export interface SubGraphDeps extends ReportDeps<SubGraphObject> {
  read: (namespace: string, name: string) => Promise<SubGraphObject | undefined>;
  objects: Pick<SvcObjects<SubGraphObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  /** ApiDefinitions whose graph_ref names the SubGraph (a superset will do: the informer's index). */
  apis: (subgraph: ObjectRef) => readonly Pick<ApiObject, 'metadata' | 'spec'>[];
  /** SuperGraphs that list the SubGraph (a superset will do). */
  supergraphs: (subgraph: ObjectRef) => readonly Pick<SuperGraphObject, 'metadata' | 'spec'>[];
  log: Logger;
}

/** Who uses a SubGraph: the APIs serving it and the SuperGraphs composing it, none being deleted. */
function usersOf(
  ref: ObjectRef,
  deps: Pick<SubGraphDeps, 'apis' | 'supergraphs'>,
): { apis: ObjectRef[]; supergraphs: ObjectRef[] } {
  const apis = deps.apis(ref).filter((a) => {
    const g = graphRefOf(a.spec.graphql, a.metadata.namespace);
    return !going(a) && g?.kind === 'SubGraph' && refKey(g.ref) === refKey(ref);
  });
  const supergraphs = deps
    .supergraphs(ref)
    .filter(
      (s) =>
        !going(s) &&
        subgraphRefsOf(s.spec, s.metadata.namespace).some(
          (r) => r.ref !== undefined && refKey(r.ref) === refKey(ref),
        ),
    );
  return { apis: sortedRefs(apis.map(refOf)), supergraphs: sortedRefs(supergraphs.map(refOf)) };
}

/**
 * A SubGraph holds an SDL; nothing of it goes to the gateway by itself (its subgraph APIs carry
 * it). The reconciler lists who uses it in the status (the APIs serving it, the SuperGraphs
 * composing it), says whether its SDL builds (`Ready`: `Valid`, or `SpecInvalid` when the webhooks
 * were bypassed), and holds it with its finalizer while any of them still uses it (`InUse`).
 */
export async function reconcileSubGraph(key: string, deps: SubGraphDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const ref = { namespace, name };
  const users = usersOf(ref, deps);
  const named = [
    ...users.supergraphs.map((r) => `SuperGraph ${refKey(r)}`),
    ...users.apis.map((r) => `ApiDefinition ${refKey(r)}`),
  ];
  const status: SubGraphStatus = { ...obj.status, observedGeneration: obj.metadata.generation };
  if (users.apis.length > 0)
    status.linked_apis = users.apis.map((r) => ({ kind: 'ApiDefinition' as const, ...r }));
  else delete status.linked_apis;
  if (users.supergraphs.length > 0) status.linked_supergraphs = users.supergraphs;
  else delete status.linked_supergraphs;

  if (going(obj)) {
    if (!obj.metadata.finalizers?.includes(SUBGRAPH_FINALIZER)) return {};
    if (named.length > 0) {
      const message = `still used by ${named.join(', ')}: remove it from their subgraph_refs and graph_ref (or delete them) first`;
      await reportFailure(obj, status, { reason: 'InUse', message, call: false }, deps);
      // Their watches queue it again; this is the backstop.
      return { requeueAfterMs: HELD_RECHECK_MS };
    }
    await deps.objects.removeFinalizer(obj, SUBGRAPH_FINALIZER);
    return {};
  }
  const current = await deps.objects.ensureFinalizer(obj, SUBGRAPH_FINALIZER);
  const problems = subgraphProblems(current.spec);
  if (problems.length > 0) {
    const message = problems.map((p) => `spec.${p.path}: ${p.message}`).join('; ');
    await reportFailure(current, status, { reason: 'SpecInvalid', message, call: false }, deps);
    return {};
  }
  const message =
    named.length > 0
      ? `the SDL builds; used by ${named.join(', ')}`
      : 'the SDL builds; no API or SuperGraph uses it yet';
  await reportSuccess(
    current,
    status,
    { reason: 'Valid', message, what: `SubGraph ${key}`, where: '' },
    deps,
  );
  return {};
}

/**
 * The SubGraph controller: SubGraphs are reconciled when they change, and when an ApiDefinition
 * or SuperGraph starts or stops naming them (or is deleted).
 */
export function subGraphController(env: ControllerEnv): ControllerSpec {
  const graphs = graphInformers(env);
  const { specs, subGraphs } = graphs;
  const objects = new SvcObjects<SubGraphObject>(env.kc, specs.subGraph.plural);
  const superRefs = (o: k8s.KubernetesObject | undefined): string[] =>
    o === undefined
      ? []
      : subgraphRefsOf((o as Partial<SuperGraphObject>).spec, o.metadata?.namespace ?? '').flatMap((r) =>
          r.ref === undefined ? [] : [refKey(r.ref)],
        );

  return {
    name: 'subgraph',
    watch: specs.subGraph,
    workers: 8,
    reconcile: (key) =>
      reconcileSubGraph(key, {
        read: (namespace, name) => Promise.resolve(subGraphs.get(namespace, name)),
        objects,
        events: env.events,
        apis: (ref) => graphs.apisServing('SubGraph', ref),
        supergraphs: (ref) => graphs.listing(ref),
        now: env.now,
        log: env.log,
      }),
    watches: [
      apiGraphWatch(graphs, 'SubGraph'),
      {
        watch: specs.superGraph,
        map: (sg: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          viewChanged(event, sg, old, (s) => ({ r: superRefs(s), d: going(s) }))
            ? [...new Set([...superRefs(sg), ...superRefs(old)])]
            : [],
      },
    ],
  };
}
