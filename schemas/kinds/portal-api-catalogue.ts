import type { KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  contextRef,
  k8sName,
  k8sNamespace,
  namespacedRef,
  pushedTo,
  readyColumn,
  reconcileStatusProperties,
} from '../common.ts';
import { strings, closedObject } from '../models/builders.ts';

/** PortalAPICatalogue: the developer portal's catalogue, the APIDescriptions it publishes. */
export const portalApiCatalogueKind: KindDefinition = {
  kind: 'PortalAPICatalogue',
  plural: 'portalapicatalogues',
  singular: 'portalapicatalogue',
  shortNames: ['svccatalogue'],
  description:
    "A catalogue of the dashboard's developer portal (mode pro): developers see the products (APIDescriptions) of every catalogue of their organisation that are shown. In mode ce there is no portal: Ready=False, NotSupportedInModeCe.",
  spec: closedObject(
    { title: 'PortalAPICatalogueSpec', description: 'What the catalogue publishes.' },
    {
      email: {
        type: 'string',
        maxLength: 254,
        description: "The catalogue owner's address, told of key requests (the reference's field).",
        'x-svc-support': 'not-supported',
        'x-svc-reason': 'the dashboard sends no mail yet',
      },
      apis: {
        type: 'array',
        maxItems: 1000,
        description: 'The APIDescriptions published, in order.',
        items: closedObject(
          {
            title: 'PortalCatalogueEntry',
            description:
              "An APIDescription by apiDescriptionRef; the reference's earlier form, name and namespace of the APIDescription, is read the same way.",
            'x-kubernetes-validations': [
              {
                rule: 'has(self.apiDescriptionRef) != has(self.name)',
                message:
                  'name an APIDescription in apiDescriptionRef (or, the earlier form, in name), not both',
                fieldPath: '.apiDescriptionRef',
                reason: 'FieldValueInvalid',
              },
              {
                rule: '!has(self.__namespace__) || has(self.name)',
                message: 'namespace goes with name (or inside apiDescriptionRef)',
                fieldPath: '.namespace',
                reason: 'FieldValueForbidden',
              },
            ],
          },
          {
            apiDescriptionRef: namespacedRef('an APIDescription'),
            name: {
              ...k8sName,
              description:
                "The APIDescription's name (the reference's earlier form; prefer apiDescriptionRef).",
            },
            namespace: {
              ...k8sNamespace,
              description:
                "The APIDescription's namespace with name (the reference's earlier form). Defaults to the catalogue's.",
            },
          },
        ),
      },
      contextRef,
    },
  ),
  status: closedObject(
    {
      title: 'PortalAPICatalogueStatus',
      description: 'Observed state of the catalogue, written by the operator.',
    },
    {
      id: { type: 'string', description: "The catalogue's ID in the dashboard's portal." },
      apis: strings('The portal IDs of the products published, in the order of spec.apis.'),
      pushedTo,
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    {
      name: 'APIs',
      type: 'string',
      jsonPath: '.spec.apis[*].apiDescriptionRef.name',
      description: 'The APIDescriptions published.',
    },
    readyColumn,
    ageColumn,
  ],
};
