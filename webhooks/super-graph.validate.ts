/** Admission rules of SuperGraph, after its full schema: the SubGraphs it lists, each once. */
import type { SuperGraph } from '../schemas/generated/kinds.ts';
import { subgraphRefsOf, supergraphProblems } from '../schemas/rules/graphs.ts';
import { metaOf, specOf } from './access.ts';
import { mergeErrors } from './field-error.ts';
import type { Validator } from './field-error.ts';
import { apisServingGraph } from './graphs.ts';
import { refuseDeleteWhileUsed } from './references.ts';
import { schemaErrors } from './schema.ts';

/** Validates a SuperGraph on create or update; SubGraphs that don't exist yet are warnings (the operator waits). */
export const validateSuperGraph: Validator = async (obj, _old, lookups) => {
  const spec = specOf<SuperGraph>(obj);
  const { namespace } = metaOf(obj);
  const errors = supergraphProblems(spec, namespace).map((p) => ({ ...p, path: `spec.${p.path}` }));
  const warnings: string[] = [];
  for (const { path, ref } of subgraphRefsOf(spec, namespace)) {
    if (ref === undefined) continue;
    if ((await lookups.get('SubGraph', ref.namespace, ref.name)) === undefined)
      warnings.push(
        `spec.${path}: SubGraph ${ref.namespace}/${ref.name} does not exist yet: the SuperGraph is composed once it does`,
      );
  }
  return { errors: mergeErrors(schemaErrors('SuperGraph', obj), errors), warnings };
};

/** Refuses the DELETE of a SuperGraph that ApiDefinitions serve. */
export const validateSuperGraphDelete = refuseDeleteWhileUsed(
  'SuperGraph',
  (lookups, namespace, name) => apisServingGraph(lookups, 'SuperGraph', namespace, name),
  'remove it from the graph_ref of these APIs (or delete them) first',
);
