import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  apiResourceRef,
  conditions,
  namespacedRef,
  observedGeneration,
  readyColumn,
  resourceRef,
} from '../common.ts';
import { closedObject } from '../models/builders.ts';

const subgraphRefs = (description: string): JsonSchema => ({
  type: 'array',
  // Bounds the cost of validating the list, as the API server requires of CEL-checked lists.
  maxItems: 100,
  items: resourceRef('A SubGraph'),
  description,
});

/** SuperGraph: SubGraphs composed into one GraphQL schema, served by a supergraph API. */
export const superGraphKind: KindDefinition = {
  kind: 'SuperGraph',
  plural: 'supergraphs',
  singular: 'supergraph',
  shortNames: ['svcsupergraph'],
  description:
    'A GraphQL federation supergraph: SubGraphs composed into one schema. The operator composes them (again whenever one changes) and writes the schema, or why they do not compose, to the status; an ApiDefinition with `graphql.execution_mode: supergraph` and `graphql.graph_ref: <name>` serves it, planning each query across the subgraph APIs.',
  spec: closedObject(
    { title: 'SuperGraphSpec', description: 'The SubGraphs to compose.' },
    {
      subgraph_refs: subgraphRefs(
        'The SubGraphs composed, each as "name" (in the namespace of the SuperGraph), "namespace/name", or {name, namespace}.',
      ),
      subgraphs_refs: subgraphRefs(
        "The reference's earlier spelling of subgraph_refs, read the same way (set one of the two).",
      ),
      schema: {
        type: 'string',
        description:
          'The merged schema to serve instead of the composition (the reference writes it by hand); the subgraphs must still resolve each of its root fields.',
      },
      merged_sdl: {
        type: 'string',
        description:
          "The reference's other name for schema: served instead of the composition when schema is empty.",
      },
    },
  ),
  status: closedObject(
    { title: 'SuperGraphStatus', description: 'The composition, written by the operator.' },
    {
      schema: {
        type: 'string',
        description:
          'The schema served: the last composition that succeeded (kept while a later one fails: conditions and composition_errors say why).',
      },
      subgraphs: {
        type: 'array',
        description:
          'The SubGraphs of that composition, with the SDL each had: what the supergraph APIs plan with.',
        items: closedObject(
          {
            title: 'ComposedSubGraph',
            description: 'A SubGraph as it was composed.',
            required: ['name', 'namespace', 'sdl'],
          },
          {
            name: { type: 'string', description: 'Name of the SubGraph.' },
            namespace: { type: 'string', description: 'Namespace of the SubGraph.' },
            sdl: { type: 'string', description: 'Its SDL when composed.' },
          },
        ),
      },
      composedGeneration: {
        type: 'integer',
        minimum: 0,
        description: 'The metadata.generation of the SuperGraph the schema was composed for.',
      },
      composition_errors: {
        type: 'array',
        description: 'Why the latest composition failed, one entry per problem (empty when it succeeded).',
        items: closedObject(
          {
            title: 'CompositionError',
            description: 'One reason the SubGraphs do not compose.',
            required: ['message'],
          },
          {
            subgraph: { type: 'string', description: 'The SubGraph the problem is in, when it is in one.' },
            field: {
              type: 'string',
              description: 'The field (`Type.field`) the problem is about, when it is about one.',
            },
            message: { type: 'string', description: 'What is wrong and how to fix it.' },
          },
        ),
      },
      linked_apis: {
        type: 'array',
        items: apiResourceRef,
        description: 'ApiDefinitions whose graphql.graph_ref names this SuperGraph.',
      },
      linked_subgraphs: {
        type: 'array',
        items: namespacedRef('a SubGraph'),
        description: 'The SubGraphs listed.',
      },
      observedGeneration,
      conditions,
    },
  ),
  printerColumns: [
    {
      name: 'SubGraphs',
      type: 'string',
      jsonPath: '.status.linked_subgraphs[*].name',
      description: 'The SubGraphs composed.',
    },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: 'Composed, or why not.',
    },
    readyColumn,
    ageColumn,
  ],
};
