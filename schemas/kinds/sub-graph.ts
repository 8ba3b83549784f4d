import type { KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  apiResourceRef,
  conditions,
  namespacedRef,
  observedGeneration,
  readyColumn,
} from '../common.ts';
import { closedObject } from '../models/builders.ts';

/** SubGraph: a GraphQL federation subgraph's SDL, served by a subgraph API and composed by SuperGraphs. */
export const subGraphKind: KindDefinition = {
  kind: 'SubGraph',
  plural: 'subgraphs',
  singular: 'subgraph',
  shortNames: ['svcsubgraph'],
  description:
    'A GraphQL federation subgraph: its SDL with the federation directives. An ApiDefinition with `graphql.execution_mode: subgraph` and `graphql.graph_ref: <name>` serves it; SuperGraphs compose it.',
  spec: closedObject(
    {
      title: 'SubGraphSpec',
      description: "The subgraph's schema.",
      'x-kubernetes-validations': [
        {
          rule: "(has(self.sdl) && self.sdl != '') || (has(self.schema) && self.schema != '')",
          message: 'set the subgraph SDL in sdl (or schema)',
          fieldPath: '.sdl',
          reason: 'FieldValueRequired',
        },
      ],
    },
    {
      sdl: {
        type: 'string',
        description:
          'The subgraph SDL, with the federation directives (`@key`, `@external`, `@requires`, `@provides`, `@extends`, `@shareable`): what its subgraph API serves (with `_service` and `_entities`) and SuperGraphs compose.',
      },
      schema: {
        type: 'string',
        description:
          "The subgraph's schema as its server prints it (the reference's field beside `sdl`). Used as the SDL when `sdl` is empty; otherwise it must parse and is not served.",
      },
    },
  ),
  status: closedObject(
    { title: 'SubGraphStatus', description: 'Where the subgraph is used, written by the operator.' },
    {
      linked_apis: {
        type: 'array',
        items: apiResourceRef,
        description: 'ApiDefinitions whose graphql.graph_ref names this SubGraph (its subgraph APIs).',
      },
      linked_supergraphs: {
        type: 'array',
        items: namespacedRef('a SuperGraph'),
        description:
          'SuperGraphs whose subgraph_refs list this SubGraph: it cannot be deleted while they do.',
      },
      observedGeneration,
      conditions,
    },
  ),
  printerColumns: [
    {
      name: 'APIs',
      type: 'string',
      jsonPath: '.status.linked_apis[*].name',
      description: 'The subgraph APIs that serve it.',
    },
    {
      name: 'SuperGraphs',
      type: 'string',
      jsonPath: '.status.linked_supergraphs[*].name',
      description: 'The SuperGraphs that compose it.',
    },
    readyColumn,
    ageColumn,
  ],
};
