/** Admission rules of SubGraph, after its full schema: its SDL builds, with valid federation directives. */
import type { SubGraph } from '../schemas/generated/kinds.ts';
import { plannerRemarks, subgraphProblems, subgraphSdlOf } from '../schemas/rules/graphs.ts';
import { specOf } from './access.ts';
import { mergeErrors } from './field-error.ts';
import type { Validator } from './field-error.ts';
import { apisServingGraph, supergraphsListing } from './graphs.ts';
import { refuseDeleteWhileUsed } from './references.ts';
import { schemaErrors } from './schema.ts';

/** Validates a SubGraph on create or update. */
export const validateSubGraph: Validator = (obj) => {
  const spec = specOf<SubGraph>(obj);
  const errors = subgraphProblems(spec).map((p) => ({ ...p, path: `spec.${p.path}` }));
  const { sdl, field } = subgraphSdlOf(spec);
  const warnings =
    errors.length > 0
      ? []
      : plannerRemarks(sdl).map(
          (m) => `spec.${field}: ${m}: a SuperGraph that composes this SubGraph says so`,
        );
  return Promise.resolve({ errors: mergeErrors(schemaErrors('SubGraph', obj), errors), warnings });
};

/** Refuses the DELETE of a SubGraph that SuperGraphs list or ApiDefinitions serve. */
export const validateSubGraphDelete = refuseDeleteWhileUsed(
  'SubGraph',
  async (lookups, namespace, name) => [
    ...(await supergraphsListing(lookups, namespace, name)),
    ...(await apisServingGraph(lookups, 'SubGraph', namespace, name)),
  ],
  'remove it from the subgraph_refs of these SuperGraphs and the graph_ref of these APIs (or delete them) first',
);
