import { KUBERNETES_EXTENSIONS, type JsonSchema, type KindDefinition } from '../json-schema.ts';
import { CATEGORY, GROUP, VERSION } from '../common.ts';

/**
 * Keywords the API server's structural schemas accept, copied as they are (with `properties`,
 * `items` and `additionalProperties`, which `structural` turns structural in turn).
 */
export const STRUCTURAL_KEYWORDS = [
  'description',
  'type',
  'required',
  'enum',
  'default',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  ...KUBERNETES_EXTENSIONS,
] as const;

/**
 * Turns one of our JSON Schemas into a structural schema the API server accepts.
 *
 * What a CRD schema cannot say is left to the admission webhook, which validates against the
 * full schema: titles and examples go, `const` becomes a one-value enum, and a closed object
 * (`additionalProperties: false`) relies on the API server's pruning and strict field validation.
 * A node that may take several forms (`anyOf`, such as a `"namespace/name"` string or a
 * `{name, namespace}` object) is kept open (`x-kubernetes-preserve-unknown-fields`, no type): the
 * webhook checks its forms.
 */
export function structural(schema: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (schema.anyOf) {
    return { description: schema.description, 'x-kubernetes-preserve-unknown-fields': true };
  }
  for (const key of STRUCTURAL_KEYWORDS) {
    if (schema[key] !== undefined) out[key] = schema[key];
  }
  if (schema.const !== undefined) out.enum = [schema.const];
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, sub]) => [name, structural(sub)]),
    );
  } else if (typeof schema.additionalProperties === 'object') {
    out.additionalProperties = structural(schema.additionalProperties);
  }
  if (schema.items) out.items = structural(schema.items);
  return out;
}

/** The CustomResourceDefinition of a kind. */
export function crdFor(def: KindDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      labels: {
        'app.kubernetes.io/part-of': 'svc',
        'app.kubernetes.io/managed-by': 'svc-schemas',
        ...def.crdLabels,
      },
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        // Not `svc` alone: a category named like the Services short name takes `kubectl get svc`
        // over (it listed these kinds instead of Services once the CRDs were installed).
        categories: [`${CATEGORY}-all`],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              description: def.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: {
                  type: 'string',
                  description: `APIVersion defines the versioned schema of this representation of an object: ${GROUP}/${VERSION}.`,
                },
                kind: {
                  type: 'string',
                  description: `Kind is a string value representing the REST resource this object represents: ${def.kind}.`,
                },
                metadata: { type: 'object' },
                spec: structural(def.spec),
                status: structural(def.status),
              },
            },
          },
        },
      ],
    },
  };
}
