import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import type { PrinterColumn } from '../json-schema.ts';
import { apiPrinterColumns, apiStatus, contextRef, k8sName, k8sNamespace } from '../common.ts';

/** A key of a ConfigMap that holds an OAS document. */
export const configMapKeyRef = (what: string): JsonSchema => ({
  title: 'ConfigMapKeyRef',
  description: `ConfigMap key that holds ${what}.`,
  type: 'object',
  additionalProperties: false,
  required: ['name', 'keyName'],
  properties: {
    name: { ...k8sName, description: 'Name of the ConfigMap.' },
    namespace: {
      ...k8sNamespace,
      description: 'Namespace of the ConfigMap. Defaults to the namespace of the API resource.',
    },
    keyName: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[-._a-zA-Z0-9]+$',
      description: "Key in the ConfigMap's `data` whose value is the document (JSON or YAML).",
    },
  },
});

/**
 * The status of an OAS API (and of a streams API, an OAS document too): the API kinds' status, plus
 * what the document says and its ConfigMap's hash.
 */
export function oasApiStatus(): JsonSchema {
  return {
    ...apiStatus,
    title: 'OasApiStatus',
    properties: {
      ...apiStatus.properties,
      target_url: {
        type: 'string',
        description: 'Upstream URL of the API (`x-svc-api-gateway.upstream.url`).',
      },
      enabled: {
        type: 'boolean',
        description: 'Whether the gateway serves the API (`x-svc-api-gateway.info.state.active`).',
      },
      latestConfigMapHash: {
        type: 'string',
        description: 'Hash of the ConfigMap key the document pushed last came from.',
      },
    },
  };
}

/** The API kinds' columns, with the upstream and whether the API is enabled after the listen path. */
export function oasPrinterColumns(): readonly PrinterColumn[] {
  const shared = apiPrinterColumns('.status.listen_path');
  return [
    ...shared.slice(0, 2),
    {
      name: 'Target URL',
      type: 'string',
      jsonPath: '.status.target_url',
      description: 'Upstream URL of the API.',
    },
    {
      name: 'Enabled',
      type: 'boolean',
      jsonPath: '.status.enabled',
      description: 'Whether the gateway serves the API.',
    },
    ...shared.slice(2),
  ];
}

/** SvcOasApiDefinition: an API described by an OAS document kept in a ConfigMap. */
export const oasApiDefinitionKind: KindDefinition = {
  kind: 'SvcOasApiDefinition',
  plural: 'svcoasapidefinitions',
  singular: 'svcoasapidefinition',
  shortNames: ['svcoas'],
  description:
    'An API described by an OpenAPI 3.x document with the `x-svc-api-gateway` extension, kept in a ConfigMap. Recommended for standard HTTP APIs. A change to the ConfigMap is reconciled.',
  spec: {
    title: 'SvcOasApiDefinitionSpec',
    description: 'Desired state of the API.',
    type: 'object',
    additionalProperties: false,
    required: ['svcOAS'],
    properties: {
      contextRef,
      svcOAS: {
        title: 'SvcOasRef',
        description: 'Where the OAS document is.',
        type: 'object',
        additionalProperties: false,
        required: ['configmapRef'],
        properties: {
          configmapRef: configMapKeyRef('the OAS document (at most 1 MiB)'),
        },
      },
    },
  },
  status: oasApiStatus(),
  printerColumns: oasPrinterColumns(),
};
